//===- compiler/TrainOptions.h - a plan's settings as pass options -*- C++ -*-===//
//
// The passes do not see the frontend's PlanConfig; the driver converts the
// settings they read, once, into their typed options (passes/TrainingOptions.h,
// passes/PartitionOptions.h).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_TRAINOPTIONS_H
#define PLANC_COMPILER_TRAINOPTIONS_H

#include "frontend/Config.h"
#include "passes/PartitionOptions.h"
#include "passes/PassPipelineOptions.h"
#include "runtime/Data.h"

namespace planc {

/// Every pass's options from the plan's `train` and `parallel` blocks.
PassPipelineOptions passOptionsFromConfig(const PlanConfig &config);

/// The pipeline the `parallel` block writes (1f1b when none is written).
PipelineScheduleSpec pipelineSpecOf(const ParallelConfig &par);

/// The schedule of the parallel block `par` (the one the memory planner
/// follows): its style, micro-batches, model chunks and pipeline ranks.
pipeline::ScheduleOptions scheduleOfPlan(const ParallelConfig &par);

/// The data sources' spec of the `data` setting (the interpreter's run and
/// compiled executables read the same).
runtime::DataSpec dataSpecOf(const DataConfig &d);

} // namespace planc

#endif
