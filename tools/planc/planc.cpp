//===- tools/planc/planc.cpp - the planc driver ---------------------------===//
//
// Thin: it parses the command line, builds FrontendOptions and calls the
// library. Exit codes: 0 clean, 1 errors in the plan, 2 a usage error.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "compiler/FusionReport.h"
#include "compiler/HuggingFaceConfig.h"
#include "compiler/Pipeline.h"
#include "compiler/Run.h"
#include "compiler/Build.h"
#include "frontend/Verify.h"
#include "compiler/VerifyPlan.h"
#include "compiler/Ledger.h"
#include "compiler/MemoryCheck.h"
#include "compiler/StepTime.h"
#include "compiler/AutoPlan.h"
#include "compiler/Report.h"
#include "compiler/Calibrate.h"
#include "compiler/DataFileCheck.h"
#include "compiler/PlanDiagnostics.h"
#include "compiler/LargeStack.h"
#include "runtime/CheckpointConvert.h"
#include "support/Diagnostics.h"
#include "support/Plural.h"
#include "support/Version.h"
#include "ir/PlanError.h"
#include "ir/MeshLayout.h"
#include "analysis/MeasuredTimeline.h"
#include "ir/Printer.h"
#include "exec/PlanPrinter.h"
#include "backend/c/ProgramKernels.h"
#include "ir/Verifier.h"
#include "analysis/CommSummary.h"
#include "passes/PassManager.h"
#include "analysis/PipelineSchedule.h"

#include "llvm/Support/BuryPointer.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace planc;

