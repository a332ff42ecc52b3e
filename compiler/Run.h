//===- compiler/Run.h - `planc run` as one library call ---------*- C++ -*-===//
//
// From a checked plan to a trained model on the reference interpreter, the
// plan trained as written:
//
//   compile (ForwardIR, Step)     the batch the model reads: the whole global
//                                 batch of a step (compiler/Pipeline.h)
//   compile (ExecutionPlanned)    the training step partitioned as the
//                                 `parallel` block says, scheduled, placed in
//                                 every rank's arena (--dtype makes every
//                                 float f64 or f32 first)
//   openDataSource                the plan's `data` setting
//   trainPlan                     every rank of the mesh in one process, every
//                                 micro-batch of every dp rank each step; the
//                                 log and the dump
//
// The loop itself is backend/interp/PlanTrainer.h.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_RUN_H
#define PLANC_COMPILER_RUN_H

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
};

/// The batch a training step of the checked plan reads: the whole global
/// batch's shape, its vocabulary and token type (the data sources' input).
llvm::Expected<runtime::BatchShape> stepBatchShape(Compilation &c);

/// Trains the checked plan of `c` on the interpreter, logging to `log`.
/// Errors (a model without token inputs, a bad data file, an unwritable dump
/// folder, a loss that is not finite) are messages for the user.
llvm::Error runOnInterpreter(Compilation &c, const RunOptions &options, llvm::raw_ostream &log);

} // namespace planc

#endif
