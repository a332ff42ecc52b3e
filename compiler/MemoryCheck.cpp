//===- compiler/MemoryCheck.cpp - does the plan fit, and if not, what does --===//

#include "compiler/MemoryCheck.h"
#include "compiler/TooLargeToPlan.h"
#include "compiler/AutoPlan.h"
#include "compiler/Ledger.h"
#include "compiler/PlanAnalysis.h"
#include "compiler/StepTime.h"
#include "support/Units.h"

#include "ir/MeshLayout.h"
#include "ir/OpDef.h"
#include "ir/Placement.h"
#include "analysis/CommSummary.h"
#include "analysis/Placement.h"
#include "analysis/SavedActivations.h"
#include "ir/LocalBlocks.h"
#include "compiler/TrainOptions.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"
#include "support/Error.h"
#include "support/Plural.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>

using namespace planc;

namespace {

/// Diagnostics of candidate plans are not the user's: they only say the
/// candidate is invalid.
class DiscardingConsumer : public DiagnosticConsumer {
  void handle(const Diagnostic &) override {}
};

/// The plan of `base` with `fix` applied, checked and analysed anew; none
/// when the changed plan does not check or cannot be partitioned.
std::optional<PlanAnalysis> analyzeFix(Compilation &base, const MemoryFix &fix, bool verifyEach,
                                       const cost::Calibration *calibration) {
  FrontendOptions options = base.getOptions();
  options.setOverrides.insert(options.setOverrides.end(), fix.sets.begin(), fix.sets.end());
  options.warningsAsErrors = false;
  Compilation c(options);
  c.setDiagnosticConsumer(std::make_unique<DiscardingConsumer>());
  const llvm::MemoryBuffer *main = base.getSourceMgr().getMemoryBuffer(base.getMainBuffer());
  if (!c.loadString(main->getBufferIdentifier(), main->getBuffer()) || !c.check()) return std::nullopt;
  auto analysis = analyzePlan(c, verifyEach, calibration);
  if (!analysis) {
    llvm::consumeError(analysis.takeError());
    return std::nullopt;
  }
  return std::move(*analysis);
}

/// "+1.2 GiB", "-512 B", "+0 B"
std::string signedBytes(double b) {
  return (b < 0 ? "-" : "+") + formatBytes(uint64_t(std::llround(std::fabs(b))));
}

/// "+1.23 TFLOP"
std::string signedFlops(double f) {
  static const char *units[] = {"", "K", "M", "G", "T", "P", "E"};
  double v = std::fabs(f);
  int i = 0;
  while (v >= 1000 && i < 6) v /= 1000, ++i;
  if (i == 0) return (f < 0 ? "-" : "+") + std::to_string(std::llround(v)) + " FLOP";
  return (f < 0 ? "-" : "+") + llvm::formatv("{0:F2} {1}FLOP", v, units[i]).str();
}

/// A --set value as a shell word: quoted when it has spaces or brackets.
std::string shellSet(const std::string &set) {
  if (set.find_first_of(" ()'\"") == std::string::npos) return "--set " + set;
  return "--set '" + set + "'";
}

std::string describeFix(const MemoryFix &f) {
  std::string sets;
  for (const std::string &s : f.sets) sets += (sets.empty() ? "" : " ") + shellSet(s);
  return sets;
}

std::string priceOf(const MemoryFix &f) {
  std::string time;
  if (f.stepSeconds > 0) {
    double before = f.stepSeconds - f.extra.stepSeconds;
    time = "step " + formatSeconds(f.stepSeconds) + " predicted (" +
           llvm::formatv("{0}{1:F1}%", f.extra.stepSeconds < 0 ? "-" : "+",
                         before > 0 ? std::fabs(f.extra.stepSeconds) / before * 100 : 0.0)
               .str() +
           "), ";
  }
  return time + signedBytes(f.extra.commBytes) + " sent per rank and step, " + signedFlops(f.extra.recomputeFlops) +
         " recomputed, bubble " + llvm::formatv("{0}{1:F1}", f.extra.bubble < 0 ? "-" : "+",
                                                  std::fabs(f.extra.bubble) * 100).str() + " points";
}

/// "rank 0", "ranks 0-7"
std::string ranksText(const std::vector<int64_t> &ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + formatRanks(ranks);
}

const char *budgetSource(const MemoryCheckResult &r) { return r.budgetFromOption ? "--budget" : "device"; }

/// Whose bytes the budget is: "device 'a100_80gb'" or "--budget".
std::string budgetOwner(const Compilation &c, const MemoryCheckResult &r) {
  if (r.budgetFromOption) return "--budget";
  return "device '" + c.getConfig().cluster.device.name + "'";
}

/// A fix that fits but would raise the low-headroom warning says so.
std::string lowHeadroomText(const MemoryCheckResult &r) {
  return "fits, less than " + std::to_string(int(std::lround(r.headroomFraction * 100))) + "% headroom";
}

void reportOverBudget(Compilation &c, const MemoryCheckResult &r, size_t shown) {
  const memory::StagePlan &peak = r.analysis.memory.peakStage();
  const ClusterConfig &cl = c.getConfig().cluster;
  const MemoryFix *top = r.fixes.empty() ? nullptr : &r.fixes.front();
  llvm::SMRange at = top ? top->decides : cl.deviceSource.range;
  // A plan with no cluster or parallel block (or a fix whose setting it does
  // not write) still has a place: the model whose size the budget is about.
  if (!at.isValid()) at = cl.deviceSource.range;
  if (!at.isValid()) at = c.getModel().nameRange;
  auto d = c.getDiagnostics().report(DiagID::err_memory_over_budget, at);
  d << formatBytes(peak.arena) << ranksText(peak.ranks) << formatBytes(r.budget) << budgetOwner(c, r);
  // The clang fix-it: the best fix, when it fits and the file holds its settings.
  if (top && top->fits && !top->edits.empty())
    for (const FixIt &e : top->edits) d.fixit(e.range, e.replacement);
  std::string held;
  for (size_t k = 0; k < memory::kNumCategories; ++k)
    held += (k ? ", " : "") + std::string(memory::spelling(memory::Category(k))) + " " + formatBytes(peak.atPeak[k]);
  d.note(DiagID::note_memory_breakdown, {}, {std::to_string(peak.stage), ranksText(peak.ranks), held});
  std::string where;
  if (!peak.peakPath.empty()) where += " in " + peak.peakPath;
  if (peak.peakMicroBatch >= 0) where += ", micro-batch " + std::to_string(peak.peakMicroBatch);
  where += " (" + peak.peakWork + ")";
  d.note(DiagID::note_memory_peak_at, {}, {peak.peakOp, where});
  if (!r.budgetFromOption)
    d.noteAt(DiagID::note_memory_budget_here, cl.deviceSource.range, {cl.device.name, formatBytes(r.budget)});
  if (r.fixes.empty()) d.note(DiagID::note_memory_no_fix, {});
  else if (!r.fixes.front().fits) d.note(DiagID::note_memory_none_fits, {}, {std::to_string(r.fixes.size())});
  for (size_t i = 0; i < r.fixes.size() && i < shown; ++i) {
    const MemoryFix &f = r.fixes[i];
    d.note(DiagID::note_memory_fix, {},
           {std::to_string(i + 1), f.change, formatBytes(f.peakArena),
            !f.fits ? "over" : f.lowHeadroom ? lowHeadroomText(r) : "fits", priceOf(f),
            describeFix(f)});
  }
}

void reportLowHeadroom(Compilation &c, const MemoryCheckResult &r, double fraction) {
  const memory::StagePlan &peak = r.analysis.memory.peakStage();
  llvm::SMRange at = r.budgetFromOption ? llvm::SMRange() : c.getConfig().cluster.deviceSource.range;
  if (!r.budgetFromOption && !at.isValid()) at = c.getModel().nameRange; // no cluster block: the model
  c.getDiagnostics().report(DiagID::warn_memory_headroom, at)
      << formatBytes(peak.arena) << ranksText(peak.ranks)
      << llvm::formatv("{0:P1}", double(peak.arena) / double(r.budget)).str() << formatBytes(r.budget)
      << budgetOwner(c, r) << std::to_string(int(std::lround(fraction * 100)));
}

} // namespace