namespace {

const char *const kMainHelp =
#include "HelpMain.inc"
    ;

const char *const kConvertHelp =
#include "HelpConvert.inc"
    ;

const char *const kAutoHelp =
#include "HelpAuto.inc"
    ;

const char *const kReportHelp =
#include "HelpReport.inc"
    ;

const char *const kCalibrateHelp =
#include "HelpCalibrate.inc"
    ;

const char *const kCheckHelp =
#include "HelpCheck.inc"
    ;

const char *const kEmitHelp =
#include "HelpEmit.inc"
    ;

const char *const kVerifyHelp =
#include "HelpVerify.inc"
    ;

const char *const kRunHelp =
#include "HelpRun.inc"
    ;

const char *const kBuildHelp =
#include "HelpBuild.inc"
    ;

struct Options {
  std::string command;
  std::string file;
  std::string emit;
  bool verify = false, quiet = false, json = false;
  std::string color = "auto";
  FrontendOptions frontend;
  std::string target = "interp";
  RunOptions run;
  PassManagerOptions passes; // --time-passes, --print-after-all (emit ir-train, verify)
  PlanVerifyOptions verifyPlan;
  int64_t rank = -1; // --rank (emit exec): one rank's program, with its groups and peers
  std::string trace; // --trace (emit schedule-svg): a run's trace to draw beside the plan
  bool memoryJson = false; // --json (emit memory, check)
  std::optional<uint64_t> budget; // --budget (check)
  bool noMemory = false;          // --no-memory (check)
  std::string calibration;        // --calibration (check, auto): a file of `planc calibrate`
  size_t autoTop = 5;             // --top (auto)
  bool autoApply = false;         // --apply (auto)
  bool reportSearch = false;      // --auto (report)
  BuildOptions build;             // build, run --target=cpu
  bool optLevelGiven = false;     // -O<n> on the command line
  std::string convertTo;          // --to (convert): the name map to write a checkpoint under
};

const std::vector<std::string> kCommands = {"check", "emit", "build", "run", "verify",
                                            "convert", "auto", "report", "calibrate"};
const std::vector<std::string> kEmitForms = {
    "tokens", "ast",    "ir",     "ir-train", "ir-partitioned", "exec", "kernels",     "kernels-cuda",
    "cpp",    "comm",   "memory", "fusion",   "names", "mesh",           "schedule", "schedule-svg"};

const char *const kNoCudaYet =
    "--target=cuda: the CUDA backend is not built yet; planc builds and runs on the CPU (--target=cpu), and "
    "`planc emit --emit=kernels-cuda` prints the CUDA kernels the backend will use";

/// "did you mean 'check'?" when `word` is a likely misspelling of one of
/// `known` (closestMatch, the frontend's rule for names), else `otherwise`
/// (the list of what is known).
std::string orDidYouMean(const std::string &word, const std::vector<std::string> &known, const std::string &otherwise) {
  std::string guess = closestMatch(word, known);
  return guess.empty() ? otherwise : "did you mean '" + guess + "'?";
}

int usage(const std::string &message) {
  llvm::errs() << "planc: error: " << message << "\n"
               << "run 'planc --help' for usage\n";
  return 2;
}

/// A decimal integer in [lo, 10^15]: step counts and seeds.
bool parseCount(const std::string &text, int64_t lo, int64_t &out) {
  if (text.empty() || text.size() > 15 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  out = std::stoll(text);
  return out >= lo;
}

/// Returns -1 to go on, or the exit code.
int parseArgs(int argc, char **argv, Options &o) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    llvm::outs() << kMainHelp;
    return 2;
  }
  auto valueOf = [&](size_t &i, const std::string &flag, std::string &out) -> bool {
    const std::string &a = args[i];
    if (a.size() > flag.size() && a.compare(0, flag.size() + 1, flag + "=") == 0) {
      out = a.substr(flag.size() + 1);
      return true;
    }
    if (a == flag) {
      if (i + 1 >= args.size()) return false;
      out = args[++i];
      return true;
    }
    return false;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    std::string v;
    if (a == "--help" || a == "-h") {
      llvm::outs() << (o.command == "check" ? kCheckHelp : o.command == "emit" ? kEmitHelp
                                                             : o.command == "run" ? kRunHelp
                                                             : o.command == "build" ? kBuildHelp
                                                             : o.command == "verify" ? kVerifyHelp
                                                             : o.command == "convert" ? kConvertHelp
                                                             : o.command == "auto" ? kAutoHelp
                                                             : o.command == "report" ? kReportHelp
                                                             : o.command == "calibrate" ? kCalibrateHelp : kMainHelp);
      return 0;
    }
    if (a == "--version") {
      // The revision names the commit built from (cmake/WriteRevision.cmake).
      llvm::outs() << "planc version " << versionNumber() << " (" << sourceRevision() << ")\n";
      return 0;
    }
    if (o.command.empty() && !a.empty() && a[0] != '-') {
      if (!llvm::is_contained(kCommands, a))
        return usage("unknown command '" + a + "'; " +
                     orDidYouMean(a, kCommands,
                                  "the commands are check, emit, build, run, verify, convert, auto, report and calibrate"));
      o.command = a;
      continue;
    }
    if (a == "--set" || a.rfind("--set=", 0) == 0) {
      if (!valueOf(i, "--set", v)) return usage("--set needs a value: --set block.key=value");
      o.frontend.setOverrides.push_back(v);
    } else if (a == "--fusion" || a.rfind("--fusion=", 0) == 0) {
      if (!valueOf(i, "--fusion", v) || (v != "none" && v != "elementwise" && v != "aggressive"))
        return usage("--fusion must be none, elementwise or aggressive");
      // The plan's own setting, overridden as --set train.fusion=... would.
      o.frontend.setOverrides.push_back("train.fusion=" + v);
    } else if (a == "--dim" || a.rfind("--dim=", 0) == 0) {
      if (!valueOf(i, "--dim", v)) return usage("--dim needs a value: --dim name=value");
      o.frontend.dimOverrides.push_back(v);
    } else if (a.rfind("--emit", 0) == 0) {
      if (!valueOf(i, "--emit", v))
        return usage("--emit needs a value: tokens, ast, ir, ir-train, ir-partitioned, exec, kernels, kernels-cuda, "
                     "cpp, comm, memory, fusion, names, mesh, schedule or schedule-svg");
      o.emit = v;
    } else if (a.rfind("--diagnostics-format", 0) == 0) {
      if (!valueOf(i, "--diagnostics-format", v) || (v != "text" && v != "json"))
        return usage("--diagnostics-format must be text or json");
      o.json = v == "json";
    } else if (a.rfind("--color", 0) == 0) {
      if (!valueOf(i, "--color", v) || (v != "auto" && v != "always" && v != "never"))
        return usage("--color must be auto, always or never");
      o.color = v;
    } else if (a.rfind("--error-limit", 0) == 0) {
      if (!valueOf(i, "--error-limit", v) || v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 9)
        return usage("--error-limit needs a non-negative integer");
      o.frontend.errorLimit = unsigned(std::stoul(v));
    } else if (a.rfind("--stdlib", 0) == 0) {
      if (!valueOf(i, "--stdlib", v)) return usage("--stdlib needs a directory");
      o.frontend.stdlibDir = v;
    } else if (a == "--time-passes" && (o.command == "emit" || o.command == "verify")) {
      o.passes.timePasses = true;
    } else if (a == "--print-after-all" && (o.command == "emit" || o.command == "verify")) {
      o.passes.printAfterAll = true;
    } else if (o.command == "verify" && a.rfind("--dtype", 0) == 0) {
      if (!valueOf(i, "--dtype", v) || (v != "f64" && v != "f32")) return usage("--dtype must be f64 or f32");
      o.verifyPlan.floatType = v == "f64" ? ir::DType::F64 : ir::DType::F32;
    } else if (o.command == "verify" && a.rfind("--seed", 0) == 0) {
      int64_t seed;
      if (!valueOf(i, "--seed", v) || !parseCount(v, 0, seed)) return usage("--seed needs a non-negative integer");
      o.verifyPlan.seed = uint64_t(seed);
    } else if (o.command == "verify" && a.rfind("--tolerance", 0) == 0) {
      char *end = nullptr;
      if (!valueOf(i, "--tolerance", v) || v.empty()) return usage("--tolerance needs a positive number");
      double t = std::strtod(v.c_str(), &end);
      if (*end || !(t > 0) || t > 1e300) return usage("--tolerance needs a positive number");
      o.verifyPlan.tolerance = t;
    } else if ((o.command == "emit" || o.command == "check") && a == "--json") {
      o.memoryJson = true;
    } else if (o.command == "auto" && a.rfind("--top", 0) == 0) {
      int64_t n;
      if (!valueOf(i, "--top", v) || !parseCount(v, 1, n) || n > 1000) return usage("--top needs an integer from 1 to 1000");
      o.autoTop = size_t(n);
    } else if (o.command == "auto" && a == "--apply") {
      o.autoApply = true;
    } else if (o.command == "report" && a == "--auto") {
      o.reportSearch = true;
    } else if ((o.command == "check" || o.command == "auto" || o.command == "report") && a.rfind("--budget", 0) == 0) {
      if (!valueOf(i, "--budget", v)) return usage("--budget needs a size such as 70GiB");
      auto bytes = parseBudget(v);
      if (!bytes) return usage(llvm::toString(bytes.takeError()));
      o.budget = *bytes;
    } else if ((o.command == "check" || o.command == "auto" || o.command == "report") &&
               a.rfind("--calibration", 0) == 0) {
      if (!valueOf(i, "--calibration", v) || v.empty()) return usage("--calibration needs a file (planc calibrate -o FILE)");
      o.calibration = v;
    } else if (o.command == "verify" && a == "--testing-swap-sends") {
      o.verifyPlan.swapSends = true;
    } else if (o.command == "verify" && a == "--structure-only") {
      o.verifyPlan.structureOnly = true;
    } else if (o.command == "verify" && a == "--testing-overlap-buffers") {
      o.verifyPlan.overlapBuffers = true;
    } else if (o.command == "verify" && a == "--testing-skip-plan-check") {
      o.verifyPlan.skipPlanCheck = true;
    } else if (o.command == "verify" && a == "--testing-misplace-op") {
      o.verifyPlan.misplaceOp = true;
    } else if (o.command == "verify" && a.rfind("--testing-drop-collective", 0) == 0) {
      int64_t n;
      if (!valueOf(i, "--testing-drop-collective", v) || !parseCount(v, 0, n) || n > 1000000)
        return usage("--testing-drop-collective needs a non-negative integer");
      o.verifyPlan.dropCollective = int(n);
    } else if (o.command == "emit" && a.rfind("--rank", 0) == 0) {
      if (!valueOf(i, "--rank", v) || !parseCount(v, 0, o.rank)) return usage("--rank needs a non-negative integer");
    } else if (o.command == "emit" && (a == "--trace" || a.rfind("--trace=", 0) == 0)) {
      if (!valueOf(i, "--trace", o.trace) || o.trace.empty())
        return usage("--trace needs the trace file of a run (./model --trace FILE)");
    } else if (a == "-Werror") {
      o.frontend.warningsAsErrors = true;
    } else if (a == "-w") {
      o.frontend.suppressWarnings = true;
    } else if (a == "--verify" && o.command == "check") {
      o.verify = true;
    } else if (a == "--quiet" && o.command == "check") {
      o.quiet = true;
    } else if (a == "--no-memory" && o.command == "check") {
      o.noMemory = true;
    } else if (o.command == "run" && a.rfind("--target", 0) == 0) {
      if (!valueOf(i, "--target", v)) return usage("--target needs a value: interp or cpu");
      if (v == "cuda") return usage(kNoCudaYet);
      if (v != "interp" && v != "cpu")
        return usage("--target=" + v + " is not available; the targets are interp and cpu");
      o.target = v;
    } else if (o.command == "build" && a.rfind("--target", 0) == 0) {
      if (!valueOf(i, "--target", v)) return usage("--target needs a value: cpu");
      if (v == "cuda") return usage(kNoCudaYet);
      if (v != "cpu") return usage("--target=" + v + " is not available; planc builds for cpu");
    } else if ((o.command == "build" || o.command == "convert" || o.command == "report" || o.command == "calibrate") &&
               (a == "-o" || a.rfind("-o=", 0) == 0)) {
      if (!valueOf(i, "-o", v) || v.empty()) return usage("-o needs a file name");
      o.build.output = v;
    } else if (o.command == "convert" && (a == "--to" || a.rfind("--to=", 0) == 0)) {
      if (!valueOf(i, "--to", v) || v.empty())
        return usage("--to needs the name map to write: hf-llama, hf-qwen2, hf-gpt2, hf-neox or the plan's own");
      o.convertTo = v;
    } else if (o.command == "build" && a.rfind("--dtype", 0) == 0) {
      if (!valueOf(i, "--dtype", v) || (v != "f64" && v != "f32")) return usage("--dtype must be f64 or f32");
      o.build.floatType = v == "f64" ? ir::DType::F64 : ir::DType::F32;
    } else if ((o.command == "build" || o.command == "run") && a.size() == 3 && a.compare(0, 2, "-O") == 0) {
      if (a[2] < '0' || a[2] > '3') return usage("-O takes a level from 0 to 3 (-O0 ... -O3)");
      o.build.optLevel = a[2] - '0';
      o.optLevelGiven = true;
    } else if (o.command == "build" && a == "--portable") {
      o.build.native = false;
    } else if (o.command == "build" && a == "--keep-source") {
      o.build.keepSource = true;
    } else if (o.command == "run" && a.rfind("--steps", 0) == 0) {
      if (!valueOf(i, "--steps", v) || !parseCount(v, 1, o.run.steps)) return usage("--steps needs a positive integer");
    } else if (o.command == "run" && a.rfind("--seed", 0) == 0) {
      int64_t seed;
      if (!valueOf(i, "--seed", v) || !parseCount(v, 0, seed)) return usage("--seed needs a non-negative integer");
      o.run.seed = uint64_t(seed);
    } else if (o.command == "run" && a.rfind("--dtype", 0) == 0) {
      if (!valueOf(i, "--dtype", v) || (v != "f64" && v != "f32")) return usage("--dtype must be f64 or f32");
      o.run.floatType = v == "f64" ? ir::DType::F64 : ir::DType::F32;
    } else if ((o.command == "run" || o.command == "calibrate") && a.rfind("--ranks", 0) == 0) {
      if (!valueOf(i, "--ranks", v) || !parseCount(v, 1, o.run.ranks)) return usage("--ranks needs a positive integer");
    } else if (o.command == "run" && a.rfind("--dump", 0) == 0) {
      if (!valueOf(i, "--dump", v) || v.empty()) return usage("--dump needs a folder");
      o.run.dumpDir = v;
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      return usage("unknown option '" + a + "'" + (o.command.empty() ? "" : " for '" + o.command + "'"));
    } else {
      if (!o.file.empty()) return usage("more than one input file ('" + o.file + "' and '" + a + "')");
      o.file = a;
    }
  }
  if (o.command.empty())
    return usage("no command; the commands are check, emit, build, run, verify, convert, auto, report and calibrate");
  if (o.command == "report" && o.build.output.empty()) return usage("report needs an output file: -o <report.html>");
  if (o.command == "calibrate") {
    if (!o.file.empty()) return usage("calibrate measures this machine and takes no plan ('" + o.file + "')");
    if (o.build.output.empty()) return usage("calibrate needs an output file: -o <calibration.json>");
    return -1;
  }
  if (o.file.empty()) return usage("no input file");
  if (o.command == "convert" && o.build.output.empty())
    return usage("convert needs an output: -o <file.safetensors> or -o <checkpoint folder>");
  if (o.command == "build" && o.build.output.empty()) return usage("build needs an output file: -o <executable>");
  if (o.command == "run" && o.target == "cpu" && !o.run.dumpDir.empty())
    return usage("--dump goes with --target=interp");
  if (o.command == "run" && o.target != "cpu" && o.optLevelGiven)
    return usage("-O" + std::to_string(o.build.optLevel) + " goes with --target=cpu (the interpreter compiles nothing)");
  if (o.command == "run" && o.target != "cpu" && o.run.ranks > 0)
    return usage("--ranks goes with --target=cpu (the interpreter runs every rank in one process)");
  if (o.command == "emit") {
    const char *forms =
        "tokens, ast, ir, ir-train, ir-partitioned, exec, kernels, kernels-cuda, cpp, comm, memory, fusion, names, "
        "mesh, schedule and schedule-svg";
    if (o.emit.empty()) return usage(std::string("emit needs --emit=<form>; the forms are ") + forms);
    if (!llvm::is_contained(kEmitForms, o.emit))
      return usage("--emit=" + o.emit + " is not available; " +
                   orDidYouMean(o.emit, kEmitForms, std::string("this version emits ") + forms));
    if ((o.passes.timePasses || o.passes.printAfterAll) && o.emit != "ir-train" && o.emit != "exec" &&
        o.emit != "comm" && o.emit != "ir-partitioned")
      return usage("--time-passes and --print-after-all go with --emit=ir-train, ir-partitioned, exec or comm");
    if (o.memoryJson && o.emit != "memory") return usage("--json goes with --emit=memory (or with check)");
    if (!o.trace.empty() && o.emit != "schedule-svg")
      return usage("--trace goes with --emit=schedule-svg (the measured timeline beside the planned one)");
    if (o.emit != "exec" && o.emit != "kernels" && o.emit != "kernels-cuda" && o.rank >= 0)
      return usage("--rank goes with --emit=exec, kernels and kernels-cuda");
  } else if (!o.emit.empty()) {
    return usage("--emit belongs to the emit command");
  }
  if (o.noMemory && (o.memoryJson || o.budget || !o.calibration.empty()))
    return usage("--no-memory skips the memory check and the step time that --json, --budget and --calibration are "
                 "about");
  return -1;
}

