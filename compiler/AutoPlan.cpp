//===- compiler/AutoPlan.cpp - profiles, closed-form estimates, full checks ===//

#include "compiler/AutoPlan.h"

#include "compiler/Ledger.h"
#include "compiler/StepTime.h"
#include "support/Error.h"
#include "support/Units.h"
#include "support/Plural.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

using namespace planc;

//===----------------------------------------------------------------------===//
// Compiling a variant of the plan
//===----------------------------------------------------------------------===//

namespace {

/// Keeps the first error of a variant: why it is not a plan.
class FirstErrorConsumer : public DiagnosticConsumer {
public:
  std::string first;
  void handle(const Diagnostic &d) override {
    if (first.empty() && d.severity == Severity::Error) first = d.message;
  }
};

struct Variant {
  std::optional<PlanAnalysis> analysis;
  std::string error;
  PlanChoice plan; // the variant's own settings, when it checks
};

Variant analyseVariant(Compilation &base, const std::vector<std::string> &sets, const std::vector<std::string> &dims,
                       const cost::Calibration *calibration) {
  FrontendOptions options = base.getOptions();
  options.setOverrides.insert(options.setOverrides.end(), sets.begin(), sets.end());
  options.dimOverrides.insert(options.dimOverrides.end(), dims.begin(), dims.end());
  options.warningsAsErrors = false;
  Compilation c(options);
  auto consumer = std::make_unique<FirstErrorConsumer>();
  FirstErrorConsumer *errors = consumer.get();
  c.setDiagnosticConsumer(std::move(consumer));
  const llvm::MemoryBuffer *main = base.getSourceMgr().getMemoryBuffer(base.getMainBuffer());
  Variant v;
  if (!c.loadString(main->getBufferIdentifier(), main->getBuffer()) || !c.check()) {
    v.error = errors->first.empty() ? "the plan does not check" : errors->first;
    return v;
  }
  v.plan = currentPlanChoice(c);
  auto analysis = analyzePlan(c, /*verifyEach=*/false, calibration);
  if (!analysis) {
    v.error = llvm::toString(analysis.takeError());
    return v;
  }
  v.analysis = std::move(*analysis);
  return v;
}

/// The `let` the model's top-level repeat counts ("layers"), when there is
/// exactly one such repeat and its count is a name.
std::string depthLet(const Compilation &c) {
  const ast::ModelDecl *model = c.getProgram().model;
  if (!model) return "";
  std::string name;
  int repeats = 0;
  for (const ast::ItemPtr &item : model->body)
    if (auto *r = llvm::dyn_cast<ast::RepeatItem>(item.get())) {
      ++repeats;
      if (auto *n = llvm::dyn_cast_or_null<ast::NameExpr>(r->count.get())) name = n->name;
    }
  return repeats == 1 ? name : "";
}

//===----------------------------------------------------------------------===//
// Profiles
//===----------------------------------------------------------------------===//

using memory::Category;

/// One sample through a one-stage, one-replica step of the plan's model with
/// tp, sequence parallelism and recompute as the key says: per layer and for
/// the ends (embedding, head, loss), the model states by category, the rest
/// of the peak (activations saved for backward, temporaries), and forward,
/// backward and optimizer seconds.
struct Profile {
  bool valid = false;
  std::string error;
  double layerParams = 0, layerGrads = 0, layerOptim = 0, layerActs = 0;
  double endsParams = 0, endsGrads = 0, endsOptim = 0, endsActs = 0;
  double temps = 0; // the peak's bytes besides model states and saved activations
  double layerForward = 0, layerBackward = 0, endsForward = 0, endsBackward = 0;
  double layerOptimizer = 0, endsOptimizer = 0;
  /// What one more sample per micro-batch adds, as a fraction of the first
  /// sample's forward (backward) time: below 1 where larger GEMMs run
  /// closer to the peak and fixed costs (launches, weight reads) are shared.
  double perSampleForward = 1, perSampleBackward = 1;
};

using ProfileKey = std::tuple<int64_t, bool, RecomputePolicy, FusionPolicy>;

/// Two profiles of the same step: every byte and second equal.
bool sameStep(const Profile &a, const Profile &b) {
  auto numbers = [](const Profile &p) {
    return std::make_tuple(p.layerParams, p.layerGrads, p.layerOptim, p.layerActs, p.endsParams, p.endsGrads,
                           p.endsOptim, p.endsActs, p.temps, p.layerForward, p.layerBackward, p.endsForward,
                           p.endsBackward, p.layerOptimizer, p.endsOptimizer, p.perSampleForward, p.perSampleBackward);
  };
  return numbers(a) == numbers(b);
}

struct StageNumbers {
  double params = 0, grads = 0, optim = 0, acts = 0, temps = 0;
  double forward = 0, backward = 0, optimizer = 0;
};

/// The model states are counted from the program (StagePlan::modelStates),
/// the saved activations from the placed step (PlanAnalysis::
/// savedActivationBytes), so that both grow with the layers wherever the
/// peak falls; temporaries are what the arena holds besides them.
StageNumbers numbersOf(const PlanAnalysis &a) {
  StageNumbers n;
  const memory::StagePlan &s = a.memory.stages.front();
  n.params = double(s.modelStates[size_t(Category::Parameters)]);
  n.grads = double(s.modelStates[size_t(Category::Gradients)]);
  n.optim = double(s.modelStates[size_t(Category::OptimizerState)]);
  n.acts = a.savedActivationBytes;
  n.temps = std::max(0.0, double(s.arena) - n.params - n.grads - n.optim - n.acts);
  if (!a.time.stages.empty()) {
    const cost::StageCost &t = a.time.stages.front();
    for (double f : t.forward) n.forward += f;
    for (double b : t.backward) n.backward += b;
    for (double w : t.weightGrad) n.backward += w;
    n.optimizer = t.breakdown.optimizer;
  }
  return n;
}

class Search {
public:
  Search(Compilation &c, const AutoOptions &o) : c(c), o(o), cfg(c.getConfig()) {}
  llvm::Expected<AutoResult> run();

private:
  const Profile &profile(const ProfileKey &key);
  void enumerate(std::vector<AutoCandidate> &out);
  void estimate(AutoCandidate &cand, const Profile &p);
  /// Over budget as written: planc check's exact changes of the plan (and
  /// their combinations when none fits), analysed in full into `chosen`.
  void analyseSeeds(AutoResult &r, const PlanAnalysis &current, std::vector<AutoCandidate> &chosen,
                    std::set<std::string> &tried);
  /// One line per mesh family that lost, into r.rejected.
  void rejectFamilies(AutoResult &r, const std::vector<AutoCandidate> &estimated) const;
  /// The schedule's replay (ticks), cached: its bubble fraction, and the
  /// most micro-batches whose activations the first rank holds at once
  /// (forwards begun whose backward, or zero-bubble weight gradient, has
  /// not ended; interleaved chunks count 1/v each).
  struct ScheduleFacts {
    double bubble = 1, inFlight = 1;
  };
  const ScheduleFacts &scheduleFacts(int64_t pp, int64_t m, ScheduleStyle style, int64_t v);
  double bubbleOf(int64_t pp, int64_t m, ScheduleStyle style, int64_t v) {
    return pp <= 1 ? 0 : scheduleFacts(pp, m, style, v).bubble;
  }
  double inFlightOf(int64_t pp, int64_t m, ScheduleStyle style, int64_t v) {
    return pp <= 1 ? 1 : scheduleFacts(pp, m, style, v).inFlight;
  }
  void progress(const std::string &line) {
    if (o.progress) {
      *o.progress << "planc auto: " << line << "\n";
      o.progress->flush();
    }
  }

