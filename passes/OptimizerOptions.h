//===- passes/OptimizerOptions.h - the settings the optimizer pass reads -*- C++ -*-===//
//
// The PassOptions keys of the `optimizer` pass, in one place for the pass, the
// code that fills them from a plan's `train` block, and tests. Values are
// text; numbers are read as C's strtod reads them, booleans as true / false.
//
//   key             values                             default    train { } setting
//   optimizer       sgd | adam | adamw | adam8bit      adamw      optimizer <kind>(...)
//   lr              peak learning rate, >= 0           3e-4       lr
//   beta1, beta2    Adam's moment decay, in [0, 1)     0.9, 0.999 betas = (beta1, beta2)
//   eps             Adam's denominator term, >= 0      1e-8       eps
//   weight_decay    >= 0 (Adam: L2; AdamW: decoupled)  0          weight_decay
//   momentum        SGD momentum, in [0, 1)            0          momentum
//   nesterov        SGD Nesterov momentum              false      nesterov
//   warmup          steps of linear warm-up, >= 0      0          warmup
//   decay           constant | linear | cosine         constant   decay
//   min_lr          the decay's floor, in [0, lr]      0          min_lr
//   total_steps     the step at which decay ends       0          steps
//   clip_grad_norm  global-norm clipping; 0: none      0          clip_grad_norm
//   block_size      8-bit Adam's quantisation block    2048       block_size
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_PASSES_OPTIMIZEROPTIONS_H
#define PLANC_PASSES_OPTIMIZEROPTIONS_H

namespace planc::optimizer_keys {

constexpr const char *kOptimizer = "optimizer";
constexpr const char *kLr = "lr";
constexpr const char *kBeta1 = "beta1";
constexpr const char *kBeta2 = "beta2";
constexpr const char *kEps = "eps";
constexpr const char *kWeightDecay = "weight_decay";
constexpr const char *kMomentum = "momentum";
constexpr const char *kNesterov = "nesterov";
constexpr const char *kWarmup = "warmup";
constexpr const char *kDecay = "decay";
constexpr const char *kMinLr = "min_lr";
constexpr const char *kTotalSteps = "total_steps";
constexpr const char *kClipGradNorm = "clip_grad_norm";
constexpr const char *kBlockSize = "block_size";

} // namespace planc::optimizer_keys

#endif