/// The pipeline of the checked parallel block; with no pipeline axis, the
/// one-stage schedule.
llvm::Expected<pipeline::PipelineSchedule> scheduleOf(const ParallelConfig &par) {
  return pipeline::buildSchedule(scheduleOfPlan(par));
}

/// A failure after the plan check: the plan author's errors (a pass that
/// cannot apply to the plan) as diagnostics at their .plan place, anything
/// else as a message.
int failAfterCheck(Compilation &c, llvm::Error e) {
  if (llvm::Error rest = reportPlanErrors(c, std::move(e)))
    llvm::errs() << "planc: error: " << llvm::toString(std::move(rest)) << "\n";
  return 1;
}

int emitMeshOrSchedule(const Options &o, const PlanConfig &config) {
  if (o.emit == "mesh") {
    printMeshLayout(MeshLayout(config.parallel.axisSize), llvm::outs());
    return 0;
  }
  auto fail = [](llvm::Error e) {
    llvm::errs() << "planc: error: " << llvm::toString(std::move(e)) << "\n";
    return 1;
  };
  auto schedule = scheduleOf(config.parallel);
  if (!schedule) return fail(schedule.takeError());
  auto sim = pipeline::simulate(*schedule);
  if (!sim) return fail(sim.takeError());
  if (o.emit == "schedule") {
    pipeline::printSchedule(*schedule, *sim, llvm::outs());
    return 0;
  }
  if (o.trace.empty()) {
    pipeline::printScheduleSVG(*schedule, *sim, llvm::outs());
    return 0;
  }
  // The measured timeline: every rank of the mesh, labelled with its stage.
  MeshLayout mesh(config.parallel.axisSize);
  auto measured = pipeline::readMeasuredTimeline(o.trace, mesh.numRanks());
  if (!measured) return fail(measured.takeError());
  for (pipeline::MeasuredRank &r : measured->ranks)
    r.stage = mesh.coordinates(r.rank)[unsigned(MeshAxis::PP)];
  pipeline::printScheduleSVG(*schedule, *sim, llvm::outs(), &*measured);
  return 0;
}