  Compilation &c;
  const AutoOptions &o;
  const PlanConfig &cfg;
  std::string depth;
  int64_t layers = 0;
  uint64_t budget = 0;
  cost::Hardware hw;
  std::map<ProfileKey, Profile> profiles;
  std::map<std::tuple<int64_t, int64_t, ScheduleStyle, int64_t>, ScheduleFacts> schedules;
};

const Profile &Search::profile(const ProfileKey &key) {
  auto it = profiles.find(key);
  if (it != profiles.end()) return it->second;
  auto [tp, sp, rec, fusion] = key;
  PlanChoice one;
  one.tp = tp;
  one.sequenceParallel = sp;
  one.recompute = rec;
  one.fusion = fusion;
  std::vector<std::string> sets = one.sets();
  sets.insert(sets.end(), {"cluster.nodes=1", "cluster.gpus_per_node=" + std::to_string(tp), "train.global_batch=1"});
  Profile p;
  auto runAt = [&](int64_t n, int64_t samples = 1) -> std::optional<StageNumbers> {
    std::vector<std::string> dims;
    if (!depth.empty()) dims.push_back(depth + "=" + std::to_string(n));
    std::vector<std::string> with = sets;
    if (samples > 1)
      with.insert(with.end(), {"train.global_batch=" + std::to_string(samples),
                               "train.micro_batch=" + std::to_string(samples)});
    Variant v = analyseVariant(c, with, dims, o.calibration);
    if (!v.analysis || v.analysis->memory.stages.empty()) {
      p.error = v.error.empty() ? "no memory plan" : v.error;
      return std::nullopt;
    }
    return numbersOf(*v.analysis);
  };
  auto split = [](double one, double two, double &layer, double &ends) {
    layer = std::max(0.0, two - one);
    ends = std::max(0.0, one - layer);
  };
  if (depth.empty()) {
    // No depth to vary: the whole model is "ends", scaled by nothing.
    if (auto whole = runAt(layers)) {
      p.valid = true;
      p.endsParams = whole->params, p.endsGrads = whole->grads, p.endsOptim = whole->optim, p.endsActs = whole->acts;
      p.temps = whole->temps;
      p.endsForward = whole->forward, p.endsBackward = whole->backward, p.endsOptimizer = whole->optimizer;
    }
  } else if (auto one = runAt(1)) {
    if (auto two = runAt(2)) {
      split(one->params, two->params, p.layerParams, p.endsParams);
      split(one->grads, two->grads, p.layerGrads, p.endsGrads);
      split(one->optim, two->optim, p.layerOptim, p.endsOptim);
      split(one->acts, two->acts, p.layerActs, p.endsActs);
      p.temps = std::max(one->temps, two->temps);
      split(one->forward, two->forward, p.layerForward, p.endsForward);
      split(one->backward, two->backward, p.layerBackward, p.endsBackward);
      split(one->optimizer, two->optimizer, p.layerOptimizer, p.endsOptimizer);
      std::optional<StageNumbers> pair = runAt(1, 2);
      if (pair && one->forward > 0) p.perSampleForward = std::max(0.0, pair->forward / one->forward - 1);
      if (pair && one->backward > 0) p.perSampleBackward = std::max(0.0, pair->backward / one->backward - 1);
      p.valid = true;
    }
  }
  return profiles.emplace(key, std::move(p)).first->second;
}

//===----------------------------------------------------------------------===//
// Enumeration and closed-form estimates
//===----------------------------------------------------------------------===//

/// The divisors of n, increasing (O(sqrt n): a cluster may have 2^40 devices).
std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> low, high;
  for (int64_t i = 1; i <= n / i; ++i)
    if (n % i == 0) {
      low.push_back(i);
      if (i != n / i) high.push_back(n / i);
    }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

void Search::enumerate(std::vector<AutoCandidate> &out) {
  const int64_t world = cfg.cluster.worldSize(), perNode = cfg.cluster.gpusPerNode;
  const int64_t global = cfg.train.globalBatch;
  // The plan's fusion, and every fusion where the plan turns it down.
  std::vector<FusionPolicy> fusions = {cfg.train.fusion};
  if (cfg.train.fusion != FusionPolicy::Aggressive) fusions.push_back(FusionPolicy::Aggressive);
  for (int64_t tp : divisors(std::min(world, perNode))) {
    if (world % tp) continue;
    // pp divides the layers (and the devices left by tp).
    for (int64_t pp : divisors(layers)) {
      if ((world / tp) % pp) continue;
      const int64_t dp = world / (tp * pp);
      if (global % dp) continue;
      for (int64_t mb = 1; mb <= 16 && mb <= global / dp; mb *= 2) {
        if ((global / dp) % mb) continue;
        const int64_t m = global / dp / mb;
        std::vector<std::pair<ScheduleStyle, int64_t>> schedules = {{ScheduleStyle::OneFOneB, 1}};
        if (pp > 1) {
          schedules.push_back({ScheduleStyle::ZeroBubble, 1});
          for (int64_t v : {2, 3, 4})
            if (layers % (pp * v) == 0 && m % pp == 0) schedules.push_back({ScheduleStyle::Interleaved, v});
        }
        for (auto [style, v] : schedules)
          for (int64_t zero = 0; zero <= (dp > 1 ? 3 : 0); ++zero)
            for (bool sp : {false, true}) {
              if (sp && tp == 1) continue;
              for (RecomputePolicy rec : {RecomputePolicy::None, RecomputePolicy::Selective, RecomputePolicy::Full})
                for (FusionPolicy fusion : fusions) {
                  AutoCandidate a;
                  PlanChoice &p = a.plan;
                  p.dp = dp, p.tp = tp, p.pp = pp, p.zero = zero, p.sequenceParallel = sp, p.recompute = rec;
                  p.microBatch = mb, p.microBatches = m, p.schedule = style, p.virtualStages = v;
                  p.fusion = fusion;
                  out.push_back(a);
                }
            }
      }
    }
  }
}

const Search::ScheduleFacts &Search::scheduleFacts(int64_t pp, int64_t m, ScheduleStyle style, int64_t v) {
  auto key = std::make_tuple(pp, m, style, v);
  auto it = schedules.find(key);
  if (it != schedules.end()) return it->second;
  ScheduleOptions so;
  so.stages = int(pp);
  so.microBatches = int(m);
  so.style = style;
  so.virtualStages = int(v);
  ScheduleFacts facts; // a schedule that cannot be built is as bad as it gets
  facts.inFlight = double(m);
  if (auto s = pipeline::buildSchedule(so)) {
    if (auto sim = pipeline::simulate(*s)) {
      facts.bubble = sim->bubbleFraction();
      const pipeline::InstrKind releases =
          style == ScheduleStyle::ZeroBubble ? pipeline::InstrKind::WeightGrad : pipeline::InstrKind::Backward;
      int64_t live = 0, most = 0;
      for (const pipeline::Instr &i : s->ranks.front()) {
        if (i.kind == pipeline::InstrKind::Forward) most = std::max(most, ++live);
        else if (i.kind == releases) --live;
      }
      facts.inFlight = double(most) / double(std::max<int64_t>(v, 1));
    } else {
      llvm::consumeError(sim.takeError());
    }
  } else {
    llvm::consumeError(s.takeError());
  }
  return schedules[key] = facts;
}

void Search::estimate(AutoCandidate &a, const Profile &p) {
  const PlanChoice &x = a.plan;
  const double mb = double(x.microBatch), m = double(x.microBatches), dp = double(x.dp);
  const double perStage = double(layers) / double(x.pp);
  // Memory of the first stage (the most in flight), with the ends on it.
  const double paramBytes = perStage * p.layerParams + p.endsParams;
  const double gradBytes = perStage * p.layerGrads + p.endsGrads;
  double params = paramBytes, grads = gradBytes, optim = perStage * p.layerOptim + p.endsOptim;
  if (x.zero >= 1) optim /= dp;
  if (x.zero >= 2) grads /= dp;
  double gathered = 0;
  if (x.zero >= 3) {
    params /= dp;
    gathered = 2 * p.layerParams; // a layer gathered, the next prefetched
  }
  double inFlight = inFlightOf(x.pp, x.microBatches, x.schedule, x.virtualStages);
  // The ends' activations are mostly the head's (the logits): with a
  // pipeline they are the last stage's, which holds one micro-batch at a
  // time, not the first's many in flight.
  double endsInFlight = x.pp > 1 ? 1.0 : inFlight;
  double rest = (perStage * p.layerActs * inFlight + p.endsActs * endsInFlight) * mb + p.temps * mb;
  a.estimatedPeak = uint64_t(params + grads + optim + gathered + rest);

  // Time: a stage's forward and backward of one micro-batch, the schedule's
  // bubble, then the data-parallel collectives and the optimizer.
  double f = (perStage * p.layerForward + p.endsForward) * (1 + p.perSampleForward * (mb - 1));
  double b = (perStage * p.layerBackward + p.endsBackward) * (1 + p.perSampleBackward * (mb - 1));
  double busy = m * (f + b);
  double bubble = bubbleOf(x.pp, x.microBatches, x.schedule, x.virtualStages);
  double pipelined = bubble < 1 ? busy / (1 - bubble) : busy * 1e3;
  // Data parallel over dp ranks tp x pp apart in the rank layout: DDP
  // all-reduces the summed gradients once, hidden by the last backward;
  // ZeRO-1 reduce-scatters them and gathers the updated parameters after
  // the update; ZeRO-2 reduce-scatters in every micro-batch's backward;
  // ZeRO-3 also gathers the parameters in every forward and backward, each
  // overlapping the compute of its pass (as the cost model charges them).
  double comm = 0;
  if (x.dp > 1) {
    const int64_t stride = x.tp * x.pp;
    auto coll = [&](ir::OpKind k, double bytes) {
      return cost::collectiveSeconds(k, x.dp, stride, uint64_t(std::max(0.0, bytes)), hw);
    };
    const double rs = coll(ir::OpKind::ReduceScatter, gradBytes), ag = coll(ir::OpKind::AllGather, paramBytes);
    if (x.zero == 0) comm = std::max(0.0, coll(ir::OpKind::AllReduce, gradBytes) - b);
    else if (x.zero == 1) comm = std::max(0.0, rs - b) + ag;
    else if (x.zero == 2) comm = m * std::max(0.0, rs - b) + ag;
    else {
      // The first gather of each pass has nothing to go ahead of
      // (passes/ParamPrefetch.cpp): the embedding's in forward, the head's
      // in backward, the ends' parameters, exposed in every micro-batch.
      const double ends = coll(ir::OpKind::AllGather, p.endsParams);
      comm = m * (ends + std::max(0.0, ag - f) + std::max(0.0, ag + rs - b));
    }
  }
  double optimizer = perStage * p.layerOptimizer + p.endsOptimizer;
  if (x.zero >= 1) optimizer /= dp;
  a.estimatedSeconds = pipelined + comm + optimizer;
}

/// The candidate analysed in full: its memory, step and price.
void takeAnalysis(AutoCandidate &a, const PlanAnalysis &analysis, uint64_t budget) {
  a.analysed = true;
  a.peakArena = analysis.peakArena();
  a.stepSeconds = analysis.time.stepTime;
  a.mfu = analysis.time.mfu();
  a.fits = a.peakArena <= budget;
  a.commBytes = analysis.cost.commBytes;
  a.recomputeFlops = analysis.cost.recomputeFlops;
  a.bubble = analysis.cost.bubble;
}

/// Best first, as `planc check` ranks its exact fixes (rankMemoryFixes):
/// valid, fitting, the shortest step (to the microsecond), then fewest bytes
/// sent, recompute FLOPs, bubble; then the smallest peak.
bool betterCandidate(const AutoCandidate &a, const AutoCandidate &b) {
  if (a.valid != b.valid) return a.valid;
  if (a.fits != b.fits) return a.fits;
  if (a.fits) {
    auto key = [](const AutoCandidate &x) {
      return std::make_tuple(std::round(x.stepSeconds * 1e6), std::round(x.commBytes), std::round(x.recomputeFlops),
                             std::round(x.bubble * 1e9));
    };
    if (key(a) != key(b)) return key(a) < key(b);
  }
  return a.peakArena < b.peakArena;
}

} // namespace

