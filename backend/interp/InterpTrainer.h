//===- backend/interp/InterpTrainer.h - training on the reference interpreter -*- C++ -*-===//
//
// The training loop of `planc run --target=interp`, over a training-step
// module (forward, backward and optimizer update in one module, as the
// autodiff and optimizer passes leave it):
//
//   params = initialParams(seed)
//   for step in 0 ..< steps:
//     tokens, targets = data.batch(step)
//     outputs = interpret(module, params + tokens, targets, step + 1)
//     log loss and lr; params = outputs "new.<path>"
//
// The batches come from the runtime's data sources (runtime/Data.h) as raw
// buffers and the files are the runtime's (runtime/Safetensors.h); the
// adapters of TensorAdapters.h turn them into the interpreter's tensors.
//
// Parameters and optimizer state are fed back by name: output "new.<path>"
// replaces the module parameter whose path is <path>. With a dump folder it
// writes the numbers an outside reference needs, each file atomically:
//
//   init.safetensors        the model's initial parameters, by path
//   batch-<step>.safetensors  tokens, targets
//   step-<step>.safetensors   loss, grad.<path> for every gradient, lr
//   losses.json             {"model", "dtype", "seed", "steps", "loss": [...], "lr": [...]}
//                           rewritten after every step
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_INTERP_INTERPTRAINER_H
#define PLANC_BACKEND_INTERP_INTERPTRAINER_H

#include "runtime/Data.h"

#include "ir/IR.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace planc::interp {

struct TrainLoopOptions {
  int64_t steps = 1;
  uint64_t seed = 0;          // of the parameters' initialisation
  std::string dumpDir;        // empty: no dump
  llvm::raw_ostream *log = nullptr; // one line per step; null: silent
};

struct TrainLoopResult {
  std::vector<double> losses, lrs; // per step; lr is NaN where the module has no "lr" output
};

/// Runs the loop. Errors: a module that is not a training step (no "loss"),
/// a data error, an interpreter error, a loss that is not finite (naming the
/// step), a dump folder that cannot be created or written (naming it).
llvm::Expected<TrainLoopResult> trainOnInterpreter(const ir::Module &step, runtime::DataSource &data,
                                                   const TrainLoopOptions &options);

} // namespace planc::interp

#endif
