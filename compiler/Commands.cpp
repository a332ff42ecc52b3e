//===- compiler/Commands.cpp - every `planc` command as a library call ----===//

#include "compiler/Commands.h"
#include "compiler/AutoPlan.h"
#include "compiler/Calibrate.h"
#include "compiler/DataFileCheck.h"
#include "compiler/MemoryCheck.h"
#include "compiler/PlanChoice.h"
#include "compiler/PlanDiagnostics.h"
#include "compiler/Report.h"
#include "compiler/StepTime.h"

#include "frontend/Verify.h"
#include "ir/PlanError.h"
#include "runtime/CheckpointConvert.h"
#include "support/Plural.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace planc;

const char *planc::spelling(Command command) {
  switch (command) {
  case Command::Check: return "check";
  case Command::Emit: return "emit";
  case Command::Build: return "build";
  case Command::Run: return "run";
  case Command::Verify: return "verify";
  case Command::Convert: return "convert";
  case Command::Auto: return "auto";
  case Command::Report: return "report";
  case Command::Calibrate: return "calibrate";
  }
  return "";
}

std::optional<Command> planc::parseCommand(llvm::StringRef text) {
  for (Command c : {Command::Check, Command::Emit, Command::Build, Command::Run, Command::Verify, Command::Convert,
                    Command::Auto, Command::Report, Command::Calibrate})
    if (text == spelling(c)) return c;
  return std::nullopt;
}

/// A failure after the plan check: the plan author's errors (a pass that
/// cannot apply to the plan) as diagnostics at their .plan place, anything
/// else as a message.
std::string planc::parseTargetOption(Command command, llvm::StringRef text, backend::TargetKind &kind) {
  std::optional<backend::TargetKind> parsed = backend::parseTargetKind(text);
  if (parsed)
    if (std::string why = backend::targetOf(*parsed).unavailable(); !why.empty())
      return "--target=" + text.str() + ": " + why;
  if (command == Command::Build) {
    if (!parsed || !targetBuilds(*parsed)) return "--target=" + text.str() + " is not available; planc builds for cpu";
  } else if (!parsed) {
    return "--target=" + text.str() + " is not available; the targets are interp and cpu";
  }
  kind = *parsed;
  return "";
}

bool planc::targetBuilds(backend::TargetKind kind) { return backend::targetOf(kind).emitsCode(); }

int planc::failAfterCheck(Compilation &c, llvm::Error e) {
  if (llvm::Error rest = reportPlanErrors(c, std::move(e)))
    llvm::errs() << "planc: error: " << llvm::toString(std::move(rest)) << "\n";
  return 1;
}

namespace {

/// Diagnostics go to stderr, or with `check --verify` to a collector (the
/// consumer returned) that is compared with the file's expectations.
CollectingConsumer *setUpDiagnostics(const CommandOptions &o, Compilation &c) {
  // SourceMgr colours through llvm::WithColor, which colours a file or pipe
  // only when LLVM's own `-color` option is set: --color=always sets it.
  if (o.color == ColorMode::Always) {
    auto &registered = llvm::cl::getRegisteredOptions();
    auto it = registered.find("color");
    if (it != registered.end()) it->second->addOccurrence(0, "color", "true");
  }
  bool colors = o.color == ColorMode::Always || (o.color == ColorMode::Auto && llvm::errs().has_colors());
  if (!o.verify) {
    c.setDiagnosticOutput(llvm::errs(), o.json, colors);
    return nullptr;
  }
  auto consumer = std::make_unique<CollectingConsumer>();
  CollectingConsumer *collected = consumer.get();
  c.setDiagnosticConsumer(std::move(consumer));
  return collected;
}

/// --calibration FILE into `calibration` (untouched without the option);
/// false after reporting a file that cannot be read.
bool readCalibrationOption(const CommandOptions &o, std::optional<cost::Calibration> &calibration) {
  if (o.calibration.empty()) return true;
  auto read = readCalibration(o.calibration);
  if (!read) {
    llvm::errs() << "planc: error: " << llvm::toString(read.takeError()) << "\n";
    return false;
  }
  calibration = std::move(*read);
  return true;
}

/// Writes `text` to `path` whole: a temporary file beside it, then a rename,
/// so that a reader never sees half a file. False after reporting why not.
bool writeFileAtomically(const std::string &path, llvm::StringRef text) {
  std::string tmp = path + ".planc-tmp";
  std::error_code ec;
  {
    llvm::raw_fd_ostream out(tmp, ec);
    if (!ec) {
      out << text;
      out.close();
      if (out.has_error()) ec = out.error();
    }
  }
  if (!ec) ec = llvm::sys::fs::rename(tmp, path);
  if (ec) {
    llvm::sys::fs::remove(tmp);
    llvm::errs() << "planc: error: cannot write '" << path << "': " << ec.message() << "\n";
    return false;
  }
  return true;
}

/// The start of the commands that analyse a model (auto, report): the plan
/// checked, a model in it (else an error saying what `what` needs), and the
/// --calibration file read. False after reporting.
bool loadModelPlan(const CommandOptions &o, Compilation &c, const char *what,
                   std::optional<cost::Calibration> &calibration) {
  if (!c.loadFile(o.file) || !c.check()) return false;
  c.getDiagnostics().finish();
  if (!c.getProgram().model) {
    llvm::errs() << "planc: error: '" << o.file << "' has no model to " << what << "\n";
    return false;
  }
  return readCalibrationOption(o, calibration);
}

} // namespace

