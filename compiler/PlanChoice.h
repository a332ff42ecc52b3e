//===- compiler/PlanChoice.h - one parallel plan of `planc auto` -*- C++ -*-===//
//
// What the search of compiler/AutoPlan.h varies (mesh, ZeRO, sequence
// parallelism, recompute, micro-batch, pipeline schedule, fusion), as one
// value: the --set overrides that make it from a plan, its one-line
// description, the `parallel { }` block that says it, and the plan's text
// with it written in.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_PLANCHOICE_H
#define PLANC_COMPILER_PLANCHOICE_H

#include "frontend/Frontend.h"
#include "ir/PartitionDefaults.h"

#include <string>
#include <vector>

namespace planc {

/// One parallel plan of the search.
struct PlanChoice {
  int64_t dp = 1, tp = 1, pp = 1;
  int64_t zero = defaults::kZeroStage;
  bool sequenceParallel = defaults::kSequenceParallel;
  RecomputePolicy recompute = defaults::kRecompute;
  int64_t microBatch = 1;
  int64_t microBatches = 1; // per step on each dp rank
  ScheduleStyle schedule = defaults::kSchedule;
  int64_t virtualStages = defaults::kVirtualStages;
  FusionPolicy fusion = kDefaultFusion; // the train block's, searched when a plan turns it down

  /// "mesh(dp = 4, pp = 2, tp = 2)": the mesh alone, a family of the search.
  std::string mesh() const;
  /// The --set overrides that make it from the plan (with pp = 1, the
  /// pipeline setting removed: `parallel.pipeline=none`).
  std::vector<std::string> sets() const;
  /// "mesh(dp = 4, tp = 2), zero 1, selective, micro_batch 1" (and the
  /// fusion when it is not the default)
  std::string describe() const;
  /// The `parallel { }` block that says it (micro_batch and fusion are the
  /// train block's: a comment names each that differs from the plan's).
  std::string parallelBlock(int64_t planMicroBatch, FusionPolicy planFusion) const;
};

/// The plan's own parallel settings as a PlanChoice.
PlanChoice currentPlanChoice(const Compilation &c);

/// The plan's text with `choice` written in: its `parallel { }` block
/// replaced (or appended when it has none), and train's micro_batch and
/// fusion set when the choice changes them.
std::string applyPlanChoice(Compilation &c, const PlanChoice &choice);

} // namespace planc

#endif
