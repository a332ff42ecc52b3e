//===- analysis/Placement.h - what placement means to the step's readers -*- C++ -*-===//
//
// The readers of a placed step (the simulator, the deadlock check, the memory
// planner) ask ir/Placement.h where and when an op runs; here is what they
// derive from it: which values and reductions happen once per step however
// many micro-batches run.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_ANALYSIS_PLACEMENT_H
#define PLANC_ANALYSIS_PLACEMENT_H

#include "ir/IR.h"
#include "ir/Placement.h"

#include <string>
#include <unordered_set>

namespace planc {

using ir::Work;
using ir::workOf;
using ir::virtualStageOf;

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

/// Whether `op` runs once per step however many micro-batches run: the
/// optimizer's work, a bucketed reduction of the summed gradients
/// (reducesOncePerStep), or a value of parameters alone (`once`:
/// oncePerStepValues of its module). The cost model and the memory check
/// count ops by it; analysis/StageSequence.h places the same three once.
inline bool runsOncePerStep(const ir::Op &op, const std::unordered_set<const ir::Value *> &once) {
  return workOf(op) == Work::Optimizer || reducesOncePerStep(op) || (!op.results.empty() && once.count(op.results[0]));
}

} // namespace planc

#endif
