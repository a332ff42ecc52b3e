//===- compiler/PlanAnalysis.h - a plan's memory and cost -------*- C++ -*-===//
//
// What `planc check` judges and `planc auto` ranks: the checked plan
// partitioned, its memory planned and its step timed, with the costs that
// are not memory (bytes sent, recompute FLOPs, the bubble). Both the check
// (compiler/MemoryCheck.h) and the search (compiler/AutoPlan.h) read it;
// neither is needed to make it.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_PLANANALYSIS_H
#define PLANC_COMPILER_PLANANALYSIS_H

#include "analysis/CostModel.h"
#include "analysis/MemoryPlan.h"
#include "frontend/Frontend.h"

#include "llvm/Support/Error.h"

namespace planc {

/// What a plan costs besides memory, per training step, on its busiest rank.
struct PlanCost {
  double commBytes = 0;      // bytes one rank sends (ring formulas, analysis/CommSummary.h)
  double recomputeFlops = 0; // FLOPs of the forward ops recompute repeats in backward
  double bubble = 0;         // the pipeline schedule's idle fraction (0 without pp)
  double stepSeconds = 0;    // the cost model's step time (analysis/CostModel.h)
};

/// A plan's memory and cost.
struct PlanAnalysis {
  memory::MemoryPlan memory;
  PlanCost cost;
  cost::StepCost time;   // the cost model's prediction
  cost::Hardware hardware; // what it assumed
  /// Bytes of the activations one micro-batch saves for backward on one
  /// rank (local blocks), every pipeline stage's together; values of
  /// parameters alone (their narrow copies) are parameters, not counted.
  double savedActivationBytes = 0;
  size_t ops = 0; // of the placed step: what analysing the plan again costs
  uint64_t peakArena() const { return memory.stages.empty() ? 0 : memory.peakStage().arena; }
};

/// Partitions the checked plan of `c`, plans its memory and measures its cost.
/// Errors are messages for the user (a plan that cannot be partitioned).
/// verifyEach: verify the IR after every pass (PassManagerOptions::verifyEach).
/// calibration: the device's (none: its kind's defaults, compiler/StepTime.h).
llvm::Expected<PlanAnalysis> analyzePlan(Compilation &c, bool verifyEach = true,
                                         const cost::Calibration *calibration = nullptr);

} // namespace planc

#endif