/// planc verify: the partitioned step against the single-device step.
int planc::runVerify(CommandOptions &o, Compilation &c) {
  if (!c.loadFile(o.file) || !c.check()) return 1;
  c.getDiagnostics().finish();
  o.verifyPlan.passes = o.passes;
  auto report = verifyPlan(c, o.verifyPlan);
  if (!report) return failAfterCheck(c, report.takeError());
  printPlanVerifyReport(*report, llvm::outs());
  return report->passed() ? 0 : 1;
}

/// planc build: the plan as a native executable.
int planc::runBuild(const CommandOptions &o, Compilation &c) {
  if (!c.loadFile(o.file) || !c.check()) return 1;
  warnMissingDataFile(c);
  c.getDiagnostics().finish();
  if (llvm::Error e = buildExecutable(c, o.build, llvm::errs())) return failAfterCheck(c, std::move(e));
  return 0;
}

/// planc run: training on --target (compiler/Run.h).
int planc::runRun(const CommandOptions &o, Compilation &c) {
  if (!c.loadFile(o.file) || !c.check()) return 1;
  c.getDiagnostics().finish();
  RunOptions run = o.run;
  run.toolchain = o.build;
  auto status = runPlan(c, run, llvm::outs(), llvm::errs());
  if (!status) {
    llvm::outs().flush();
    return failAfterCheck(c, status.takeError());
  }
  return *status == 0 ? 0 : 1;
}

/// planc check: the plan's checks, its summary and its memory ledger.
int planc::runCheck(const CommandOptions &o, Compilation &c, CollectingConsumer *collected) {
  bool ok = c.loadFile(o.file);
  if (ok) ok = c.check();
  if (ok) warnMissingDataFile(c);
  // The memory ledger needs a checked model; its diagnostics join the plan's.
  // A plan the partitioner cannot cut (pp > 1 without repeated layers) has
  // no ledger: the summary says why, and the plan's checks stand.
  std::optional<MemoryCheckResult> memory;
  std::string notPlanned;
  bool internalError = false;
  std::optional<cost::Calibration> calibration;
  if (!readCalibrationOption(o, calibration)) return 1;
  if (ok && c.getProgram().model && !o.noMemory) {
    MemoryCheckOptions mo;
    mo.calibration = calibration ? &*calibration : nullptr;
    mo.budgetBytes = o.budget;
    mo.progress = &llvm::errs();
    mo.progressAlways = llvm::errs().is_displayed();
    mo.verifyEach = o.passes.verifyEach;
    auto checked = checkMemory(c, mo);
    if (checked) memory = std::move(*checked);
    ok = !c.getDiagnostics().hasErrors();
    // A finding about the plan leaves it without a ledger; anything else is a
    // compiler bug, and a check that met one has not passed.
    if (!checked)
      llvm::handleAllErrors(
          checked.takeError(), [&](const ir::PlanError &p) { notPlanned = p.message(); },
          [&](const llvm::ErrorInfoBase &e) {
            notPlanned = e.message();
            llvm::errs() << "planc: error: " << notPlanned << "\n";
            ok = false;
            internalError = true;
          });
  }
  c.getDiagnostics().finish();
  if (o.verify) return verifyDiagnostics(collected->diagnostics, c.getSourceMgr(), llvm::errs()) ? 0 : 1;
  if (!ok && !memory && !internalError) return 1;
  if (o.memoryJson) {
    if (memory) printMemoryCheckJson(*memory, llvm::outs());
    else printMemoryNotPlannedJson(notPlanned.empty() ? "the plan has no model" : notPlanned, llvm::outs());
  } else if (!o.quiet) {
    printSummary(c, llvm::outs());
    if (memory) {
      printMemoryCheck(*memory, llvm::outs());
      printStepTime(memory->analysis.time, memory->analysis.hardware, llvm::outs());
    } else if (!notPlanned.empty()) llvm::outs() << "memory: not planned: " << notPlanned << "\n";
  }
  return ok ? 0 : 1;
}

