//===- compiler/AutoPlanPrint.cpp - the search's account, as planc auto prints it ===//
//
// planc auto's stderr: the search's counts, the plan as written, the best
// plans (only those that fit; when none does, the closest analysed under
// their own heading), plans the full compilation rejected, and one line per
// rejected family (compiler/AutoPlan.h).
//
//===----------------------------------------------------------------------===//

#include "compiler/AutoPlan.h"
#include "compiler/StepTime.h"
#include "support/Units.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace planc;

void planc::printAutoResult(const AutoResult &r, size_t top, llvm::raw_ostream &os) {
  os << "planc auto: " << r.candidates << " candidate plans, " << r.profiles << " profiles, "
     << llvm::count_if(r.analysed, [](const AutoCandidate &a) { return a.analysed; })
     << " analysed in full, in " << llvm::formatv("{0:F1}", r.seconds) << " s; budget " << formatBytes(r.budget)
     << "\n";
  if (r.current)
    os << "  the plan as written: " << formatBytes(r.current->peakArena) << (r.current->fits ? " (fits), " : " (over budget), ")
       << formatSeconds(r.current->stepSeconds) << " per step, MFU " << llvm::formatv("{0:F1}%", r.current->mfu * 100)
       << "\n";
  else if (!r.currentNotAnalysed.empty())
    os << "  the plan as written: not analysed (" << r.currentNotAnalysed << ")\n";
  // The plans that fit; when none does, the closest of those analysed
  // (r.analysed ranks them after the rest, smallest first) under their own
  // heading, never as "best".
  auto list = [&](bool fitting) {
    size_t shown = 0;
    for (const AutoCandidate &a : r.analysed) {
      if (shown >= top) break;
      if (!a.valid || a.fits != fitting) continue;
      ++shown;
      os << "  " << shown << ". " << a.plan.describe() << "\n     " << formatBytes(a.peakArena)
         << (a.fits ? "" : " (over budget)") << ", " << formatSeconds(a.stepSeconds) << " per step, MFU "
         << llvm::formatv("{0:F1}%", a.mfu * 100);
      if (a.seed >= 0) os << "; the plan as written with " << r.seeds[size_t(a.seed)].change;
      os << "\n";
    }
    return shown;
  };
  os << "best plans (analysed in full: the planner's arena, the cost model's step):\n";
  if (!list(true)) {
    os << "  none\n";
    if (llvm::any_of(r.analysed, [](const AutoCandidate &a) { return a.valid && !a.fits; })) {
      os << "closest (analysed in full, over budget):\n";
      list(false);
    }
  }
  for (const AutoCandidate &a : r.analysed)
    if (!a.valid) os << "  rejected when compiled: " << a.plan.describe() << ": " << a.invalidReason << "\n";
  if (!r.rejected.empty()) {
    os << "rejected:\n";
    for (const std::string &line : r.rejected) os << "  " << line << "\n";
  }
}
