//===- compiler/TrainOptions.cpp - a plan's train settings as pass options -===//

#include "compiler/TrainOptions.h"
#include "ir/Printer.h"
#include "passes/OptimizerOptions.h"

using namespace planc;
namespace keys = planc::optimizer_keys;

PassOptions planc::passOptionsFromConfig(const PlanConfig &config) {
  const TrainConfig &t = config.train;
  const OptimizerConfig &o = t.optimizer;
  static const char *const kinds[] = {"sgd", "adam", "adamw", "adam8bit"};  // OptimizerKind order
  static const char *const decays[] = {"constant", "linear", "cosine"};     // DecayKind order
  static const char *const scalings[] = {"none", "static", "dynamic"};      // LossScaling order
  auto number = [](double x) { return ir::formatFloat(x); };
  PassOptions p;
  p.values = {
      {keys::kOptimizer, kinds[unsigned(o.kind)]},
      {keys::kLr, number(o.lr)},
      {keys::kBeta1, number(o.beta1)},
      {keys::kBeta2, number(o.beta2)},
      {keys::kEps, number(o.eps)},
      {keys::kWeightDecay, number(o.weightDecay)},
      {keys::kMomentum, number(o.momentum)},
      {keys::kNesterov, o.nesterov ? "true" : "false"},
      {keys::kWarmup, std::to_string(o.warmup)},
      {keys::kDecay, decays[unsigned(o.decay)]},
      {keys::kMinLr, number(o.minLr)},
      {keys::kTotalSteps, std::to_string(t.steps)},
      {keys::kClipGradNorm, number(t.clipGradNorm)},
      {keys::kBlockSize, std::to_string(o.blockSize)},
      // The mixed-precision and loss-scaling passes (passes/MixedPrecision.cpp,
      // passes/LossScaling.cpp); fp8 compute is not lowered by them.
      {"compute_dtype", t.precision.compute},
      {"grad_dtype", !t.precision.grads.empty()                                  ? t.precision.grads
                     : t.precision.compute == "bf16" || t.precision.compute == "f16" ? t.precision.compute
                                                                                     : "f32"},
      {"loss_scaling", scalings[unsigned(t.precision.lossScaling)]},
      {"loss_scale_init", number(t.precision.initialScale)},
      {"loss_scale_window", std::to_string(t.precision.growthInterval)},
      // LoRA adapters (passes/LoraAdapters.cpp): rank 0 leaves the model as written.
      {"lora_rank", t.adapters.kind == AdapterKind::LoRA ? std::to_string(t.adapters.rank) : "0"},
      {"lora_alpha", number(t.adapters.alpha)},
      // The partitioning passes (passes/ZeroSharding.cpp,
      // passes/ShardingPropagation.cpp, passes/Recompute.cpp).
      {"zero_stage", std::to_string(config.parallel.zeroStage)},
      {"sequence_parallel", config.parallel.sequenceParallel ? "true" : "false"},
      {"recompute", spelling(config.parallel.recompute)},
      {"pipeline_schedule", config.parallel.schedule == ScheduleKind::GPipe         ? "gpipe"
                            : config.parallel.schedule == ScheduleKind::Interleaved ? "interleaved"
                            : config.parallel.schedule == ScheduleKind::ZeroBubble  ? "zero_bubble"
                                                                                    : "1f1b"},
      {"micro_batches", std::to_string(std::max<int64_t>(config.parallel.microBatches, 1))},
      {"virtual_stages", std::to_string(config.parallel.virtualStages)},
      {kStageBalanceKey, spelling(config.parallel.balance)},
      {"bucket_bytes", std::to_string(config.parallel.bucketBytes)},
      {"overlap_grad_reduce", config.parallel.overlapGradReduce ? "true" : "false"},
      {"overlap_param_gather", config.parallel.overlapParamGather ? "true" : "false"},
  };
  return p;
}
