//===- backend/interp/PlanTrainer.h - training an execution plan on the interpreter -*- C++ -*-===//
//
// The training loop of `planc run --target=interp`: the plan's execution plan
// (exec/ExecutionPlan.h) run by the interpreter backend (PlanInterpreter.h),
// every rank of the mesh in one process inside its planned arena, on the
// whole global batch of every step:
//
//   params = initialParams(seed), each rank loaded with its block
//   for step in 0 ..< steps:
//     tokens, targets = data.batch(step)           [global_batch, seq]
//     every rank its rows: dp rank d the d-th block of m * b rows, its
//     micro-batch j the j-th block of b of those (exec::batchRowsOf)
//     run the step (forward and backward of every micro-batch in schedule
//     order, gradients accumulated, synchronised, the update)
//     log loss, lr and tokens
//
// Parameters and optimizer state stay in their buffers between steps, as an
// executable keeps them. The initial values are those of one device
// (ir::initialParams keys each parameter's stream by its path), so every
// layout of the same model starts from the same numbers and, the plan being
// verified, trains the same model.
//
// With a dump folder it writes, each file atomically, the numbers an outside
// reference needs (tests/e2e/torch_reference.py):
//
//   init.safetensors          the model's initial parameters, by path
//   batch-<step>.safetensors  tokens, targets: the step's whole global batch
//   step-<step>.safetensors   loss, lr, grad.<path> for every gradient (the
//                             whole gradient, assembled from the ranks'
//                             blocks, before clipping)
//   losses.json               {"model", "dtype", "seed", "steps", "loss": [...], "lr": [...]}
//                             rewritten after every step
//   final.safetensors         the model's parameters after the last step, by
//                             path (assembled from the ranks' updates)
//
// The dump needs the gradients kept to the end of the step
// (CompileOptions::reportGradients), which the plan must have been built with.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_INTERP_PLANTRAINER_H
#define PLANC_BACKEND_INTERP_PLANTRAINER_H

#include "exec/ExecutionPlan.h"
#include "ir/IR.h"
#include "runtime/Data.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace planc::interp {

struct TrainLoopOptions {
  int64_t steps = 1;
  uint64_t seed = 0;          // of the parameters' initialisation and the dropout masks
  std::string dumpDir;        // empty: no dump
  llvm::raw_ostream *log = nullptr; // one line per step; null: silent
};

struct TrainLoopResult {
  std::vector<double> losses, lrs; // per step; lr is NaN where the step has no "lr" output
  int64_t tokensPerStep = 0;
};

/// Trains `plan`, built from the placed step `placed` (its parameters,
/// inputs and outputs), on the batches of `data`, which must be of the
/// whole global batch. Errors: a step that is not a training step (no
/// scalar "loss"), a batch of the wrong shape, a data error, an interpreter
/// error (naming the step, its op and rank), a loss that is not finite
/// (naming the step), a dump folder that cannot be created or written
/// (naming it), a dump asked of a plan that does not keep its gradients.
llvm::Expected<TrainLoopResult> trainPlan(const ir::Module &placed, const exec::ExecutionPlan &plan,
                                          runtime::DataSource &data, const TrainLoopOptions &options);

} // namespace planc::interp

#endif
