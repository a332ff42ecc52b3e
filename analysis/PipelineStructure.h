//===- analysis/PipelineStructure.h - is the work on the right stage? -*- C++ -*-===//
//
// The structural half of `planc verify`: numbers alone cannot tell a
// correct pipeline from one that computes the same step with work on the
// wrong stage (a layer's backward on stage 0, a prefetch that dragged
// forward compute to the next stage, an activation shipped over three
// stages). This check reads what every pipeline rank runs, every
// micro-batch of it (a StepView: the execution plan's steps, exec/
// PlanStructure.h, or a module whose ops carry their micro-batch, as
// hand-written tests do), and states what a pipeline schedule implies,
// independently of how the partitioner decided it:
//
//  1. Layers. Every op of a repeated layer (forward, backward, weight
//     gradient, and the collectives that serve them; not send/recv) runs
//     on one virtual stage, the layer's (where most of its forward compute
//     runs); the layers of a `repeat` are on stages in their order, and
//     every stage has at least one.
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

#include "analysis/PipelineSchedule.h"
#include "ir/IR.h"
#include "ir/Placement.h"

#include <string>
#include <vector>

namespace planc {

/// What the check reads: every op each pipeline rank runs, on each
/// micro-batch, as a graph of values. A value is an id; a parameter has
/// one id on every stage that holds it (so "which stages read it" can be
/// asked), any other value one per place it is made.
struct StepView {
  struct Node {
    ir::OpKind kind = ir::OpKind::NumOps;
    ir::Work work = ir::Work::Forward;
    int virtualStage = -1;  // -1: run by every rank
    int stage = -1;         // pipeline rank; -1: every rank
    int microBatch = -1;    // -1: once per step
    std::string path;       // the layer path
    std::string name;       // the first result's (or a send's operand's) name, for messages
    std::vector<int64_t> operands, results; // value ids
    int64_t tag = -1;       // send, recv: messages match by tag
  };
  std::vector<Node> nodes;
  std::vector<Shape> shapes;        // by value id
  std::vector<bool> isParam, isInput;   // by value id
  /// Each parameter gradient the step reports: its value and the
  /// parameter's id.
  std::vector<std::pair<int64_t, int64_t>> gradients;

  int64_t addValue(const Shape &shape, bool param = false, bool input = false) {
    shapes.push_back(shape);
    isParam.push_back(param);
    isInput.push_back(input);
    return int64_t(shapes.size()) - 1;
  }
};

/// The view of a module whose ops are placed and carry their micro-batch
/// (`micro_batch` attributes, every micro-batch written out), as the
/// hand-written steps of the tests are.
StepView stepViewOf(const ir::Module &m);

/// The violations of a step with `so.stages` pipeline ranks of
/// `so.virtualStages` chunks each; empty when the structure is right (and
/// always with one stage).
std::vector<std::string> checkPipelineStructure(const StepView &step, const pipeline::ScheduleOptions &so);

} // namespace planc

#endif