/// planc auto: the search of the cluster's plans (compiler/AutoPlan.h).
int planc::runAuto(const CommandOptions &o, Compilation &c) {
  std::optional<cost::Calibration> calibration;
  if (!loadModelPlan(o, c, "search plans for", calibration)) return 1;
  AutoOptions ao;
  ao.budgetBytes = o.budget;
  ao.calibration = calibration ? &*calibration : nullptr;
  ao.top = o.autoTop;
  ao.progress = &llvm::errs();
  auto result = searchPlans(c, ao);
  if (!result) {
    llvm::errs() << "planc: error: " << llvm::toString(result.takeError()) << "\n";
    return 1;
  }
  printAutoResult(*result, o.autoTop, llvm::errs());
  const AutoCandidate *best = result->best();
  if (!best) {
    if (result->estimates.empty())
      llvm::errs() << "planc: error: no candidate plan of the " << counted(c.getConfig().cluster.worldSize(), "device")
                   << " could be profiled (the reasons are above)\n";
    else
      llvm::errs() << "planc: error: no plan of the " << counted(c.getConfig().cluster.worldSize(), "device")
                   << " fits the budget (the closest are above)\n";
    return 1;
  }
  std::string block = best->plan.parallelBlock(c.getConfig().train.microBatch, c.getConfig().train.fusion);
  if (!o.autoApply) {
    llvm::outs() << block;
    return 0;
  }
  if (!writeFileAtomically(o.file, applyPlanChoice(c, best->plan))) return 1;
  llvm::errs() << "planc auto: wrote the best plan into " << o.file << "\n";
  return 0;
}

/// planc report: the HTML page (compiler/Report.h).
int planc::runReport(const CommandOptions &o, Compilation &c) {
  std::optional<cost::Calibration> calibration;
  if (!loadModelPlan(o, c, "report on", calibration)) return 1;
  ReportOptions ro;
  ro.budgetBytes = o.budget;
  ro.calibration = calibration ? &*calibration : nullptr;
  ro.search = o.reportSearch;
  ro.progress = &llvm::errs();
  std::string html;
  llvm::raw_string_ostream os(html);
  if (llvm::Error e = writeReport(c, ro, os)) return failAfterCheck(c, std::move(e));
  os.flush();
  if (!writeFileAtomically(o.build.output, html)) return 1;
  llvm::errs() << "planc report: wrote " << o.build.output << "\n";
  return 0;
}

/// planc calibrate: this machine's calibration file (compiler/Calibrate.h).
int planc::runCalibrate(const CommandOptions &o) {
  CalibrateOptions co;
  co.build = o.build;
  co.ranks = std::max<int64_t>(o.run.ranks, 1);
  auto cal = calibrateThisMachine(co, llvm::errs());
  if (!cal) {
    llvm::errs() << "planc: error: " << llvm::toString(cal.takeError()) << "\n";
    return 1;
  }
  if (llvm::Error e = writeCalibration(*cal, "cpu", o.build.output)) {
    llvm::errs() << "planc: error: " << llvm::toString(std::move(e)) << "\n";
    return 1;
  }
  auto peak = cal->peakFlops.find("f32");
  llvm::errs() << "planc calibrate: f32 GEMM peak "
               << llvm::format("%.1f", peak == cal->peakFlops.end() ? 0.0 : peak->second / 1e9) << " GFLOP/s, memory "
               << llvm::format("%.1f", cal->memoryBandwidth / 1e9) << " GB/s";
  if (cal->intraNode)
    llvm::errs() << ", all-reduce bus bandwidth " << llvm::format("%.2f", cal->intraNode->bandwidth / 1e9)
                 << " GB/s, latency " << llvm::format("%.1f", cal->intraNode->latency * 1e6) << " us";
  llvm::errs() << "; wrote " << o.build.output << "\n";
  return 0;
}

/// planc convert: a checkpoint to one safetensors file, or such a file back
/// into a checkpoint (runtime/CheckpointConvert.h).
int planc::runConvert(const CommandOptions &o) {
  std::string summary;
  const bool toFile = llvm::sys::fs::is_directory(o.file);
  if (!o.convertTo.empty() && !toFile) {
    llvm::errs() << "planc: error: --to writes a checkpoint folder under other names; '" << o.file
                 << "' is not a folder\n";
    return 2;
  }
  runtime::Status s = !o.convertTo.empty() ? runtime::exportNamed(o.file, o.convertTo, o.build.output, summary)
                      : toFile             ? runtime::exportCheckpoint(o.file, o.build.output, summary)
                                           : runtime::importCheckpoint(o.file, o.build.output, summary);
  if (!s.ok()) {
    llvm::errs() << "planc: error: " << s.message() << "\n";
    return 1;
  }
  llvm::outs() << "planc convert: " << summary << "\n";
  return 0;
}

int planc::runCommand(CommandOptions &o) {
  if (o.command == Command::Convert) return runConvert(o);
  if (o.command == Command::Calibrate) return runCalibrate(o);
  // planc auto searches the cluster's meshes: the plan's own need not
  // cover the cluster.
  if (o.command == Command::Auto) o.frontend.meshReplaced = true;
  Compilation c(o.frontend);
  CollectingConsumer *collected = setUpDiagnostics(o, c);
  if (o.command == Command::Emit) return runEmit(o, c);
  if (o.command == Command::Verify) return runVerify(o, c);
  if (o.command == Command::Run) return runRun(o, c);
  if (o.command == Command::Build) return runBuild(o, c);
  if (o.command == Command::Auto) return runAuto(o, c);
  if (o.command == Command::Report) return runReport(o, c);
  return runCheck(o, c, collected);
}
