//===- analysis/StepSchedule.h - the schedule a placed step follows -*- C++ -*-===//
//
// The `pipeline` pass attaches the schedule it cut the step for to the module
// (Module::schedule), once; the compiler's stages, the deadlock check, the
// memory planner and the execution plan's builder read it here, so none
// rebuilds it with a fallback of its own. A module read from text carries
// none (its textual form does not print it): its reader names what stands
// in, by default one micro-batch of 1F1B. The stages are the module's pp
// either way.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_ANALYSIS_STEPSCHEDULE_H
#define PLANC_ANALYSIS_STEPSCHEDULE_H

#include "ir/IR.h"

namespace planc::pipeline {

inline ScheduleOptions scheduleOf(const ir::Module &m, const ScheduleOptions &withoutOne = {}) {
  ScheduleOptions so = m.schedule.value_or(withoutOne);
  so.stages = int(m.mesh[unsigned(MeshAxis::PP)]);
  return so;
}

} // namespace planc::pipeline

#endif
