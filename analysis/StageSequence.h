//===- analysis/StageSequence.h - what one pipeline rank runs, in order -*- C++ -*-===//
//
// The one derivation of the order a rank runs the placed step in, read by the
// memory planner (analysis/MemoryPlan.h), the communication summary
// (analysis/CommSummary.h) and the execution plan's builder (exec/
// BuildPlan.h), so the three cannot disagree. For pipeline rank s:
//
//  - its compute instructions in schedule order (analysis/PipelineSchedule.h),
//    each running the ops of its virtual stage and work (forward, backward,
//    weight_grad; weight_grad joins backward unless the schedule is
//    zero-bubble) in module order, on the instruction's micro-batch;
//  - values of parameters alone (oncePerStepValues: a bf16 copy, a transpose,
//    a ZeRO-1/2 gather of the copy) are made once, in the first micro-batch,
//    as step-wide values (micro-batch -1);
//  - with more than one micro-batch, a bucketed reduction that runs once per
//    step (reducesOncePerStep) comes right after the last step that writes one
//    of its operands in the last micro-batch (the gradients summed over all);
//  - then the optimizer's ops, in module order;
//  - a rank receives from a peer in the order the peer sends (messages between
//    two ranks match in order, as NCCL's and MPI's do): where a receive would
//    come after a later message's, it moves up to just before that one.
//    Receives read nothing, so moving one up keeps every dependence.
//
// Ops placed on every stage (no pipeline_stage: the optimizer's scalars, a
// one-stage step) run on every rank. A message's tag in micro-batch j is
// tagOf: its tag plus j times the largest tag, so every message of the step
// has its own.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_ANALYSIS_STAGESEQUENCE_H
#define PLANC_ANALYSIS_STAGESEQUENCE_H

#include "analysis/PipelineSchedule.h"
#include "ir/IR.h"
#include "ir/Placement.h"

#include <cstdint>
#include <unordered_set>
#include <vector>

namespace planc::sequence {

/// One op of the placed step run on one micro-batch.
struct SequencedOp {
  const ir::Op *op = nullptr;
  int microBatch = -1; // -1: once per step (values of parameters alone, buckets with m > 1, the optimizer)
  ir::Work work = ir::Work::Forward;
  int chunk = 0;       // the model chunk of its instruction (interleaved schedules)
};

/// What the sequencer knows about the module, computed once for all stages.
class StageSequencer {
public:
  /// `schedule` is the one `m` is placed for (m.schedule, with its stages
  /// the module's pp).
  StageSequencer(const ir::Module &m, const pipeline::PipelineSchedule &schedule);

  /// Pipeline rank `stage`'s ops in the order it runs them, receives not yet
  /// matched to the peers' send order (the memory planner needs no more).
  std::vector<SequencedOp> sequence(int stage) const;
  /// Every rank's, receives in their peers' send order.
  std::vector<std::vector<SequencedOp>> sequenceAll() const;

  /// The tag of a send or recv in micro-batch `microBatch`.
  int64_t tagOf(const ir::Op &op, int microBatch) const;
  int64_t maxTag() const { return largestTag; }
  int microBatches() const { return schedule.options.microBatches; }
  const pipeline::PipelineSchedule &scheduleOf() const { return schedule; }

private:
  const ir::Module &m;
  const pipeline::PipelineSchedule &schedule;
  std::unordered_set<const ir::Value *> once;
  int64_t largestTag = 0;
  /// Per op of m, in module order: the placement sequencing reads, looked
  /// up once rather than once per stage (attributes are string-keyed, and a
  /// large model has tens of thousands of ops).
  struct OpPlace {
    bool everyStage;  // no pipeline_stage: runs on every stage
    int64_t stage;
    ir::Work work;
    int virtualStage; // -1: none
    bool oncePerStep; // a gradient reduction made once per step (reducesOncePerStep)
    bool stepWide;    // its result is made once per step
  };
  std::vector<OpPlace> places;
};

} // namespace planc::sequence

#endif
