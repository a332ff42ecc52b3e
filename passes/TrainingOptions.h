//===- passes/TrainingOptions.h - what the training passes are told -*- C++ -*-===//
//
// The settings of the passes that make a training step (lora,
// fuse-attention, mixed-precision, optimizer, loss-scaling), typed, each default written
// here once. The driver fills them from a plan (compiler/TrainOptions.h),
// plan-opt from --pass-option (passes/PassOptionTable.h), tests by hand. The
// frontend's defaults for the same settings (frontend/Config.h) are equal;
// a unit test holds them to it.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_PASSES_TRAININGOPTIONS_H
#define PLANC_PASSES_TRAININGOPTIONS_H

#include "ir/TrainingKinds.h"
#include "ir/Type.h"

#include <cstdint>
#include <optional>

namespace planc {

/// The `optimizer` pass: the update rule, the learning-rate schedule and
/// clipping (passes/OptimizerLowering.cpp).
struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::AdamW;
  double lr = 3e-4;            // peak learning rate
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.0;    // Adam: L2 in the gradient; AdamW: decoupled
  /// The parameters weightDecay applies to, a parameter's own choice
  /// (ir::Value::weightDecay) aside.
  WeightDecayParams weightDecayParams = WeightDecayParams::Matrices;
  double momentum = 0.0;       // SGD
  bool nesterov = false;       // SGD
  int64_t warmup = 0;          // steps of linear warm-up
  DecayKind decay = DecayKind::Constant;
  double minLr = 0.0;          // the decay's floor
  int64_t totalSteps = 0;      // the step at which the decay ends
  double clipGradNorm = 0.0;   // global-norm clipping; 0: none
  int64_t blockSize = 2048;    // 8-bit Adam's quantisation block
};

/// The `mixed-precision` and `loss-scaling` passes, and the dtype the
/// optimizer reads gradients in.
struct PrecisionOptions {
  ir::DType compute = ir::DType::F32;  // the forward graph's dtype
  /// The gradients the optimizer reads (bf16, f16: kept narrow; the
  /// parameter's f32: Megatron's main gradients); none: as autodiff made them.
  std::optional<ir::DType> grads;
  LossScaling lossScaling = LossScaling::None;
  double lossScaleInit = 65536.0;      // the first (or the static) scale
  int64_t lossScaleWindow = 2000;      // dynamic: overflow-free steps before the scale grows
};

/// The compute dtypes mixed-precision lowers (f32 and f64 change nothing).
inline bool isLoweredComputeDType(ir::DType t) {
  return t == ir::DType::F64 || t == ir::DType::F32 || t == ir::DType::BF16 || t == ir::DType::F16;
}

/// The `lora` pass: rank 0 leaves the model as written.
struct LoraOptions {
  int64_t rank = 0;
  std::optional<double> alpha;         // none: 2 x rank
};

/// The `fuse-attention` and `fuse-elementwise` passes.
struct FusionOptions {
  FusionPolicy policy = kDefaultFusion;
  /// False: fuse-elementwise leaves the step as it is whatever the policy
  /// (`planc emit --emit=fusion` analyses the step it would fuse).
  bool elementwise = true;
};

struct TrainingOptions {
  OptimizerOptions optimizer;
  PrecisionOptions precision;
  LoraOptions lora;
  FusionOptions fusion;
};

} // namespace planc

#endif
