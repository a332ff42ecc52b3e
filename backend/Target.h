//===- backend/Target.h - what every backend offers the compiler -*- C++ -*-===//
//
// The seam between compiler/ and the backends (Glow's Backend, Halide's
// Target): compile() takes a TargetKind and, as its last stage, asks the
// target which steps of the execution plan it cannot run and has it emit its
// program; `planc build` and `planc run` ask it to build and run that
// program. compiler/ names no backend function but through this interface.
//
//   refusedSteps   every step of a plan the target has no kernel for, with
//                  the reason (the interpreter: an op without a reference
//                  kernel; the CPU: one the C-family renderer cannot render)
//   emit           the target's program as text (the CPU: one C++ file);
//                  the interpreter emits nothing, it runs the plan itself
//   build          that text into an executable (the CPU: the system C++
//                  compiler with runtime/, OpenBLAS and MPI)
//   run            trains the plan: the interpreter in this process, the CPU
//                  built into a temporary folder and started there (under
//                  mpirun, one process per rank, for a mesh), then removed
//
// The registry (backend/registry/Targets.cpp) holds one Target per kind; a kind this
// planc cannot use (CUDA, not built yet) is listed with why. Adding a backend
// is a folder backend/<target>/ with its Target, a TargetKind and a line of
// the registry (docs/architecture.md, "Where things go").
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_TARGET_H
#define PLANC_BACKEND_TARGET_H

#include "backend/ProgramSettings.h"
#include "exec/ExecutionPlan.h"
#include "ir/IR.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace planc::backend {

/// The targets planc knows, usable or not (Target::unavailable).
enum class TargetKind { Interp, Cpu, Cuda };

/// "interp", "cpu", "cuda": the --target spelling.
inline const char *spelling(TargetKind kind) {
  switch (kind) {
  case TargetKind::Interp: return "interp";
  case TargetKind::Cpu: return "cpu";
  case TargetKind::Cuda: return "cuda";
  }
  return "";
}

/// The kind a --target spelling names; none for an unknown one.
inline std::optional<TargetKind> parseTargetKind(llvm::StringRef text) {
  for (TargetKind k : {TargetKind::Interp, TargetKind::Cpu, TargetKind::Cuda})
    if (text == spelling(k)) return k;
  return std::nullopt;
}

/// A step of an execution plan that a target cannot run, and why.
struct RefusedStep {
  size_t program = 0;  // its index in plan.programs
  size_t step = 0;     // its index in that program's steps
  std::string what;    // "step 12 (gelu in layers.0.mlp)"
  std::string reason;  // "dtype fp8 has no generated loads yet"
};

/// Step `index` of program `program` refused for `reason`, named as every
/// target names it ("step 12 (gelu in layers.0.mlp)").
inline RefusedStep refusedStep(size_t program, size_t index, const exec::Step &s, std::string reason) {
  return {program, index,
          "step " + std::to_string(index) + " (" + ir::spelling(s.kind) + (s.path.empty() ? "" : " in " + s.path) + ")",
          std::move(reason)};
}

/// What a target's program is made of: the execution plan and what the
/// program needs besides it.
struct TargetProgram {
  /// The placed module the plan was built from (its parameters'
  /// initialisation), until the plan records it itself.
  const ir::Module *placed = nullptr;
  const exec::ExecutionPlan *plan = nullptr;
  /// The inference step's plan (one rank), for --sample; null: none.
  const exec::ExecutionPlan *inference = nullptr;
  ProgramSettings settings;
};

/// How a program text becomes an executable (a target that builds one).
struct ToolchainOptions {
  std::string output;         // the executable's path
  bool native = true;         // -march=native (for this host)
  int optLevel = 3;           // the C++ compiler's -O<n>, 0-3: lower builds faster (tests)
  bool keepSource = false;    // also write <output>.cpp
  std::string cxx;            // the C++ compiler; empty: $CXX, else the one planc was configured with
  std::string runtimeInclude; // the folder holding runtime/Executable.h; empty: this build's
  std::string runtimeLibrary; // libplanc_runtime.a (libplanc_numerics.a beside it); empty: this build's
};

/// How a program is run.
struct TargetRunOptions {
  int64_t steps = 0;          // 0: the plan's train.steps
  std::optional<uint64_t> seed; // initialisation and data; none: the plan's
  std::string dumpDir;        // the interpreter's dump folder; empty: none
  ToolchainOptions toolchain; // a target that builds first (output is ignored: a temporary folder)
  llvm::raw_ostream *log = nullptr; // the run's lines (the interpreter's step log, the build's progress)
};

class Target {
public:
  virtual ~Target() = default;
  virtual TargetKind kind() const = 0;
  const char *name() const { return spelling(kind()); }

  /// Empty where this planc can use the target; otherwise why not, as a
  /// sentence to follow "--target=<name>: ".
  virtual std::string unavailable() const { return ""; }

  /// Whether the target's program is code (emit and build); the interpreter
  /// runs the plan itself.
  virtual bool emitsCode() const = 0;

  /// Every step of `plan` the target has no kernel for, in program and step
  /// order. `foldProducers`: the fusion policy lets a kernel compute its
  /// elementwise producers (backend/c/ProgramKernels.h).
  virtual std::vector<RefusedStep> refusedSteps(const exec::ExecutionPlan &plan, bool foldProducers) const = 0;

  /// Writes the program. Errors: a step without a kernel (naming it and
  /// why), a plan without what the program feeds.
  virtual llvm::Error emit(const TargetProgram &program, llvm::raw_ostream &os) const = 0;

  /// Builds emitted `code` (named `sourceName` in messages) into
  /// options.output; progress lines go to `log`.
  virtual llvm::Error build(const std::string &code, const std::string &sourceName, const ToolchainOptions &options,
                            llvm::raw_ostream &log) const = 0;

  /// What a run of that many processes (ranks) needs besides the program, checked
  /// before anything is compiled (the CPU: mpirun for a mesh).
  virtual llvm::Error checkCanRun(int64_t /*ranks*/) const { return llvm::Error::success(); }

  /// Trains the program for options.steps. Returns the exit status of the
  /// run (non-zero: it failed and said why itself); an error where it could
  /// not run at all (a step without a kernel, no launcher, a build failure).
  /// `code`: what emit() wrote, for a target that emits code.
  virtual llvm::Expected<int> run(const TargetProgram &program, const std::string &code,
                                  const TargetRunOptions &options) const = 0;
};

/// The registry: the target of every kind (one object each, for the
/// process's life).
const Target &targetOf(TargetKind kind);

/// Every kind, in the order --help lists them.
std::vector<TargetKind> allTargetKinds();

/// refusedSteps as one message: "N steps:\n  step i (...): why" (at most
/// ten listed), empty where none is refused.
std::string describeRefusals(const std::vector<RefusedStep> &refused);

} // namespace planc::backend

#endif