const char *planc::spelling(MemoryVerdict v) {
  switch (v) {
  case MemoryVerdict::Unknown: return "unknown";
  case MemoryVerdict::Fits: return "fits";
  case MemoryVerdict::LowHeadroom: return "low_headroom";
  case MemoryVerdict::OverBudget: return "over_budget";
  }
  return "unknown";
}

llvm::Expected<MemoryCheckResult> planc::checkMemory(Compilation &c, const MemoryCheckOptions &options) {
  using Clock = std::chrono::steady_clock;
  MemoryCheckResult r;
  auto start = Clock::now();
  auto analysis = analyzePlan(c, options.verifyEach, options.calibration);
  // A dim too large to plan is the plan's error, at the dim: never only a
  // missing ledger (compiler/TooLargeToPlan.h).
  if (!analysis) return reportTooLargeToPlan(c, analysis.takeError());
  r.analysis = std::move(*analysis);
  double baseSeconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.budgetFromOption = options.budgetBytes.has_value();
  r.deviceBytes = c.getConfig().cluster.device.memoryBytes;
  r.budget = options.budgetBytes ? *options.budgetBytes : r.deviceBytes;
  r.headroomFraction = options.headroomFraction;
  if (!r.budget || r.analysis.memory.stages.empty()) return r;

  const uint64_t peak = r.analysis.peakArena();
  if (peak <= r.budget) {
    bool low = double(peak) > (1.0 - options.headroomFraction) * double(r.budget);
    r.verdict = low ? MemoryVerdict::LowHeadroom : MemoryVerdict::Fits;
    if (low) reportLowHeadroom(c, r, options.headroomFraction);
    return r;
  }

  r.verdict = MemoryVerdict::OverBudget;
  // The changes worth analysing, each family's strongest first, as many as
  // the op budget allows (memoryFixCandidates). The exact ones (and their
  // combinations when none fits) are analysed by `planc auto`'s search
  // along with whole plans of the cluster, so that the first fix that fits
  // is the search's best; 8-bit moments and adapters, which change the
  // numerics or what is trained, are analysed here.
  std::vector<MemoryFix> candidates = memoryFixCandidates(c, r.analysis.ops);
  size_t allowed = memoryFixBudget(r.analysis.ops);
  allowed -= std::min(allowed, candidates.size());
  std::vector<MemoryFix> others;
  for (MemoryFix &f : candidates)
    if (f.changesTraining || f.changesNumerics) others.push_back(std::move(f));
  // Each candidate costs about what the plan itself did: say so when the
  // wait is noticeable.
  if (options.progress && (options.progressAlways || baseSeconds * double(candidates.size()) > 1.0)) {
    *options.progress << "planc: re-checking " << counted(int64_t(candidates.size()), "candidate plan")
                      << " and searching whole plans of the cluster...\n";
    options.progress->flush();
  }
  auto measured = [&](MemoryFix &f, uint64_t peak, const PlanCost &cost) {
    f.peakArena = peak;
    f.fits = f.peakArena <= r.budget;
    f.lowHeadroom = f.fits && double(f.peakArena) > (1.0 - options.headroomFraction) * double(r.budget);
    f.extra.commBytes = cost.commBytes - r.analysis.cost.commBytes;
    f.extra.recomputeFlops = cost.recomputeFlops - r.analysis.cost.recomputeFlops;
    f.extra.bubble = cost.bubble - r.analysis.cost.bubble;
    f.extra.stepSeconds = cost.stepSeconds - r.analysis.cost.stepSeconds;
    f.stepSeconds = cost.stepSeconds;
  };
  auto analyse = [&](std::vector<MemoryFix> &fixes, bool combined) {
    for (MemoryFix &f : fixes) {
      auto changed = analyzeFix(c, f, options.verifyEach, options.calibration);
      if (!changed) continue; // an invalid change is not reported
      // A combination no better than its best part adds nothing.
      if (combined && changed->peakArena() >= f.peakArena) continue;
      measured(f, changed->peakArena(), changed->cost);
      r.fixes.push_back(std::move(f));
    }
  };
  analyse(others, false);

  // The exact changes and whole plans: `planc auto`'s search, which analyses
  // the same candidates (AutoResult::seeds) and the best estimates of the
  // cluster's plans in full.
  AutoOptions ao;
  ao.budgetBytes = r.budget;
  ao.calibration = options.calibration;
  ao.current = &r.analysis;
  auto found = searchPlans(c, ao);
  if (!found) {
    llvm::consumeError(found.takeError());
  } else {
    // A fix says what changes: the overrides the plan already has go.
    const std::vector<std::string> same = currentPlanChoice(c).sets();
    for (const AutoCandidate &a : found->analysed) {
      if (!a.valid) continue;
      PlanCost cost{a.commBytes, a.recomputeFlops, a.bubble, a.stepSeconds};
      if (a.seed >= 0) {
        MemoryFix f = found->seeds[size_t(a.seed)];
        measured(f, a.peakArena, cost);
        r.fixes.push_back(std::move(f));
        continue;
      }
      if (!a.fits) continue; // a whole plan is offered when it fits
      MemoryFix f;
      f.family = "plan";
      f.change = a.plan.describe();
      // Without a pipeline in the plan and pp = 1, the micro-batch count
      // follows the batch by itself: no pipeline setting to write.
      const bool noSchedule = a.plan.pp == 1 && !c.getConfig().parallel.scheduleSource.range.isValid();
      for (const std::string &set : a.plan.sets())
        if (!llvm::is_contained(same, set) && !(noSchedule && llvm::StringRef(set).startswith("parallel.pipeline=")))
          f.sets.push_back(set);
      // A whole plan that a fix or combination already makes is not new.
      auto sameSets = [&](const MemoryFix &g) {
        return g.sets.size() == f.sets.size() &&
               llvm::all_of(f.sets, [&](const std::string &x) { return llvm::is_contained(g.sets, x); });
      };
      if (f.sets.empty() || llvm::any_of(r.fixes, sameSets)) continue;
      const ast::ConfigBlock *par = c.getProgram().parallel;
      f.decides = par ? par->keywordRange : c.getConfig().parallel.meshSource.range;
      measured(f, a.peakArena, cost);
      r.fixes.push_back(std::move(f));
    }
  }
  // Nothing fits, not even a whole plan: the changes of other numerics or
  // training combined with the rest (a larger tp and 8-bit Adam, ...).
  if (!others.empty() && llvm::none_of(r.fixes, [](const MemoryFix &f) { return f.fits; })) {
    // Single changes only: a combination has no family (combineMemoryFixes).
    std::vector<MemoryFix> singles;
    for (const MemoryFix &f : r.fixes)
      if (!f.family.empty() && f.family != "plan") singles.push_back(f);
    for (size_t size = 2; size <= 3; ++size) {
      std::vector<MemoryFix> combined;
      for (MemoryFix &f : combineMemoryFixes(singles, 5, size))
        if (f.changesNumerics || f.changesTraining) combined.push_back(std::move(f));
      if (combined.size() > allowed) combined.resize(allowed);
      allowed -= combined.size();
      if (combined.empty()) break;
      if (options.progress && (options.progressAlways || baseSeconds * double(combined.size()) > 1.0)) {
        *options.progress << "planc: no single change fits; re-checking " << combined.size() << " combinations of "
                          << size << "...\n";
        options.progress->flush();
      }
      analyse(combined, true);
      if (llvm::any_of(r.fixes, [](const MemoryFix &f) { return f.fits; })) break;
    }
  }
  rankMemoryFixes(r.fixes);
  reportOverBudget(c, r, 5);
  return r;
}

