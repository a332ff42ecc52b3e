//===- compiler/TrainOptions.cpp - a plan's settings as pass options -----===//

#include "compiler/TrainOptions.h"

using namespace planc;

PipelineScheduleSpec planc::pipelineSpecOf(const ParallelConfig &par) {
  PipelineScheduleSpec s;
  s.style = par.schedule.value_or(s.style);
  s.microBatches = std::max<int64_t>(par.microBatches, 1);
  s.virtualStages = par.virtualStages;
  s.balance = par.balance;
  return s;
}

PassPipelineOptions planc::passOptionsFromConfig(const PlanConfig &config) {
  const TrainConfig &t = config.train;
  const OptimizerConfig &o = t.optimizer;
  PassPipelineOptions p;
  OptimizerOptions &opt = p.training.optimizer;
  opt.kind = o.kind;
  opt.lr = o.lr;
  opt.beta1 = o.beta1;
  opt.beta2 = o.beta2;
  opt.eps = o.eps;
  opt.weightDecay = o.weightDecay;
  opt.weightDecayParams = o.weightDecayParams;
  opt.momentum = o.momentum;
  opt.nesterov = o.nesterov;
  opt.warmup = o.warmup;
  opt.decay = o.decay;
  opt.minLr = o.minLr;
  opt.totalSteps = t.steps;
  opt.clipGradNorm = t.clipGradNorm;
  opt.blockSize = o.blockSize;

  // The frontend accepts only dtype names the IR knows (fp8 compute is not
  // lowered by the mixed-precision pass, which says so).
  PrecisionOptions &prec = p.training.precision;
  const std::string &compute = t.precision.compute;
  prec.compute = ir::parseDType(compute).value_or(ir::DType::F32);
  // Gradients in the dtype written, else in a narrow compute dtype, else f32.
  prec.grads = ir::parseDType(!t.precision.grads.empty()               ? t.precision.grads
                              : compute == "bf16" || compute == "f16" ? compute
                                                                      : "f32");
  prec.lossScaling = t.precision.lossScaling;
  prec.lossScaleInit = t.precision.initialScale;
  prec.lossScaleWindow = t.precision.growthInterval;

  // Rank 0 leaves the model as written.
  p.training.lora.rank = t.adapters.kind == AdapterKind::LoRA ? t.adapters.rank : 0;
  p.training.lora.alpha = t.adapters.alpha;
  p.training.fusion.policy = t.fusion;

  const ParallelConfig &par = config.parallel;
  PartitionOptions &part = p.partition;
  part.zeroStage = par.zeroStage;
  part.sequenceParallel = par.sequenceParallel;
  part.recompute = par.recompute;
  part.bucketBytes = par.bucketBytes;
  part.overlapGradReduce = par.overlapGradReduce;
  part.overlapParamGather = par.overlapParamGather;
  part.pipeline = pipelineSpecOf(par);
  return p;
}

runtime::DataSpec planc::dataSpecOf(const DataConfig &d) {
  runtime::DataSpec spec;
  spec.kind = d.kind == DataKind::Text     ? runtime::DataSpec::Kind::Text
              : d.kind == DataKind::Tokens ? runtime::DataSpec::Kind::Tokens
                                           : runtime::DataSpec::Kind::Synthetic;
  spec.path = d.path;
  spec.tokenDType = d.tokenDtype == "u32" ? runtime::ElementType::U32 : runtime::ElementType::U16;
  return spec;
}

pipeline::ScheduleOptions planc::scheduleOfPlan(const ParallelConfig &par) {
  return scheduleOptionsOf(pipelineSpecOf(par), par.size(MeshAxis::PP));
}