void Search::analyseSeeds(AutoResult &r, const PlanAnalysis &current, std::vector<AutoCandidate> &chosen,
                          std::set<std::string> &tried) {
  // The exact changes planc check proposes, as many as it analyses; the
  // others (8-bit moments, adapters) change what is trained or its
  // numerics, and stay the check's.
  std::vector<MemoryFix> fixes = memoryFixCandidates(c, current.ops);
  size_t allowed = memoryFixBudget(current.ops);
  allowed -= std::min(allowed, fixes.size());
  for (MemoryFix &f : fixes)
    if (!f.changesTraining && !f.changesNumerics) r.seeds.push_back(std::move(f));
  auto analyse = [&](size_t from, bool combined) {
    for (size_t i = from; i < r.seeds.size(); ++i) {
      MemoryFix &f = r.seeds[i];
      Variant v = analyseVariant(c, f.sets, {}, o.calibration);
      if (!v.analysis) continue; // an invalid change is no candidate
      // A combination no better than its best part adds nothing.
      if (combined && v.analysis->peakArena() >= f.peakArena) continue;
      AutoCandidate a;
      a.plan = v.plan;
      a.seed = int(i);
      takeAnalysis(a, *v.analysis, budget);
      f.peakArena = a.peakArena;
      f.fits = a.fits;
      progress(f.change + ": " + formatBytes(a.peakArena) + ", " + formatSeconds(a.stepSeconds) +
               (a.fits ? "" : ", over budget"));
      tried.insert(a.plan.describe());
      chosen.push_back(std::move(a));
    }
  };
  progress("analysing " + std::to_string(r.seeds.size()) + " changes of the plan as written (planc check's fixes)");
  analyse(0, false);
  // No single change fits: two together, then three, of the changes that
  // came closest (ZeRO and recompute, a larger tp and full recompute, ...).
  std::vector<MemoryFix> singles;
  for (const AutoCandidate &a : chosen) singles.push_back(r.seeds[size_t(a.seed)]);
  for (size_t size = 2; size <= 3; ++size) {
    if (llvm::any_of(chosen, [](const AutoCandidate &a) { return a.fits; })) break;
    std::vector<MemoryFix> combined = combineMemoryFixes(singles, 5, size);
    if (combined.size() > allowed) combined.resize(allowed);
    allowed -= combined.size();
    if (combined.empty()) break;
    progress("no single change fits; analysing " + std::to_string(combined.size()) + " combinations of " +
             std::to_string(size));
    size_t from = r.seeds.size();
    for (MemoryFix &f : combined) r.seeds.push_back(std::move(f));
    analyse(from, true);
  }
}