/// --emit=memory: the memory planner's result for every pipeline stage.
int emitMemory(Compilation &c, bool json, bool verifyEach) {
  auto plan = planMemoryOf(c, verifyEach);
  if (!plan) return failAfterCheck(c, plan.takeError());
  if (json) printLedgerJson(*plan, c.getConfig().cluster.device.memoryBytes, llvm::outs());
  else printLedger(*plan, c.getConfig().cluster.device.memoryBytes, llvm::outs());
  return 0;
}

/// --emit=ir-partitioned, comm and exec: views of the partitioned step.
int emitPartitioned(const Options &o, Compilation &c) {
  MeshLayout mesh(c.getConfig().parallel.axisSize);
  const bool kernels = o.emit == "kernels" || o.emit == "kernels-cuda";
  if ((o.emit == "exec" || kernels) && o.rank >= mesh.numRanks()) {
    llvm::errs() << "planc: error: --rank " << o.rank << " is out of range: the mesh has "
                 << counted(mesh.numRanks(), "rank")
                 << (mesh.numRanks() == 1 ? " (0)" : " (0-" + std::to_string(mesh.numRanks() - 1) + ")") << "\n";
    return 1;
  }
  CompileOptions options;
  options.passes = o.passes;
  options.stopAfter = o.emit == "ir-partitioned" ? CompileStage::Partitioned
                      : o.emit == "exec" || kernels ? CompileStage::ExecutionPlanned
                                                 : CompileStage::Scheduled;
  auto step = compile(c, options);
  if (!step) return failAfterCheck(c, step.takeError());
  const ir::Module &part = *step->module;
  if (o.emit == "ir-partitioned") {
    ir::print(part, llvm::outs());
    return 0;
  }
  MeshLayout layout(part.mesh);
  if (o.emit == "comm") {
    // One whole step: every micro-batch, in the order each rank runs it.
    sequence::StageSequencer sequencer(part, *step->schedule);
    printCommSummary(summarizeStepComm(part, layout, sequencer), llvm::outs());
    return 0;
  }
  if (kernels) {
    // One rank's program (rank 0's unless --rank says), as the backends
    // will render it.
    const exec::RankProgram &program = step->plan->programOf(std::max<int64_t>(o.rank, 0));
    backend::RenderOptions render;
    render.foldProducers = step->plan->foldProducers;
    backend::renderProgramKernels(*step->plan, program,
                                  o.emit == "kernels-cuda" ? backend::Flavor::Cuda : backend::Flavor::Cpu, llvm::outs(),
                                  render);
  } else if (o.rank >= 0) {
    exec::printRankProgram(*step->plan, o.rank, llvm::outs());
  } else {
    exec::printPlan(*step->plan, llvm::outs());
  }
  // The process ends next: freeing a large plan's millions of buffers and
  // steps one by one would cost a fifth of the run. Buried, as clang's
  // -disable-free does, the result stays reachable, so LeakSanitizer does
  // not report it.
  llvm::BuryPointer(std::make_unique<CompileResult>(std::move(*step)));
  return 0;
}

