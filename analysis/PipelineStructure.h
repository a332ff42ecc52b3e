//===- analysis/PipelineStructure.h - is the work on the right stage? -*- C++ -*-===//
//
// The structural half of `planc verify`: numbers alone cannot tell a
// correct pipeline from one that computes the same step with work on the
// wrong stage (a layer's backward on stage 0, a prefetch that dragged
// forward compute to the next stage, an activation shipped over three
// stages). This check reads a partitioned, unrolled step (after
// `pipeline` and `unroll-microbatches`) and states what a pipeline
// schedule implies, independently of how the partitioner decided it:
//
//  1. Layers. Every op of a repeated layer (forward, backward, weight
//     gradient, and the collectives that serve them; not send/recv) runs
//     on one virtual stage, the layer's; the layers of a `repeat` are on
//     stages in their order, and every stage has at least one.
//  2. Ops outside the layers. A forward op that depends on a layer's output
//     (the head, the loss) runs on the last stage; one a layer depends on
//     (the embedding) on the first. Its backward likewise: backward work
//     that depends on a layer's backward (the embedding's gradient) on the
//     first stage, the rest (the loss's and the head's) on the last. Ops of
//     parameters alone (a weight's cast) may run on every stage that reads
//     them.
//  3. Activation messages. In forward each micro-batch sends exactly one
//     message from each virtual stage to the next (pp * v - 1 in all), in
//     backward exactly one back; none skips a stage.
//  4. The optimizer phase. The only messages between stages are gradients
//     of a parameter that several stages read (a tied embedding), summed
//     once per step.
//
// Each violation names the op, its layer path, its work and micro-batch,
// and the stages involved.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_ANALYSIS_PIPELINESTRUCTURE_H
#define PLANC_ANALYSIS_PIPELINESTRUCTURE_H

#include "ir/IR.h"
#include "analysis/PipelineSchedule.h"

#include <string>
#include <vector>

namespace planc {

/// The violations of a partitioned, unrolled step with `so.stages` pipeline
/// ranks of `so.virtualStages` chunks each; empty when the structure is
/// right (and always with one stage).
std::vector<std::string> checkPipelineStructure(const ir::Module &m, const pipeline::ScheduleOptions &so);

} // namespace planc

#endif
