//===- compiler/TrainOptions.h - a plan's train settings as pass options -*- C++ -*-===//
//
// The passes do not see the frontend's PlanConfig; the driver hands them the
// settings they need as PassOptions, built here from the `train { }` block.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_TRAINOPTIONS_H
#define PLANC_COMPILER_TRAINOPTIONS_H

#include "frontend/Config.h"
#include "passes/Pass.h"

namespace planc {

/// The optimizer pass's keys (passes/OptimizerOptions.h) from the plan's
/// optimizer, schedule, step count and clipping, numbers spelled so that they
/// read back exactly.
PassOptions passOptionsFromConfig(const PlanConfig &config);

} // namespace planc

#endif
