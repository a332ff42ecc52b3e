//===- compiler/AutoPlan.h - `planc auto`: search the plans of a cluster -*- C++ -*-===//
//
// Searches the parallel plans of the plan's cluster for the fastest that
// fits: mesh (dp, tp, pp), ZeRO stage, sequence parallelism, recompute,
// micro-batch size and the pipeline schedule (1F1B, interleaved, zero
// bubble), and fusion where the plan turns it down. The mesh written in the
// plan is what the search replaces: its size need not be the cluster's. A
// candidate is not a recompilation:
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
//     whose planned arena fits;
//  4. when the plan as written is over budget, the changes `planc check`
//     proposes (compiler/MemoryFixes.h: ZeRO, recompute, tp, pp, micro-
//     batch, ... each family's strongest first), and when none of them fits
//     their combinations, are analysed in full too and ranked with the rest:
//     `planc check` shows the same analyses as its fixes, so its first fix
//     that fits is the search's best.
//
// Families of candidates it rejects (a tp the model does not divide, a
// mesh whose every candidate is over budget, one predicted slower) get a
// line each. docs/cost.md documents the search.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_AUTOPLAN_H
#define PLANC_COMPILER_AUTOPLAN_H

#include "analysis/CostModel.h"
#include "compiler/MemoryFixes.h"
#include "compiler/PlanAnalysis.h"
#include "compiler/PlanChoice.h"
#include "frontend/Frontend.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace planc {

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
  int seed = -1; // a change of the plan as written: its index in AutoResult::seeds (-1: an estimate's)
};

struct AutoOptions {
  std::optional<uint64_t> budgetBytes;            // none: the device's memory
  const cost::Calibration *calibration = nullptr; // none: the device kind's defaults
  size_t top = 5;          // candidates printed
  size_t fullAnalyses = 5; // fitting best estimates compiled and analysed in full
  /// The plan as written, already analysed (planc check's); null: the
  /// search analyses it (AutoResult::current) when its mesh covers the
  /// cluster.
  const PlanAnalysis *current = nullptr;
  /// Progress lines (profiles, estimates, analyses); null for silence.
  llvm::raw_ostream *progress = nullptr;
};

struct AutoResult {
  uint64_t budget = 0;
  std::vector<AutoCandidate> analysed;  // fitting first, fastest first; then the rest
  std::vector<std::string> rejected;    // one line per rejected family
  std::optional<AutoCandidate> current; // the plan as written, analysed in full
  std::string currentNotAnalysed;       // why not, when it was not
  /// Over budget as written: the changes analysed besides the estimates
  /// (the exact fixes `planc check` proposes, then their combinations),
  /// unanalysed; candidates point here by index.
  std::vector<MemoryFix> seeds;
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

/// Searches the plans of the checked plan `c`'s cluster. Errors: a model
/// the search cannot profile (its own compilation fails).
llvm::Expected<AutoResult> searchPlans(Compilation &c, const AutoOptions &options);

/// The top candidates with memory, predicted step time and MFU, the
/// rejected families, and what the search did.
void printAutoResult(const AutoResult &r, size_t top, llvm::raw_ostream &os);

} // namespace planc

#endif
