//===- compiler/Run.h - `planc run` as one library call ---------*- C++ -*-===//
//
// From a checked plan to a trained model on a target (backend/Target.h),
// the plan trained as written:
//
//   compile (CodeGenerated)       once: the training step partitioned as the
//                                 `parallel` block says, scheduled, placed in
//                                 every rank's arena (--dtype makes every
//                                 float f64 or f32 first), the batch the
//                                 model reads (the whole global batch of a
//                                 step) and, for a target that emits code,
//                                 its program (compiler/Pipeline.h)
//   Target::run                   the interpreter: the plan's `data` setting
//                                 opened, every rank of the mesh in one
//                                 process, every micro-batch of every dp rank
//                                 each step, the log and the dump
//                                 (backend/interp/PlanTrainer.h); the CPU: the
//                                 program built into a temporary folder and
//                                 run there, under mpirun for a mesh
//                                 (backend/cpu/Launch.h), then removed
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_RUN_H
#define PLANC_COMPILER_RUN_H

#include "backend/Target.h"
#include "frontend/Frontend.h"
#include "ir/Type.h"
#include "passes/PassManager.h"
#include "runtime/Data.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace planc {

struct RunOptions {
  /// Steps to run; 0: the plan's train.steps. The learning-rate schedule
  /// stays the plan's (its decay ends at train.steps), so a short run is the
  /// start of the planned one.
  int64_t steps = 0;
  std::optional<uint64_t> seed;        // initialisation and data; default: train.seed
  std::optional<ir::DType> floatType;  // every float of the model; default: as the plan says
  std::string dumpDir;                 // empty: no dump (see backend/interp/PlanTrainer.h)
  int64_t ranks = 0;                   // --target=cpu: processes under mpirun; 0: the plan's mesh
  bool verifyEach = true;              // PassManagerOptions::verifyEach, for the training passes
  backend::TargetKind target = backend::TargetKind::Interp;
  backend::ToolchainOptions toolchain; // a target that builds first (its output is a temporary file)
};

/// Trains the checked plan of `c` on options.target: the run's lines go to
/// `log`, a build's progress to `progress`. Returns the run's exit status
/// (non-zero: the program failed and said why). Errors (a model without
/// token inputs, a bad data file, an unwritable dump folder, a loss that is
/// not finite, a mesh that --ranks contradicts, no mpirun for a mesh, a
/// build failure) are messages for the user.
llvm::Expected<int> runPlan(Compilation &c, const RunOptions &options, llvm::raw_ostream &log,
                            llvm::raw_ostream &progress);

} // namespace planc

#endif
