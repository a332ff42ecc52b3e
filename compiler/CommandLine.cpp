//===- compiler/CommandLine.cpp - planc's command line into CommandOptions -===//

#include "compiler/CommandLine.h"

#include "compiler/MemoryCheck.h"
#include "support/Diagnostics.h"
#include "support/Version.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

using namespace planc;

namespace {

const std::vector<std::string> kCommandWords = {"check", "emit", "build", "run", "verify",
                                            "convert", "auto", "report", "calibrate"};

bool anyForm(const EmitFormInfo &) { return true; }
bool takesPassOptions(const EmitFormInfo &f) { return f.passOptions; }
bool takesRank(const EmitFormInfo &f) { return f.rankOption; }

/// "did you mean 'check'?" when `word` is a likely misspelling of one of
/// `known` (closestMatch, the frontend's rule for names), else `otherwise`
/// (the list of what is known).
std::string orDidYouMean(const std::string &word, const std::vector<std::string> &known, const std::string &otherwise) {
  std::string guess = closestMatch(word, known);
  return guess.empty() ? otherwise : "did you mean '" + guess + "'?";
}

int usageError(const std::string &message) {
  llvm::errs() << "planc: error: " << message << "\n"
               << "run 'planc --help' for usage\n";
  return 2;
}

/// A decimal integer in [lo, 10^15]: step counts and seeds.
bool parseCountArg(const std::string &text, int64_t lo, int64_t &out) {
  if (text.empty() || text.size() > 15 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  out = std::stoll(text);
  return out >= lo;
}

/// The command line's words, walked once into CommandOptions.
class ArgParser {
public:
  ArgParser(std::vector<std::string> words, const CommandLineHelp &help, CommandOptions &o)
      : args(std::move(words)), help(help), o(o) {}

  /// Returns -1 to go on, or the exit code.
  int parse() {
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string &a = args[i];
      if (a == "--help" || a == "-h") {
        llvm::outs() << (command ? help.commands[size_t(*command)] : help.main);
        return 0;
      }
      if (a == "--version") {
        // The revision names the commit built from (cmake/WriteRevision.cmake).
        llvm::outs() << "planc version " << versionNumber() << " (" << sourceRevision() << ")\n";
        return 0;
      }
      if (!command && !a.empty() && a[0] != '-') {
        command = parseCommand(a);
        if (!command)
          return usageError("unknown command '" + a + "'; " +
                       orDidYouMean(a, kCommandWords,
                                    "the commands are check, emit, build, run, verify, convert, auto, report and calibrate"));
        o.command = *command;
        continue;
      }
      int code = commonOption(i);
      if (code == kNotMine) code = commandOption(i);
      if (code != kNotMine) {
        if (code != -1) return code;
        continue;
      }
      if (!a.empty() && a[0] == '-' && a != "-")
        return usageError("unknown option '" + a + "'" + (command ? " for '" + std::string(spelling(*command)) + "'" : ""));
      if (!o.file.empty()) return usageError("more than one input file ('" + o.file + "' and '" + a + "')");
      o.file = a;
    }
    return finish();
  }

private:
  static constexpr int kNotMine = -3; // an option*() result: not one of its options

  std::vector<std::string> args;
  const CommandLineHelp &help;
  CommandOptions &o;
  std::optional<Command> command; // the first word that is not an option
  std::string emit;               // --emit, checked against the emit table at the end

  bool is(Command c) const { return command == c; }

  /// The value of `flag` at args[i] (--flag=value, or --flag value moving i
  /// on); false without one.
  bool valueOf(size_t &i, const std::string &flag, std::string &out) {
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
  }

  /// The options of every command: -1 taken, kNotMine, or the exit code.
  int commonOption(size_t &i) {
    const std::string &a = args[i];
    std::string v;
    if (a == "--set" || a.rfind("--set=", 0) == 0) {
      if (!valueOf(i, "--set", v)) return usageError("--set needs a value: --set block.key=value");
      o.frontend.setOverrides.push_back(v);
    } else if (a == "--fusion" || a.rfind("--fusion=", 0) == 0) {
      if (!valueOf(i, "--fusion", v) || (v != "none" && v != "elementwise" && v != "aggressive"))
        return usageError("--fusion must be none, elementwise or aggressive");
      // The plan's own setting, overridden as --set train.fusion=... would.
      o.frontend.setOverrides.push_back("train.fusion=" + v);
    } else if (a == "--dim" || a.rfind("--dim=", 0) == 0) {
      if (!valueOf(i, "--dim", v)) return usageError("--dim needs a value: --dim name=value");
      o.frontend.dimOverrides.push_back(v);
    } else if (a.rfind("--emit", 0) == 0) {
      if (!valueOf(i, "--emit", v)) return usageError("--emit needs a value: " + emitFormList(anyForm, " or "));
      emit = v;
    } else if (a.rfind("--diagnostics-format", 0) == 0) {
      if (!valueOf(i, "--diagnostics-format", v) || (v != "text" && v != "json"))
        return usageError("--diagnostics-format must be text or json");
      o.json = v == "json";
    } else if (a.rfind("--color", 0) == 0) {
      if (!valueOf(i, "--color", v) || (v != "auto" && v != "always" && v != "never"))
        return usageError("--color must be auto, always or never");
      o.color = v == "always" ? ColorMode::Always : v == "never" ? ColorMode::Never : ColorMode::Auto;
    } else if (a.rfind("--error-limit", 0) == 0) {
      if (!valueOf(i, "--error-limit", v) || v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 9)
        return usageError("--error-limit needs a non-negative integer");
      o.frontend.errorLimit = unsigned(std::stoul(v));
    } else if (a.rfind("--stdlib", 0) == 0) {
      if (!valueOf(i, "--stdlib", v)) return usageError("--stdlib needs a directory");
      o.frontend.stdlibDir = v;
    } else if (a == "--time-passes" && (is(Command::Emit) || is(Command::Verify))) {
      o.passes.timePasses = true;
    } else if (a == "--print-after-all" && (is(Command::Emit) || is(Command::Verify))) {
      o.passes.printAfterAll = true;
    } else if (a == "-Werror") {
      o.frontend.warningsAsErrors = true;
    } else if (a == "-w") {
      o.frontend.suppressWarnings = true;
    } else {
      return kNotMine;
    }
    return -1;
  }

  /// One command's own options: -1 taken, kNotMine, or the exit code.
  int commandOption(size_t &i) {
    const std::string &a = args[i];
    std::string v;
    if (is(Command::Verify) && a.rfind("--dtype", 0) == 0) {
      if (!valueOf(i, "--dtype", v) || (v != "f64" && v != "f32")) return usageError("--dtype must be f64 or f32");
      o.verifyPlan.floatType = v == "f64" ? ir::DType::F64 : ir::DType::F32;
    } else if (is(Command::Verify) && a.rfind("--seed", 0) == 0) {
      int64_t seed;
      if (!valueOf(i, "--seed", v) || !parseCountArg(v, 0, seed)) return usageError("--seed needs a non-negative integer");
      o.verifyPlan.seed = uint64_t(seed);
    } else if (is(Command::Verify) && a.rfind("--tolerance", 0) == 0) {
      char *end = nullptr;
      if (!valueOf(i, "--tolerance", v) || v.empty()) return usageError("--tolerance needs a positive number");
      double t = std::strtod(v.c_str(), &end);
      if (*end || !(t > 0) || t > 1e300) return usageError("--tolerance needs a positive number");
      o.verifyPlan.tolerance = t;
    } else if ((is(Command::Emit) || is(Command::Check)) && a == "--json") {
      o.memoryJson = true;
    } else if (is(Command::Auto) && a.rfind("--top", 0) == 0) {
      int64_t n;
      if (!valueOf(i, "--top", v) || !parseCountArg(v, 1, n) || n > 1000) return usageError("--top needs an integer from 1 to 1000");
      o.autoTop = size_t(n);
    } else if (is(Command::Auto) && a == "--apply") {
      o.autoApply = true;
    } else if (is(Command::Report) && a == "--auto") {
      o.reportSearch = true;
    } else if ((is(Command::Check) || is(Command::Auto) || is(Command::Report)) && a.rfind("--budget", 0) == 0) {
      if (!valueOf(i, "--budget", v)) return usageError("--budget needs a size such as 70GiB");
      auto bytes = parseBudget(v);
      if (!bytes) return usageError(llvm::toString(bytes.takeError()));
      o.budget = *bytes;
    } else if ((is(Command::Check) || is(Command::Auto) || is(Command::Report)) &&
               a.rfind("--calibration", 0) == 0) {
      if (!valueOf(i, "--calibration", v) || v.empty()) return usageError("--calibration needs a file (planc calibrate -o FILE)");
      o.calibration = v;
    } else if (is(Command::Verify) && a == "--testing-swap-sends") {
      o.verifyPlan.swapSends = true;
    } else if (is(Command::Verify) && a == "--structure-only") {
      o.verifyPlan.structureOnly = true;
    } else if (is(Command::Verify) && a == "--testing-overlap-buffers") {
      o.verifyPlan.overlapBuffers = true;
    } else if (is(Command::Verify) && a == "--testing-skip-plan-check") {
      o.verifyPlan.skipPlanCheck = true;
    } else if (is(Command::Verify) && a == "--testing-misplace-op") {
      o.verifyPlan.misplaceOp = true;
    } else if (is(Command::Verify) && a.rfind("--testing-drop-collective", 0) == 0) {
      int64_t n;
      if (!valueOf(i, "--testing-drop-collective", v) || !parseCountArg(v, 0, n) || n > 1000000)
        return usageError("--testing-drop-collective needs a non-negative integer");
      o.verifyPlan.dropCollective = int(n);
    } else if (is(Command::Emit) && a.rfind("--rank", 0) == 0) {
      if (!valueOf(i, "--rank", v) || !parseCountArg(v, 0, o.rank)) return usageError("--rank needs a non-negative integer");
    } else if (is(Command::Emit) && (a == "--trace" || a.rfind("--trace=", 0) == 0)) {
      if (!valueOf(i, "--trace", o.trace) || o.trace.empty())
        return usageError("--trace needs the trace file of a run (./model --trace FILE)");
    } else if (a == "--verify" && is(Command::Check)) {
      o.verify = true;
    } else if (a == "--quiet" && is(Command::Check)) {
      o.quiet = true;
    } else if (a == "--no-memory" && is(Command::Check)) {
      o.noMemory = true;
    } else if (is(Command::Run) && a.rfind("--target", 0) == 0) {
      if (!valueOf(i, "--target", v)) return usageError("--target needs a value: interp or cpu");
      if (std::string why = parseTargetOption(Command::Run, v, o.run.target); !why.empty()) return usageError(why);
    } else if (is(Command::Build) && a.rfind("--target", 0) == 0) {
      if (!valueOf(i, "--target", v)) return usageError("--target needs a value: cpu");
      if (std::string why = parseTargetOption(Command::Build, v, o.build.target); !why.empty()) return usageError(why);
    } else if ((is(Command::Build) || is(Command::Convert) || is(Command::Report) || is(Command::Calibrate)) &&
               (a == "-o" || a.rfind("-o=", 0) == 0)) {
      if (!valueOf(i, "-o", v) || v.empty()) return usageError("-o needs a file name");
      o.build.output = v;
    } else if (is(Command::Convert) && (a == "--to" || a.rfind("--to=", 0) == 0)) {
      if (!valueOf(i, "--to", v) || v.empty())
        return usageError("--to needs the name map to write: hf-llama, hf-qwen2, hf-gpt2, hf-neox or the plan's own");
      o.convertTo = v;
    } else if (is(Command::Build) && a.rfind("--dtype", 0) == 0) {
      if (!valueOf(i, "--dtype", v) || (v != "f64" && v != "f32")) return usageError("--dtype must be f64 or f32");
      o.build.floatType = v == "f64" ? ir::DType::F64 : ir::DType::F32;
    } else if ((is(Command::Build) || is(Command::Run)) && a.size() == 3 && a.compare(0, 2, "-O") == 0) {
      if (a[2] < '0' || a[2] > '3') return usageError("-O takes a level from 0 to 3 (-O0 ... -O3)");
      o.build.optLevel = a[2] - '0';
      o.optLevelGiven = true;
    } else if (is(Command::Build) && a == "--portable") {
      o.build.native = false;
    } else if (is(Command::Build) && a == "--keep-source") {
      o.build.keepSource = true;
    } else if (is(Command::Run) && a.rfind("--steps", 0) == 0) {
      if (!valueOf(i, "--steps", v) || !parseCountArg(v, 1, o.run.steps)) return usageError("--steps needs a positive integer");
    } else if (is(Command::Run) && a.rfind("--seed", 0) == 0) {
      int64_t seed;
      if (!valueOf(i, "--seed", v) || !parseCountArg(v, 0, seed)) return usageError("--seed needs a non-negative integer");
      o.run.seed = uint64_t(seed);
    } else if (is(Command::Run) && a.rfind("--dtype", 0) == 0) {
      if (!valueOf(i, "--dtype", v) || (v != "f64" && v != "f32")) return usageError("--dtype must be f64 or f32");
      o.run.floatType = v == "f64" ? ir::DType::F64 : ir::DType::F32;
    } else if ((is(Command::Run) || is(Command::Calibrate)) && a.rfind("--ranks", 0) == 0) {
      if (!valueOf(i, "--ranks", v) || !parseCountArg(v, 1, o.run.ranks)) return usageError("--ranks needs a positive integer");
    } else if (is(Command::Run) && a.rfind("--dump", 0) == 0) {
      if (!valueOf(i, "--dump", v) || v.empty()) return usageError("--dump needs a folder");
      o.run.dumpDir = v;
    } else {
      return kNotMine;
    }
    return -1;
  }

  /// What the options say together, once all are read.
  int finish() {
    if (!command)
      return usageError("no command; the commands are check, emit, build, run, verify, convert, auto, report and calibrate");
    if (is(Command::Report) && o.build.output.empty()) return usageError("report needs an output file: -o <report.html>");
    if (is(Command::Calibrate)) {
      if (!o.file.empty()) return usageError("calibrate measures this machine and takes no plan ('" + o.file + "')");
      if (o.build.output.empty()) return usageError("calibrate needs an output file: -o <calibration.json>");
      return -1;
    }
    if (o.file.empty()) return usageError("no input file");
    if (is(Command::Convert) && o.build.output.empty())
      return usageError("convert needs an output: -o <file.safetensors> or -o <checkpoint folder>");
    if (is(Command::Build) && o.build.output.empty()) return usageError("build needs an output file: -o <executable>");
    const bool runBuilds = is(Command::Run) && targetBuilds(o.run.target);
    if (runBuilds && !o.run.dumpDir.empty())
      return usageError("--dump goes with --target=interp");
    if (is(Command::Run) && !runBuilds && o.optLevelGiven)
      return usageError("-O" + std::to_string(o.build.optLevel) + " goes with --target=cpu (the interpreter compiles nothing)");
    if (is(Command::Run) && !runBuilds && o.run.ranks > 0)
      return usageError("--ranks goes with --target=cpu (the interpreter runs every rank in one process)");
    if (is(Command::Emit)) {
      const std::string forms = emitFormList(anyForm, " and ");
      if (emit.empty()) return usageError("emit needs --emit=<form>; the forms are " + forms);
      o.emit = parseEmitForm(emit);
      if (!o.emit) {
        std::vector<std::string> known;
        for (const EmitFormInfo &f : emitForms()) known.push_back(f.spelling);
        return usageError("--emit=" + emit + " is not available; " + orDidYouMean(emit, known, "this version emits " + forms));
      }
      const EmitFormInfo &form = emitFormInfo(*o.emit);
      if ((o.passes.timePasses || o.passes.printAfterAll) && !form.passOptions)
        return usageError("--time-passes and --print-after-all go with --emit=" + emitFormList(takesPassOptions, " or "));
      if (o.memoryJson && *o.emit != EmitForm::Memory) return usageError("--json goes with --emit=memory (or with check)");
      if (!o.trace.empty() && *o.emit != EmitForm::ScheduleSvg)
        return usageError("--trace goes with --emit=schedule-svg (the measured timeline beside the planned one)");
      if (!form.rankOption && o.rank >= 0) return usageError("--rank goes with --emit=" + emitFormList(takesRank, " and "));
    } else if (!emit.empty()) {
      return usageError("--emit belongs to the emit command");
    }
    if (o.noMemory && (o.memoryJson || o.budget || !o.calibration.empty()))
      return usageError("--no-memory skips the memory check and the step time that --json, --budget and --calibration are "
                   "about");
    return -1;
  }
};

} // namespace

int planc::parseCommandLine(std::vector<std::string> args, const CommandLineHelp &help, CommandOptions &o) {
  if (args.empty()) {
    llvm::outs() << help.main;
    return 2;
  }
  return ArgParser(std::move(args), help, o).parse();
}

void planc::useRuntimeBesideExecutable(const std::string &executable, BuildOptions &build) {
  if (executable.empty()) return;
  llvm::SmallString<256> prefix(llvm::sys::path::parent_path(llvm::sys::path::parent_path(executable)));
  llvm::SmallString<256> include(prefix), library(prefix);
  llvm::sys::path::append(include, "include", "planc");
  llvm::sys::path::append(library, "lib", "libplanc_runtime.a");
  llvm::SmallString<256> header(include);
  llvm::sys::path::append(header, "runtime", "Executable.h");
  if (llvm::sys::fs::exists(header) && llvm::sys::fs::exists(library)) {
    build.runtimeInclude = include.str().str();
    build.runtimeLibrary = library.str().str();
  }
}
