//===- compiler/MemoryFixes.h - changes that may make a plan fit -*- C++ -*-===//
//
// The candidate changes of an over-budget plan, their selection, their
// combinations and their order (MemoryFixes.cpp). `planc check` measures
// them (compiler/MemoryCheck.h) and `planc auto` seeds its search with them
// (compiler/AutoPlan.h).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_MEMORYFIXES_H
#define PLANC_COMPILER_MEMORYFIXES_H

#include "compiler/PlanAnalysis.h"
#include "frontend/Frontend.h"

#include "llvm/Support/SMLoc.h"

#include <string>
#include <vector>

namespace planc {

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

} // namespace planc

#endif