/// Diagnostics go to stderr, or with `check --verify` to a collector (the
/// consumer returned) that is compared with the file's expectations.
CollectingConsumer *setUpDiagnostics(const Options &o, Compilation &c) {
  // SourceMgr colours through llvm::WithColor, which colours a file or pipe
  // only when LLVM's own `-color` option is set: --color=always sets it.
  if (o.color == "always") {
    auto &registered = llvm::cl::getRegisteredOptions();
    auto it = registered.find("color");
    if (it != registered.end()) it->second->addOccurrence(0, "color", "true");
  }
  bool colors = o.color == "always" || (o.color == "auto" && llvm::errs().has_colors());
  if (!o.verify) {
    c.setDiagnosticOutput(llvm::errs(), o.json, colors);
    return nullptr;
  }
  auto consumer = std::make_unique<CollectingConsumer>();
  CollectingConsumer *collected = consumer.get();
  c.setDiagnosticConsumer(std::move(consumer));
  return collected;
}

/// planc emit: one intermediate form on stdout.
int runEmit(const Options &o, Compilation &c) {
  if (o.emit == "tokens") {
    unsigned id = c.addFile(o.file, {});
    if (!id) return 1;
    bool ok = dumpTokens(c.getSourceMgr(), id, c.getDiagnostics(), llvm::outs());
    return ok ? 0 : 1;
  }

  bool ok = c.loadFile(o.file);
  if (o.emit == "fusion") {
    if (!ok || !c.check()) return 1;
    if (llvm::Error e = printFusionReport(c, o.passes, llvm::outs())) return failAfterCheck(c, std::move(e));
    return 0;
  }
  if (o.emit == "names") {
    if (!ok || !c.check()) return 1;
    if (llvm::Error e = printNameMap(c, llvm::outs())) return failAfterCheck(c, std::move(e));
    return 0;
  }
  if (o.emit == "ir" || o.emit == "ir-train") {
    if (!ok || !c.check()) return 1;
    CompileOptions options;
    options.stopAfter = o.emit == "ir-train" ? CompileStage::TrainingStep : CompileStage::ForwardIR;
    options.passes = o.passes;
    auto compiled = compile(c, options);
    if (!compiled) return failAfterCheck(c, compiled.takeError());
    std::unique_ptr<ir::Module> m = std::move(compiled->module);
    // The frontend checked the plan, so IR that does not verify is planc's bug.
    if (llvm::Error e = ir::verify(*m)) {
      llvm::errs() << "planc: internal error: the lowered IR does not verify:\n" << llvm::toString(std::move(e)) << "\n";
      return 70;
    }
    ir::print(*m, llvm::outs());
    return 0;
  }
  if (o.emit == "memory") {
    if (!ok || !c.check()) return 1;
    c.getDiagnostics().finish();
    return emitMemory(c, o.memoryJson, o.passes.verifyEach);
  }
  if (o.emit == "comm" || o.emit == "exec" || o.emit == "ir-partitioned" || o.emit == "kernels" ||
      o.emit == "kernels-cuda") {
    if (!ok || !c.check()) return 1;
    c.getDiagnostics().finish();
    return emitPartitioned(o, c);
  }
  if (o.emit == "cpp") {
    if (!ok || !c.check()) return 1;
    c.getDiagnostics().finish();
    auto source = generateCpuSource(c, std::nullopt, o.file);
    if (!source) return failAfterCheck(c, source.takeError());
    llvm::outs() << *source;
    return 0;
  }
  if (o.emit == "mesh" || o.emit == "schedule" || o.emit == "schedule-svg") {
    if (!ok || !c.check()) return 1;
    c.getDiagnostics().finish();
    return emitMeshOrSchedule(o, c.getConfig());
  }
  for (const auto &f : c.getProgram().files) dumpAST(*f, c.getSourceMgr(), llvm::outs());
  return ok ? 0 : 1;
}

