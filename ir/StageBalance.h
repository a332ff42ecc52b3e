//===- ir/StageBalance.h - how pipeline chunks are balanced -*- C++ -*-===//
//
// The policy by which `pipeline` (passes/PipelinePartition.cpp) cuts the
// repeated layers into p x v contiguous chunks, in one place for the pass and
// for the plan's `parallel.balance` setting that chooses it (pass option
// "stage_balance"; the spellings are in ir/TrainingKinds.h):
//
//   layers  Megatron's even split of the layer count: L / (p x v) layers per
//           chunk, the first L mod (p x v) chunks one more (the default)
//   flops   the cut that minimises the largest chunk's forward FLOPs
//
// Either way the ops before the first layer (the embedding) run on the first
// chunk and those after the last (the head and loss) on the last.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_STAGEBALANCE_H
#define PLANC_IR_STAGEBALANCE_H

namespace planc {

enum class StageBalance { Layers, Flops };

} // namespace planc

#endif