llvm::Expected<AutoResult> Search::run() {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  AutoResult r;
  hw = hardwareOf(cfg.cluster, o.calibration);
  budget = o.budgetBytes ? *o.budgetBytes : cfg.cluster.device.memoryBytes;
  r.budget = budget;
  if (!budget) return makeError("the device's memory is unknown: give --budget");
  depth = depthLet(c);
  layers = c.getModel().numLayers;
  if (layers < 1) layers = 1;

  // The plan as written, for comparison, when its mesh is a plan of this
  // cluster (the search replaces the mesh whatever its size).
  const int64_t world = cfg.cluster.worldSize();
  std::optional<PlanAnalysis> current;
  if (o.current) {
    current = *o.current;
  } else if (cfg.parallel.meshSize() != world) {
    r.currentNotAnalysed = "its mesh has " + std::to_string(cfg.parallel.meshSize()) + " device" +
                           (cfg.parallel.meshSize() == 1 ? "" : "s") + ", the cluster " + std::to_string(world);
  } else {
    Variant now = analyseVariant(c, {}, {}, o.calibration);
    if (now.analysis) current = std::move(now.analysis);
    else r.currentNotAnalysed = now.error;
  }
  if (current && !o.current) {
    AutoCandidate cur;
    cur.plan = currentPlanChoice(c);
    takeAnalysis(cur, *current, budget);
    r.current = cur;
  }

  std::vector<AutoCandidate> all;
  enumerate(all);
  r.candidates = all.size();
  if (all.empty())
    r.rejected.push_back("every mesh: global_batch " + std::to_string(cfg.train.globalBatch) +
                         " is not divisible by the data-parallel size of any mesh of the " +
                         counted(world, "device") + " (tp within a node, pp dividing the " +
                         counted(layers, "layer") + ")");
  progress(counted(int64_t(all.size()), "candidate plan") + " of " + counted(world, "device") +
           "; profiling the model" + (depth.empty() ? "" : " (one and two of its '" + depth + "' layers)"));

  // Profile every (tp, sp, recompute, fusion); families the model rejects go.
  std::map<int64_t, std::string> badTp;
  std::vector<AutoCandidate> estimated;
  bool selectiveIsNone = false;
  for (AutoCandidate &a : all) {
    if (badTp.count(a.plan.tp)) continue;
    const Profile &p = profile({a.plan.tp, a.plan.sequenceParallel, a.plan.recompute, a.plan.fusion});
    if (!p.valid) {
      // A tp the model cannot be split by is a family of its own.
      if (!a.plan.sequenceParallel && a.plan.recompute == RecomputePolicy::None && a.plan.fusion == cfg.train.fusion)
        badTp[a.plan.tp] = p.error;
      continue;
    }
    // Selective recompute with nothing to recompute (flash attention has no
    // s x s value left) is the step without recompute: not a plan twice.
    if (a.plan.recompute == RecomputePolicy::Selective) {
      const Profile &none = profile({a.plan.tp, a.plan.sequenceParallel, RecomputePolicy::None, a.plan.fusion});
      if (none.valid && sameStep(p, none)) {
        selectiveIsNone = true;
        continue;
      }
    }
    estimate(a, p);
    estimated.push_back(a);
  }
  r.profiles = profiles.size();
  r.estimates.reserve(estimated.size());
  for (const AutoCandidate &a : estimated) r.estimates.push_back({a.estimatedPeak, a.estimatedSeconds});
  for (auto &[tp, why] : badTp) r.rejected.push_back("tp = " + std::to_string(tp) + ": " + why);
  if (selectiveIsNone)
    r.rejected.push_back("recompute selective: the step of recompute none where the attention is fused (flash "
                         "attention keeps no s x s value to recompute)");
  if (cfg.cluster.gpusPerNode < world)
    r.rejected.push_back("tp > " + std::to_string(cfg.cluster.gpusPerNode) +
                         ": not searched (tensor parallelism stays inside a node: its collectives block every layer)");

  std::vector<AutoCandidate> chosen;
  std::set<std::string> tried;
  // Over budget as written: planc check's changes of it, analysed in full.
  if (current && current->peakArena() > budget) analyseSeeds(r, *current, chosen, tried);

  progress(std::to_string(profiles.size()) + " profiles, " + std::to_string(estimated.size()) +
           " estimates; analysing the best in full");
  // The best estimates that fit (with a margin for the estimate's error,
  // a few percent: tests/lit/cost/auto-estimates.test), analysed in full in
  // order of estimate, one of each mesh before a second of any, until
  // fullAnalyses fit (or three more were tried).
  const double margin = 1.03;
  std::vector<AutoCandidate *> order;
  for (AutoCandidate &a : estimated)
    if (double(a.estimatedPeak) <= margin * double(budget)) order.push_back(&a);
  std::stable_sort(order.begin(), order.end(),
                   [](const AutoCandidate *a, const AutoCandidate *b) { return a->estimatedSeconds < b->estimatedSeconds; });
  std::set<std::string> meshesTaken;
  size_t fitting = 0, fromEstimates = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (AutoCandidate *cand : order) {
      if (fitting >= o.fullAnalyses || fromEstimates >= o.fullAnalyses + 3) break;
      std::string family = cand->plan.mesh();
      if (pass == 0 && meshesTaken.count(family)) continue;
      if (!tried.insert(cand->plan.describe()).second) continue;
      meshesTaken.insert(family);
      ++fromEstimates;
      AutoCandidate a = *cand;
      Variant v = analyseVariant(c, a.plan.sets(), {}, o.calibration);
      a.analysed = true;
      if (!v.analysis) {
        a.valid = false;
        a.invalidReason = v.error;
      } else {
        takeAnalysis(a, *v.analysis, budget);
        fitting += a.fits;
        progress(a.plan.describe() + ": " + formatBytes(a.peakArena) + " (estimated " + formatBytes(a.estimatedPeak) +
                 "), " + formatSeconds(a.stepSeconds) + " (estimated " + formatSeconds(a.estimatedSeconds) + ")" +
                 (a.fits ? "" : ", over budget"));
      }
      chosen.push_back(std::move(a));
    }
  std::stable_sort(chosen.begin(), chosen.end(), betterCandidate);
  r.analysed = std::move(chosen);
  rejectFamilies(r, estimated);
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

void Search::rejectFamilies(AutoResult &r, const std::vector<AutoCandidate> &estimated) const {
  // One line per mesh family that lost, with the reason that decided it.
  const AutoCandidate *best = r.best();
  std::map<std::string, std::pair<const AutoCandidate *, const AutoCandidate *>> families; // fastest fitting, smallest
  for (const AutoCandidate &a : estimated) {
    auto &[fast, small] = families[a.plan.mesh()];
    bool fitsEst = a.estimatedPeak <= budget;
    if (fitsEst && (!fast || a.estimatedSeconds < fast->estimatedSeconds)) fast = &a;
    if (!small || a.estimatedPeak < small->estimatedPeak) small = &a;
  }
  std::map<std::string, const AutoCandidate *> analysedPlans; // by describe()
  std::map<std::string, const AutoCandidate *> analysedBest;  // the family's fastest that fits
  std::map<std::string, const AutoCandidate *> analysedOver;  // the family's estimate analysed and over budget
  std::set<std::string> printed;
  size_t rank = 0;
  for (const AutoCandidate &a : r.analysed) {
    if (!a.valid) continue;
    analysedPlans[a.plan.describe()] = &a;
    if (!a.fits) {
      if (a.seed < 0 && !analysedOver.count(a.plan.mesh())) analysedOver[a.plan.mesh()] = &a;
      continue;
    }
    std::string family = a.plan.mesh();
    if (rank++ < o.top) printed.insert(family);
    if (!analysedBest.count(family)) analysedBest[family] = &a;
  }
  // The best plan's estimate, to compare estimates with (a change of the
  // plan as written may have none: then its analysed step).
  double bestEstimate = best ? best->stepSeconds : 0;
  if (best)
    for (const AutoCandidate &a : estimated)
      if (a.plan.describe() == best->plan.describe()) bestEstimate = a.estimatedSeconds;
  for (auto &[family, pair] : families) {
    auto [fast, small] = pair;
    if (printed.count(family)) continue;
    auto fitting = analysedBest.find(family);
    auto analysedFast = fast ? analysedPlans.find(fast->plan.describe()) : analysedPlans.end();
    if (best && fitting != analysedBest.end()) {
      // Analysed in full, it fits and is slower than the plans printed.
      double ratio = fitting->second->stepSeconds / std::max(1e-12, best->stepSeconds);
      r.rejected.push_back(family + ": analysed in full, " + llvm::formatv("{0:F2}", ratio).str() +
                           "x the best step (" + fitting->second->plan.describe() + ")");
      continue;
    }
    if (!fast) {
      r.rejected.push_back(family + ": over budget in every setting (estimated); the smallest, " + small->plan.describe() +
                           ", needs about " + formatBytes(small->estimatedPeak) + " of " + formatBytes(budget));
      continue;
    }
    // What was analysed of it and did not fit, then what was not analysed.
    std::string why;
    auto over = analysedOver.find(family);
    if (over != analysedOver.end()) {
      const AutoCandidate &a = *over->second;
      why = "over budget when analysed in full (" + a.plan.describe() + " needs " + formatBytes(a.peakArena) +
            " of " + formatBytes(budget) + ", estimated " + formatBytes(a.estimatedPeak) + ")";
    }
    if (analysedFast == analysedPlans.end() && best) {
      double ratio = fast->estimatedSeconds / std::max(1e-12, bestEstimate);
      why += std::string(why.empty() ? "" : "; ") + "not analysed in full: predicted " +
             llvm::formatv("{0:F2}", ratio).str() + "x the best step at best (" + fast->plan.describe() + ")" +
             (ratio < 1 ? ", after the search had " + std::to_string(o.fullAnalyses) + " plans that fit" : "");
    }
    if (!why.empty()) r.rejected.push_back(family + ": " + why);
  }
}

llvm::Expected<AutoResult> planc::searchPlans(Compilation &c, const AutoOptions &options) {
  return Search(c, options).run();
}