/// planc verify: the partitioned step against the single-device step.
int runVerify(Options &o, Compilation &c) {
  if (!c.loadFile(o.file) || !c.check()) return 1;
  c.getDiagnostics().finish();
  o.verifyPlan.passes = o.passes;
  auto report = verifyPlan(c, o.verifyPlan);
  if (!report) return failAfterCheck(c, report.takeError());
  printPlanVerifyReport(*report, llvm::outs());
  return report->passed() ? 0 : 1;
}

/// planc build: the plan as a native executable.
int runBuild(const Options &o, Compilation &c) {
  if (!c.loadFile(o.file) || !c.check()) return 1;
  warnMissingDataFile(c);
  c.getDiagnostics().finish();
  if (llvm::Error e = buildCpuExecutable(c, o.build, llvm::errs())) return failAfterCheck(c, std::move(e));
  return 0;
}

/// planc run --target=cpu: build into a temporary folder, run (a mesh of
/// several ranks under mpirun, one process per rank), remove.
int runOnCpu(const Options &o, Compilation &c) {
  const int64_t ranks = c.getConfig().parallel.meshSize();
  // Said before building: the executable would refuse the other world size.
  if (o.run.ranks > 0 && o.run.ranks != ranks) {
    llvm::errs() << "planc: error: '" << o.file << "' runs on a mesh of " << counted(ranks, "rank")
                 << ", but --ranks says " << o.run.ranks
                 << " (leave --ranks out, or change the plan's mesh)\n";
    return 1;
  }
  std::string mpirun;
  if (ranks > 1) {
    auto found = llvm::sys::findProgramByName("mpirun");
    if (!found) {
      llvm::errs() << "planc: error: running " << ranks << " ranks needs mpirun (Debian: apt-get install openmpi-bin)\n";
      return 1;
    }
    mpirun = *found;
  }
  llvm::SmallString<128> dir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("planc-run", dir)) {
    llvm::errs() << "planc: error: cannot create a temporary folder: " << ec.message() << "\n";
    return 1;
  }
  BuildOptions build = o.build;
  build.floatType = o.run.floatType;
  llvm::SmallString<128> exe(dir);
  llvm::sys::path::append(exe, "model");
  build.output = exe.str().str();
  int code = 1;
  if (llvm::Error e = buildCpuExecutable(c, build, llvm::errs())) {
    code = failAfterCheck(c, std::move(e));
  } else {
    std::vector<std::string> args;
    if (ranks > 1) {
      // One process per rank; more ranks than cores is allowed (slow, but
      // the same numbers).
      args = {mpirun, "--oversubscribe", "-np", std::to_string(ranks)};
      // OpenMPI refuses to run as root unless told; planc run is a local
      // convenience, so it tells it (mpirun itself keeps the rule).
      if (::geteuid() == 0) {
        ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
        ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
      }
    }
    args.push_back(build.output);
    if (o.run.steps > 0) args.insert(args.end(), {"--steps", std::to_string(o.run.steps)});
    if (o.run.seed) args.insert(args.end(), {"--seed", std::to_string(*o.run.seed)});
    std::vector<llvm::StringRef> argv(args.begin(), args.end());
    llvm::outs().flush();
    std::string why;
    int rc = llvm::sys::ExecuteAndWait(args.front(), argv, llvm::None, {}, 0, 0, &why);
    if (rc < 0) llvm::errs() << "planc: error: the executable did not run to its end: " << why << "\n";
    code = rc == 0 ? 0 : 1;
  }
  llvm::sys::fs::remove_directories(dir);
  return code;
}

