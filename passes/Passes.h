//===- passes/Passes.h - the factories of every pass ------------*- C++ -*-===//
#ifndef PLANC_PASSES_PASSES_H
#define PLANC_PASSES_PASSES_H

#include "passes/Pass.h"

#include "llvm/Support/Error.h"

namespace planc {

/// Removes ops with no used results (and no side effects: sends and
/// collectives stay) and folds reshapes to the same shape and casts to the
/// same dtype. Needs: a verified module. Keeps: outputs and their values.
std::unique_ptr<Pass> createCanonicalizePass();

/// Appends the backward graph: an output "grad.<path>" per trainable
/// parameter. Needs: a scalar float output "loss". See Autodiff.cpp.
std::unique_ptr<Pass> createAutodiffPass();

/// Lowers the optimizer step (clipping, learning-rate schedule, SGD / Adam /
/// AdamW / 8-bit Adam) as IR: outputs "new.<path>" per updated parameter and
/// optimizer state. Needs: autodiff's gradients. Reads `options` (the keys
/// are listed in OptimizerLowering.cpp). See OptimizerLowering.cpp.
std::unique_ptr<Pass> createOptimizerLoweringPass(const PassOptions &options);

class PassManager;
/// The passes that turn a lowered forward module into one training step, in
/// order, each with the reason for its place (see Passes.cpp).
llvm::Error addDefaultTrainingPipeline(PassManager &pm);

} // namespace planc

#endif
