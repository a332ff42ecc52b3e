//===- ir/PartitionDefaults.h - the partitioning settings' defaults -*- C++ -*-===//
//
// Every default of the parallel settings, written once: what the frontend's
// ParallelConfig holds for a setting the plan does not write (frontend/
// Config.h) and what a partitioning pass told nothing uses (passes/
// PartitionOptions.h). Here, beside the settings' enums, because neither
// of the two may include the other.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_PARTITIONDEFAULTS_H
#define PLANC_IR_PARTITIONDEFAULTS_H

#include "ir/StageBalance.h"
#include "ir/TrainingKinds.h"

#include <cstdint>

namespace planc::defaults {

constexpr int64_t kZeroStage = 0;
constexpr bool kSequenceParallel = false;
constexpr RecomputePolicy kRecompute = RecomputePolicy::None;
constexpr uint64_t kBucketBytes = 25ull << 20;    // gradient reduction buckets
constexpr bool kOverlapGradReduce = true;         // buckets issued during backward
constexpr bool kOverlapParamGather = true;        // ZeRO-3 prefetch
constexpr ScheduleStyle kSchedule = ScheduleStyle::OneFOneB; // with pp > 1
constexpr int64_t kVirtualStages = 1;             // model chunks per rank (interleaved only)
constexpr StageBalance kBalance = StageBalance::Layers;

} // namespace planc::defaults

#endif