/// planc run: training on the reference interpreter.
int runRun(const Options &o, Compilation &c) {
  if (!c.loadFile(o.file) || !c.check()) return 1;
  c.getDiagnostics().finish();
  if (o.target == "cpu") return runOnCpu(o, c);
  if (llvm::Error e = runOnInterpreter(c, o.run, llvm::outs())) {
    llvm::outs().flush();
    return failAfterCheck(c, std::move(e));
  }
  return 0;
}

/// --calibration FILE into `calibration` (untouched without the option);
/// false after reporting a file that cannot be read.
bool readCalibrationOption(const Options &o, std::optional<cost::Calibration> &calibration) {
  if (o.calibration.empty()) return true;
  auto read = readCalibration(o.calibration);
  if (!read) {
    llvm::errs() << "planc: error: " << llvm::toString(read.takeError()) << "\n";
    return false;
  }
  calibration = std::move(*read);
  return true;
}

/// planc check: the plan's checks, its summary and its memory ledger.
int runCheck(const Options &o, Compilation &c, CollectingConsumer *collected) {
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
bool loadModelPlan(const Options &o, Compilation &c, const char *what,
                   std::optional<cost::Calibration> &calibration) {
  if (!c.loadFile(o.file) || !c.check()) return false;
  c.getDiagnostics().finish();
  if (!c.getProgram().model) {
    llvm::errs() << "planc: error: '" << o.file << "' has no model to " << what << "\n";
    return false;
  }
  return readCalibrationOption(o, calibration);
}

/// planc auto: the search of the cluster's plans (compiler/AutoPlan.h).
int runAuto(const Options &o, Compilation &c) {
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
int runReport(const Options &o, Compilation &c) {
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
int runCalibrate(const Options &o) {
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
int runConvert(const Options &o) {
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

int run(Options &o) {
  if (o.command == "convert") return runConvert(o);
  if (o.command == "calibrate") return runCalibrate(o);
  // planc auto searches the cluster's meshes: the plan's own need not
  // cover the cluster.
  if (o.command == "auto") o.frontend.meshReplaced = true;
  Compilation c(o.frontend);
  CollectingConsumer *collected = setUpDiagnostics(o, c);
  if (o.command == "emit") return runEmit(o, c);
  if (o.command == "verify") return runVerify(o, c);
  if (o.command == "run") return runRun(o, c);
  if (o.command == "build") return runBuild(o, c);
  if (o.command == "auto") return runAuto(o, c);
  if (o.command == "report") return runReport(o, c);
  return runCheck(o, c, collected);
}

} // namespace

int main(int argc, char **argv) {
#ifdef __GLIBC__
  // A compiler run allocates and frees a lot and then exits: keep freed
  // memory for reuse rather than hand it back to the kernel (and fault it in
  // again), and grow the heap in large steps. A 10 MB plan checks ~8% faster
  // (tests/e2e/scaling.py's largest plans).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
  Options o;
  int early = parseArgs(argc, argv, o);
  if (early >= 0) return early;
  // Pipelines verify their result; after every pass only when asked (tests):
  // verifying a large model after each of a dozen passes costs more than the
  // passes.
  const char *verifyEach = std::getenv("PLANC_VERIFY_EACH");
  o.passes.verifyEach = verifyEach && llvm::StringRef(verifyEach) == "1";
  o.run.verifyEach = o.passes.verifyEach;
  // An installed planc builds with the runtime installed beside it
  // (<prefix>/include/planc, <prefix>/lib); in its build tree, with that tree's.
  std::string self = llvm::sys::fs::getMainExecutable(argv[0], (void *)&usage);
  if (!self.empty()) {
    llvm::SmallString<256> prefix(llvm::sys::path::parent_path(llvm::sys::path::parent_path(self)));
    llvm::SmallString<256> include(prefix), library(prefix);
    llvm::sys::path::append(include, "include", "planc");
    llvm::sys::path::append(library, "lib", "libplanc_runtime.a");
    llvm::SmallString<256> header(include);
    llvm::sys::path::append(header, "runtime", "Executable.h");
    if (llvm::sys::fs::exists(header) && llvm::sys::fs::exists(library)) {
      o.build.runtimeInclude = include.str().str();
      o.build.runtimeLibrary = library.str().str();
    }
  }
  // Hostile but legal nesting recurses deeply (compiler/LargeStack.h).
  int code = 1;
  runOnLargeStack([&] { code = run(o); });
  llvm::outs().flush();
  llvm::errs().flush();
  return code;
}
