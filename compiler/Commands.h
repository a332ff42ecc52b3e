//===- compiler/Commands.h - every `planc` command as a library call -*- C++ -*-===//
//
// What tools/planc runs once it has parsed its command line: one function
// per command, each printing what the command prints (to llvm::outs() and
// llvm::errs(), as the driver's own streams) and returning its exit code:
// 0 clean, 1 errors in the plan (or a failed run), 70 planc's own bug. The
// driver only parses arguments into CommandOptions and calls runCommand.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_COMMANDS_H
#define PLANC_COMPILER_COMMANDS_H

#include "compiler/Build.h"
#include "compiler/EmitForms.h"
#include "compiler/Run.h"
#include "compiler/VerifyPlan.h"
#include "frontend/Frontend.h"
#include "passes/PassManager.h"

#include <cstdint>
#include <optional>
#include <string>

namespace planc {

class CollectingConsumer; // frontend/Verify.h

enum class Command { Check, Emit, Build, Run, Verify, Convert, Auto, Report, Calibrate };
const char *spelling(Command command);
std::optional<Command> parseCommand(llvm::StringRef text);

enum class ColorMode { Auto, Always, Never };

/// A command line, parsed.
struct CommandOptions {
  Command command = Command::Check;
  std::string file;
  std::optional<EmitForm> emit;   // --emit (emit)
  bool verify = false;            // --verify (check): compare the diagnostics with the file's expectations
  bool quiet = false;             // --quiet (check)
  bool json = false;              // --diagnostics-format=json
  ColorMode color = ColorMode::Auto;
  FrontendOptions frontend;
  RunOptions run;                 // run; run.target: --target of run
  PassManagerOptions passes;      // --time-passes, --print-after-all (emit ir-train, verify)
  PlanVerifyOptions verifyPlan;
  int64_t rank = -1;              // --rank (emit exec): one rank's program, with its groups and peers
  std::string trace;              // --trace (emit schedule-svg): a run's trace to draw beside the plan
  bool memoryJson = false;        // --json (emit memory, check)
  std::optional<uint64_t> budget; // --budget (check)
  bool noMemory = false;          // --no-memory (check)
  std::string calibration;        // --calibration (check, auto): a file of `planc calibrate`
  size_t autoTop = 5;             // --top (auto)
  bool autoApply = false;         // --apply (auto)
  bool reportSearch = false;      // --auto (report)
  BuildOptions build;             // build, run --target=cpu; build.output: -o of build, convert, report, calibrate
  bool optLevelGiven = false;     // -O<n> on the command line
  std::string convertTo;          // --to (convert): the name map to write a checkpoint under
};

/// --target=<text> of `command` (run or build) into `kind`; empty, or the
/// usage message where the text names no target the command can use (an
/// unknown one, one this planc cannot use yet, one that builds nothing for
/// build).
std::string parseTargetOption(Command command, llvm::StringRef text, backend::TargetKind &kind);

/// Whether a run on `kind` builds a program first (-O and --ranks go with it).
bool targetBuilds(backend::TargetKind kind);

/// Runs the command `o` names and returns its exit code.
int runCommand(CommandOptions &o);

// The commands, one by one (runCommand's dispatch); those of a plan take the
// compilation their diagnostics go to.
int runCheck(const CommandOptions &o, Compilation &c, CollectingConsumer *collected);
int runEmit(const CommandOptions &o, Compilation &c);
int runVerify(CommandOptions &o, Compilation &c);
int runBuild(const CommandOptions &o, Compilation &c);
int runRun(const CommandOptions &o, Compilation &c);
int runAuto(const CommandOptions &o, Compilation &c);
int runReport(const CommandOptions &o, Compilation &c);
int runCalibrate(const CommandOptions &o);
int runConvert(const CommandOptions &o);

/// A failure after the plan check: the plan author's errors (a pass that
/// cannot apply to the plan) as diagnostics at their .plan place, anything
/// else as a message. Returns 1.
int failAfterCheck(Compilation &c, llvm::Error e);

} // namespace planc

#endif
