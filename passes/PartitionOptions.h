//===- passes/PartitionOptions.h - what the partitioning passes are told -*- C++ -*-===//
//
// The settings of the passes that partition a training step over its mesh
// (recompute, zero, propagate-sharding, sp-regather, param-prefetch,
// grad-buckets, pipeline, check-deadlock), typed, each
// default written here once, and the one mapping from the pipeline settings
// to the schedule they name.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_PASSES_PARTITIONOPTIONS_H
#define PLANC_PASSES_PARTITIONOPTIONS_H

#include "analysis/PipelineSchedule.h"
#include "ir/TrainingKinds.h"

#include <cstdint>

namespace planc {

/// The pipeline as a plan writes it; the stage count is the mesh's pp.
struct PipelineScheduleSpec {
  ScheduleStyle style = ScheduleStyle::OneFOneB;
  int64_t microBatches = 1;
  int64_t virtualStages = 1;            // model chunks per rank (interleaved only)
  StageBalance balance = StageBalance::Layers;
};

struct PartitionOptions {
  int64_t zeroStage = 0;                // 0-3
  bool sequenceParallel = false;
  RecomputePolicy recompute = RecomputePolicy::None;
  uint64_t bucketBytes = 25ull << 20;   // gradient reduction buckets
  bool overlapGradReduce = true;        // buckets issued during backward
  bool overlapParamGather = true;       // ZeRO-3 prefetch
  PipelineScheduleSpec pipeline;
};

/// The schedule `spec` names for a module with `pp` pipeline ranks: at least
/// one micro-batch; chunks only when interleaved, and interleaving only with
/// more than one stage.
inline pipeline::ScheduleOptions scheduleOptionsOf(const PipelineScheduleSpec &spec, int64_t pp) {
  pipeline::ScheduleOptions so;
  so.style = spec.style;
  so.stages = int(pp);
  so.microBatches = int(std::max<int64_t>(spec.microBatches, 1));
  so.virtualStages = so.style == ScheduleStyle::Interleaved ? int(std::max<int64_t>(spec.virtualStages, 1)) : 1;
  if (so.stages == 1 && so.style == ScheduleStyle::Interleaved) so.style = ScheduleStyle::OneFOneB;
  return so;
}

} // namespace planc

#endif
