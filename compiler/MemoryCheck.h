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

#include "compiler/MemoryFixes.h"
#include "compiler/PlanAnalysis.h"
#include "frontend/Frontend.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace planc {

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