void planc::printMemoryCheck(const MemoryCheckResult &r, llvm::raw_ostream &os) {
  printLedger(r.analysis.memory, r.budget, os, r.budgetFromOption ? "budget" : "device");
  const uint64_t peak = r.analysis.peakArena();
  os << "memory: ";
  switch (r.verdict) {
  case MemoryVerdict::Unknown:
    os << formatBytes(peak) << " per rank; no budget to check it against (the device's memory is unknown: give "
                               "--budget)\n";
    return;
  case MemoryVerdict::OverBudget:
    os << "over budget: " << formatBytes(peak) << " per rank, " << formatBytes(peak - r.budget) << " more than the "
       << formatBytes(r.budget) << " of " << (r.budgetFromOption ? "--budget" : "the device") << "\n";
    return;
  case MemoryVerdict::Fits:
  case MemoryVerdict::LowHeadroom:
    os << "fits: " << formatBytes(peak) << " per rank of " << (r.budgetFromOption ? "--budget" : "the device") << "'s "
       << formatBytes(r.budget)
       << ", " << formatBytes(r.budget - peak) << " ("
       << llvm::formatv("{0:P1}", double(r.budget - peak) / double(r.budget)) << ") headroom\n";
    return;
  }
}

void planc::printMemoryCheckJson(const MemoryCheckResult &r, llvm::raw_ostream &os) {
  // device_bytes is the device's memory; the budget (--budget or the same
  // number) has its own field.
  nlohmann::json j = nlohmann::json::parse(ledgerJsonText(r.analysis.memory, r.deviceBytes));
  const uint64_t peak = r.analysis.peakArena();
  j["budget"] = {{"bytes", r.budget}, {"source", budgetSource(r)}};
  j["verdict"] = spelling(r.verdict);
  j["peak_arena_bytes"] = peak;
  j["headroom_bytes"] = int64_t(r.budget) - int64_t(peak);
  j["cost"] = {{"comm_bytes", r.analysis.cost.commBytes},
               {"recompute_flops", r.analysis.cost.recomputeFlops},
               {"bubble", r.analysis.cost.bubble},
               {"step_s", r.analysis.cost.stepSeconds}};
  j["time"] = stepTimeJson(r.analysis.time, r.analysis.hardware);
  j["fixes"] = nlohmann::json::array();
  for (const MemoryFix &f : r.fixes)
    j["fixes"].push_back({{"change", f.change},
                          {"set", f.sets},
                          {"peak_arena_bytes", f.peakArena},
                          {"fits", f.fits},
                          {"low_headroom", f.lowHeadroom},
                          {"changes_training", f.changesTraining},
                          {"changes_numerics", f.changesNumerics},
                          {"extra_comm_bytes", f.extra.commBytes},
                          {"extra_recompute_flops", f.extra.recomputeFlops},
                          {"bubble_change", f.extra.bubble},
                          {"step_s", f.stepSeconds},
                          {"extra_step_s", f.extra.stepSeconds}});
  os << j.dump(1) << "\n";
}

void planc::printMemoryNotPlannedJson(llvm::StringRef reason, llvm::raw_ostream &os) {
  nlohmann::json j = {{"verdict", spelling(MemoryVerdict::Unknown)}, {"error", reason.str()}};
  os << j.dump(1) << "\n";
}

llvm::Expected<uint64_t> planc::parseBudget(llvm::StringRef text) {
  auto bad = [&] {
    return makeError("--budget needs a size such as 70GiB or 80 GB, got '" + text.str() + "'");
  };
  std::optional<Quantity> q = parseQuantity(text);
  if (!q || q->dim != UnitDim::Bytes || !(q->value >= 1) || q->value >= 1.8e19) return bad();
  return uint64_t(q->value);
}
