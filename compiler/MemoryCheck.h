//===- compiler/MemoryCheck.h - the memory ledger of `planc check` -*- C++ -*-===//
//
// Does the plan fit? `checkMemory` plans the checked plan's memory
// (compiler/Ledger.h), compares the peak rank's arena with the budget (the
// device's memory, or one the caller gives) and reports, as diagnostics on
// the plan's own lines:
//
//  - over budget: an error at the setting the best fix changes, with the
//    peak rank's breakdown, where it peaks, and ranked fixes. Every fix is a
//    set of `--set` overrides (a higher ZeRO stage, recompute, a larger tp or
//    pp, a smaller micro-batch, sequence parallelism, 8-bit Adam) applied to
//    a fresh compilation of the same text and analysed again from the plan
//    checks on, so its new peak and its price (communication, recompute
//    FLOPs, pipeline bubble) are measured, never estimated;
//  - under 5% headroom: a warning at the line the budget comes from.
//
// The driver prints the result (`printMemoryCheck`, `printMemoryCheckJson`);
// docs/memory.md documents both and the ranking.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_MEMORYCHECK_H
#define PLANC_COMPILER_MEMORYCHECK_H

#include "frontend/Frontend.h"
#include "analysis/CostModel.h"
#include "analysis/MemoryPlan.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

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

/// One change of the plan that may make it fit.
struct MemoryFix {
  std::string family;              // what it changes: "zero", "recompute", "tp", "pp", "micro_batch", ...
  std::string change;              // "zero = 3", "mesh(dp = 4, tp = 2)": as the plan would say it
  std::vector<std::string> sets;   // the --set overrides that make it: "parallel.zero=3"
  std::vector<FixIt> edits;        // the same as edits of the main file (empty: a setting not in it)
  bool changesTraining = false;    // trains something else (LoRA fine-tunes adapters only)
  bool changesNumerics = false;    // trains the same model with other numerics (8-bit Adam's moments)
  llvm::SMRange decides;           // the setting it changes (or its block's header; may be invalid)
  // Measured on the changed plan:
  uint64_t peakArena = 0;
  bool fits = false;
  bool lowHeadroom = false;        // fits, but with less headroom than the check wants
  double stepSeconds = 0;          // the changed plan's predicted step time
  PlanCost extra;                  // the changed plan's cost minus the current one's
};

/// The changes worth trying on the checked plan of `c`, not yet analysed:
/// by family (ZeRO, recompute, tp, pp, micro-batch, sequence parallelism,
/// fusion, the optimizer's states, adapters), each family's strongest
/// change first (ZeRO-3, full recompute, the largest tp or pp, the smallest
/// micro-batch, every fusion).
std::vector<MemoryFix> proposeMemoryFixes(Compilation &c);

/// At most `allowed` of the proposed fixes, but at least one of each family:
/// the first (strongest) change of every family, then the second of every
/// family, and so on; kept in the order proposed.
std::vector<MemoryFix> selectMemoryFixes(std::vector<MemoryFix> proposed, size_t allowed);

/// How many candidate plans a check analyses for a plan whose placed step
/// has `planOps` ops: each costs about what the plan's own analysis did, so
/// about 25,000 ops of analysis in all (at least one).
size_t memoryFixBudget(size_t planOps);

/// The fixes a check analyses (and `planc auto`, when the plan as written
/// is over budget): selectMemoryFixes of the proposals, memoryFixBudget of
/// them.
std::vector<MemoryFix> memoryFixCandidates(Compilation &c, size_t planOps);

/// When no single fix fits: combinations of the analysed fixes, `size` at a
/// time, from the best fix of each setting (the smallest peak), the
/// `closest` settings only ("zero = 3 and recompute full"). Not analysed
/// yet: each one's peakArena is the best of its parts', which it must beat.
std::vector<MemoryFix> combineMemoryFixes(std::vector<MemoryFix> analysed, size_t closest, size_t size);

/// Orders fixes best first: those that fit, the exact ones first (8-bit
/// Adam, which rounds the moments, after them, and LoRA, which fine-tunes
/// adapters instead, last), by the shortest predicted step, then fewest extra
/// bytes sent per rank, then fewest extra recompute FLOPs, then the smallest
/// bubble growth, then the smallest peak; then those that do not fit, by
/// smallest peak.
/// Stable: equal fixes keep the order they were proposed in.
void rankMemoryFixes(std::vector<MemoryFix> &fixes);

enum class MemoryVerdict { Unknown, Fits, LowHeadroom, OverBudget };
const char *spelling(MemoryVerdict v); // "unknown", "fits", "low_headroom", "over_budget"

struct MemoryCheckOptions {
  std::optional<uint64_t> budgetBytes; // none: the device's memory
  /// Where "re-checking N candidate plans..." goes when that takes long (or
  /// always, with progressAlways: a terminal); null for silence.
  llvm::raw_ostream *progress = nullptr;
  bool progressAlways = false;
  /// Headroom under this fraction of the budget is warned about.
  double headroomFraction = 0.05;
  bool verifyEach = true; // PassManagerOptions::verifyEach, for the partitioning
  /// The device's calibration for the step-time prediction; null: the
  /// defaults of its kind.
  const cost::Calibration *calibration = nullptr;
};

struct MemoryCheckResult {
  PlanAnalysis analysis;
  uint64_t budget = 0;           // 0: unknown
  uint64_t deviceBytes = 0;      // the device's memory (the budget unless --budget); 0: unknown
  double headroomFraction = 0;   // below this share of the budget free, a fit is low on headroom
  bool budgetFromOption = false; // --budget rather than the device
  MemoryVerdict verdict = MemoryVerdict::Unknown;
  std::vector<MemoryFix> fixes;  // over budget: every valid fix, ranked
};

/// Analyses the checked plan of `c` and reports over-budget and low-headroom
/// diagnostics to `c`'s engine. The result's verdict says which.
llvm::Expected<MemoryCheckResult> checkMemory(Compilation &c, const MemoryCheckOptions &options = {});

/// The ledger table, then one line with the verdict.
void printMemoryCheck(const MemoryCheckResult &r, llvm::raw_ostream &os);
/// One JSON object: the ledger of `--emit=memory --json` plus the budget,
/// the verdict, the cost and the ranked fixes (docs/memory.md).
void printMemoryCheckJson(const MemoryCheckResult &r, llvm::raw_ostream &os);

/// The JSON object of a plan whose memory could not be planned:
/// {"verdict": "unknown", "error": reason}.
void printMemoryNotPlannedJson(llvm::StringRef reason, llvm::raw_ostream &os);

/// "--budget" text ("70GiB", "70 GiB", "8e10 B") to bytes; an error message
/// naming the value when it is not a positive size.
llvm::Expected<uint64_t> parseBudget(llvm::StringRef text);

} // namespace planc

#endif
