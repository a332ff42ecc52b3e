//===- passes/PartitionOptions.h - what the partitioning passes are told -*- C++ -*-===//
//
// The settings of the passes that partition a training step over its mesh
// (recompute, zero, propagate-sharding, sp-regather, param-prefetch,
// grad-buckets, pipeline, check-deadlock), typed, with the defaults the
// frontend's settings share (ir/PartitionDefaults.h), and the one mapping
// from the pipeline settings to the schedule they name.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_PASSES_PARTITIONOPTIONS_H
#define PLANC_PASSES_PARTITIONOPTIONS_H

#include "analysis/PipelineSchedule.h"
#include "ir/PartitionDefaults.h"
#include "ir/TrainingKinds.h"

#include <cstdint>

namespace planc {

/// The pipeline as a plan writes it; the stage count is the mesh's pp.
struct PipelineScheduleSpec {
  ScheduleStyle style = defaults::kSchedule;
  int64_t microBatches = 1;
  int64_t virtualStages = defaults::kVirtualStages; // model chunks per rank (interleaved only)
  StageBalance balance = defaults::kBalance;
};

struct PartitionOptions {
  int64_t zeroStage = defaults::kZeroStage;           // 0-3
  bool sequenceParallel = defaults::kSequenceParallel;
  RecomputePolicy recompute = defaults::kRecompute;
  uint64_t bucketBytes = defaults::kBucketBytes;       // gradient reduction buckets
  bool overlapGradReduce = defaults::kOverlapGradReduce;   // buckets issued during backward
  bool overlapParamGather = defaults::kOverlapParamGather; // ZeRO-3 prefetch
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
