//===- passes/PipelineAttrs.h - the pipeline settings of the pass options -*- C++ -*-===//
//
// The placement the pipeline passes write is read through
// analysis/Placement.h; this header reads the schedule and the chunk balance
// from the pass options.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_PASSES_PIPELINEATTRS_H
#define PLANC_PASSES_PIPELINEATTRS_H

#include "analysis/InstructionTimes.h"
#include "analysis/PipelineSchedule.h"
#include "analysis/Placement.h"
#include "ir/IR.h"
#include "ir/StageBalance.h"
#include "passes/Pass.h"

#include <cstdlib>

namespace planc {

/// The schedule the options name, for a module with `pp` pipeline ranks.
inline pipeline::ScheduleOptions scheduleOptionsFrom(const PassOptions &o, int64_t pp) {
  pipeline::ScheduleOptions so;
  std::string style = o.get("pipeline_schedule", "1f1b");
  so.style = style == "gpipe"         ? pipeline::ScheduleStyle::GPipe
             : style == "interleaved" ? pipeline::ScheduleStyle::Interleaved
             : style == "zero_bubble" ? pipeline::ScheduleStyle::ZeroBubble
                                      : pipeline::ScheduleStyle::OneFOneB;
  so.stages = int(pp);
  so.microBatches = std::max(1, std::atoi(o.get("micro_batches", "1").c_str()));
  so.virtualStages =
      so.style == pipeline::ScheduleStyle::Interleaved ? std::max(1, std::atoi(o.get("virtual_stages", "1").c_str())) : 1;
  if (so.stages == 1 && so.style == pipeline::ScheduleStyle::Interleaved) so.style = pipeline::ScheduleStyle::OneFOneB;
  return so;
}

/// The chunk balance the options name (ir/StageBalance.h).
inline StageBalance stageBalanceFrom(const PassOptions &o) {
  return stageBalanceNamed(o.get(kStageBalanceKey, spelling(StageBalance::Layers)));
}

} // namespace planc

#endif
