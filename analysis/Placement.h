//===- analysis/Placement.h - where and when an op of the step runs -*- C++ -*-===//
//
// The pipeline passes and their readers (the simulator, the deadlock check,
// the memory planner) share these attribute names:
//
//   pipeline_stage  the pipeline rank (pp coordinate) that runs the op;
//                   absent: every rank runs it
//   virtual_stage   the model chunk's stage (interleaved: chunk c of rank r
//                   is virtual stage c * p + r); absent: = pipeline_stage
//   work            the schedule instruction the op is part of: forward,
//                   backward or weight_grad (zero-bubble's W)
//   micro_batch     the micro-batch of an unrolled op
//
// A module after `pipeline` is rolled: one micro-batch's ops, placed. After
// `unroll-microbatches` it is the whole step in schedule order.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_ANALYSIS_PLACEMENT_H
#define PLANC_ANALYSIS_PLACEMENT_H

#include "ir/IR.h"

#include <string>
#include <unordered_set>

namespace planc {


enum class Work { Forward, Backward, WeightGrad, Optimizer };

/// The op's section of the training step (its phase) refined by its `work`.
inline Work workOf(const ir::Op &op) {
  std::string phase = op.getString("phase"), work = op.getString("work");
  if (phase == "optimizer") return Work::Optimizer;
  if (work == "weight_grad") return Work::WeightGrad;
  if (work == "backward" || (work.empty() && phase == "backward")) return Work::Backward;
  return Work::Forward;
}

/// Values made once per step however many micro-batches run: forward values
/// of parameters alone (a bf16 copy, a transpose, a ZeRO-1/2 gather of the
/// copy). A ZeRO-3 gather (`transient`: released after its use) and
/// anything computed from one are made again in every micro-batch, as FSDP
/// and DeepSpeed gather again for each.
inline std::unordered_set<const ir::Value *> oncePerStepValues(const ir::Module &m) {
  std::unordered_set<const ir::Value *> once(m.params.begin(), m.params.end());
  for (const auto &op : m.ops) {
    if (op->operands.empty() || workOf(*op) != Work::Forward || op->has("transient")) continue;
    bool fromParams = true;
    for (const ir::Value *v : op->operands) fromParams &= once.count(v) > 0;
    if (fromParams) once.insert(op->results.begin(), op->results.end());
  }
  for (const ir::Value *p : m.params) once.erase(p);
  return once;
}

/// A bucketed gradient reduction that runs once per step on the gradients
/// summed over the micro-batches: an all-reduce (DDP's accumulation, of f32
/// main gradients too) or a reduce-scatter the optimizer issues (ZeRO-1 and
/// Megatron's distributed optimizer keep whole gradients until the step); a
/// reduce-scatter in backward (ZeRO-2/3) runs in every micro-batch, so only
/// the shards are accumulated, as DeepSpeed does.
inline bool reducesOncePerStep(const ir::Op &op) {
  return op.has("bucket") && (op.kind != ir::OpKind::ReduceScatter || workOf(op) == Work::Optimizer);
}

inline const char *spelling(Work w) {
  switch (w) {
  case Work::Forward: return "forward";
  case Work::Backward: return "backward";
  case Work::WeightGrad: return "weight_grad";
  case Work::Optimizer: return "optimizer";
  }
  return "";
}

/// The virtual stage of a placed op, or -1 for an op every rank runs.
inline int virtualStageOf(const ir::Op &op) {
  if (op.has("virtual_stage")) return int(op.getInt("virtual_stage"));
  return op.has("pipeline_stage") ? int(op.getInt("pipeline_stage")) : -1;
}

} // namespace planc

#endif
