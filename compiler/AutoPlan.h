//===- compiler/AutoPlan.h - `planc auto`: search the plans of a cluster -*- C++ -*-===//
//
// Searches the parallel plans of the plan's cluster for the fastest that
// fits: mesh (dp, tp, pp), ZeRO stage, sequence parallelism, recompute,
// micro-batch size and the pipeline schedule (1F1B, interleaved, zero
// bubble). A candidate is not a recompilation:
//
//  1. profiles: for each distinct (tp, sequence parallel, recompute) the
//     plan is compiled and analysed (memory plan and cost model) as a
//     one-stage, one-replica step of one sample, with its repeated layers
//     cut to one and to two (the `let` the top-level `repeat` counts); the
//     difference is one layer's memory by category and its forward and
//     backward time, the rest the ends' (embedding, head, loss);
//  2. estimates: every candidate's stages are assembled from the profile
//     in closed form (model states divided by ZeRO over dp, activations
//     times the micro-batches the schedule keeps in flight, the data-
//     parallel collectives by the α-β model, the schedule's bubble from
//     its replay, cached per (pp, micro-batches, schedule));
//  3. the best estimates are compiled and analysed in full, as `planc
//     check` would, and ranked by that predicted step time among those
//     whose planned arena fits.
//
// Families of candidates it rejects (a tp the model does not divide, a
// mesh whose every candidate is over budget, one predicted slower) get a
// line each. docs/cost.md documents the search.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_AUTOPLAN_H
#define PLANC_COMPILER_AUTOPLAN_H

#include "analysis/CostModel.h"
#include "frontend/Frontend.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace planc {

/// One parallel plan of the search.
struct PlanChoice {
  int64_t dp = 1, tp = 1, pp = 1;
  int64_t zero = 0;
  bool sequenceParallel = false;
  RecomputePolicy recompute = RecomputePolicy::None;
  int64_t microBatch = 1;
  int64_t microBatches = 1; // per step on each dp rank
  ScheduleStyle schedule = ScheduleStyle::OneFOneB;
  int64_t virtualStages = 1;

  /// The --set overrides that make it from the plan.
  std::vector<std::string> sets() const;
  /// "mesh(dp = 4, tp = 2), zero 1, selective, micro_batch 1"
  std::string describe() const;
  /// The `parallel { }` block that says it (micro_batch is the train
  /// block's: a comment names it when it differs from the plan's).
  std::string parallelBlock(int64_t planMicroBatch) const;
};

struct AutoCandidate {
  PlanChoice plan;
  double estimatedSeconds = 0;   // closed form
  uint64_t estimatedPeak = 0;
  bool analysed = false;         // compiled and analysed in full
  bool valid = true;             // the full compilation accepted it
  std::string invalidReason;
  double stepSeconds = 0;        // the cost model on the full compilation
  uint64_t peakArena = 0;
  double mfu = 0;
  bool fits = false;
  double commBytes = 0, recomputeFlops = 0, bubble = 0; // PlanCost of the full analysis
};

struct AutoOptions {
  std::optional<uint64_t> budgetBytes;            // none: the device's memory
  const cost::Calibration *calibration = nullptr; // none: the device kind's defaults
  size_t top = 5;          // candidates printed
  size_t fullAnalyses = 5; // fitting best estimates compiled and analysed in full
  bool analyseCurrent = true; // also analyse the plan as written (AutoResult::current)
  /// Progress lines (profiles, estimates, analyses); null for silence.
  llvm::raw_ostream *progress = nullptr;
};

struct AutoResult {
  uint64_t budget = 0;
  std::vector<AutoCandidate> analysed;  // fitting first, fastest first; then the rest
  std::vector<std::string> rejected;    // one line per rejected family
  std::optional<AutoCandidate> current; // the plan as written, analysed in full
  size_t candidates = 0, profiles = 0;
  double seconds = 0;
  /// Every estimated candidate's memory and step (the report's frontier).
  struct Point {
    uint64_t peak = 0;
    double seconds = 0;
  };
  std::vector<Point> estimates;
  const AutoCandidate *best() const {
    return !analysed.empty() && analysed.front().fits ? &analysed.front() : nullptr;
  }
};

/// The plan's own parallel settings as a PlanChoice.
PlanChoice currentPlanChoice(const Compilation &c);

/// Searches the plans of the checked plan `c`'s cluster. Errors: a model
/// the search cannot profile (its own compilation fails).
llvm::Expected<AutoResult> searchPlans(Compilation &c, const AutoOptions &options);

/// The top candidates with memory, predicted step time and MFU, the
/// rejected families, and what the search did.
void printAutoResult(const AutoResult &r, size_t top, llvm::raw_ostream &os);

/// The plan's text with `choice` written in: its `parallel { }` block
/// replaced (or appended when it has none), and train's micro_batch set
/// when the choice changes it.
std::string applyPlanChoice(Compilation &c, const PlanChoice &choice);

} // namespace planc

#endif
