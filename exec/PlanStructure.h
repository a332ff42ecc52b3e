//===- exec/PlanStructure.h - the structural check on what the ranks run -*- C++ -*-===//
//
// The execution plan as the structural check of a pipeline reads it
// (analysis/PipelineStructure.h): every step of every program a node on its
// stage (its virtual stage the step's chunk's), every micro-batch as the
// schedule lays it out, values the buffers. A parameter's buffer is one
// value on every stage that holds it, so the check can ask which stages read
// a parameter; every other buffer is a value of its own program. Messages
// match by their tags, which are unique in a step. So `planc verify` judges
// the structure of exactly what the backends run.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_EXEC_PLANSTRUCTURE_H
#define PLANC_EXEC_PLANSTRUCTURE_H

#include "analysis/PipelineStructure.h"
#include "exec/ExecutionPlan.h"

#include <string>
#include <vector>

namespace planc::exec {

StepView stepViewOf(const ExecutionPlan &plan);

/// checkPipelineStructure on the plan, with the plan's own schedule.
std::vector<std::string> checkPlanStructure(const ExecutionPlan &plan);

} // namespace planc::exec

#endif
