//===- compiler/AutoPlan.cpp - profiles, closed-form estimates, full checks ===//

#include "compiler/AutoPlan.h"

#include "compiler/Ledger.h"
#include "compiler/MemoryCheck.h"
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
// PlanChoice
//===----------------------------------------------------------------------===//

namespace {

std::string meshText(const PlanChoice &p) {
  std::string text = "mesh(dp = " + std::to_string(p.dp);
  if (p.pp > 1) text += ", pp = " + std::to_string(p.pp);
  if (p.tp > 1) text += ", tp = " + std::to_string(p.tp);
  return text + ")";
}

std::string scheduleText(const PlanChoice &p) {
  std::string mb = "micro_batches = " + std::to_string(p.microBatches);
  switch (p.schedule) {
  case ScheduleStyle::GPipe: return "gpipe(" + mb + ")";
  case ScheduleStyle::Interleaved: return "interleaved(v = " + std::to_string(p.virtualStages) + ", " + mb + ")";
  case ScheduleStyle::ZeroBubble: return "zero_bubble(" + mb + ")";
  default: return "1f1b(" + mb + ")";
  }
}

} // namespace

std::vector<std::string> PlanChoice::sets() const {
  std::vector<std::string> s = {"parallel.mesh=" + meshText(*this), "parallel.zero=" + std::to_string(zero),
                                std::string("parallel.sequence_parallel=") + (sequenceParallel ? "true" : "false"),
                                std::string("parallel.recompute=") + spelling(recompute),
                                "train.micro_batch=" + std::to_string(microBatch),
                                // Always: a pipeline the plan writes (its micro_batches) must follow
                                // the new batch split, and with pp = 1 it is plain accumulation.
                                "parallel.pipeline=" + scheduleText(*this)};
  return s;
}

std::string PlanChoice::describe() const {
  std::string d = meshText(*this) + ", zero " + std::to_string(zero);
  if (sequenceParallel) d += ", sequence parallel";
  d += std::string(", recompute ") + spelling(recompute) + ", micro_batch " + std::to_string(microBatch);
  if (pp > 1) d += ", " + scheduleText(*this);
  return d;
}

std::string PlanChoice::parallelBlock(int64_t planMicroBatch) const {
  std::string b = "parallel {\n  " + meshText(*this) + "\n  zero = " + std::to_string(zero) + "\n";
  if (sequenceParallel) b += "  sequence_parallel = true\n";
  if (pp > 1) b += "  pipeline " + scheduleText(*this) + "\n";
  b += std::string("  recompute ") + spelling(recompute) + "\n";
  if (microBatch != planMicroBatch)
    b += "  // with train.micro_batch = " + std::to_string(microBatch) + " (the plan has " +
         std::to_string(planMicroBatch) + "; --apply sets it)\n";
  return b + "}\n";
}

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

using ProfileKey = std::tuple<int64_t, bool, RecomputePolicy>;

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
  auto [tp, sp, rec] = key;
  PlanChoice one;
  one.tp = tp;
  one.sequenceParallel = sp;
  one.recompute = rec;
  std::vector<std::string> sets = one.sets();
  sets.insert(sets.end(), {"cluster.nodes=1", "cluster.gpus_per_node=" + std::to_string(tp), "train.global_batch=1",
                           "parallel.pipeline=1f1b(micro_batches = 1)"});
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
              for (RecomputePolicy rec : {RecomputePolicy::None, RecomputePolicy::Selective, RecomputePolicy::Full}) {
                AutoCandidate a;
                PlanChoice &p = a.plan;
                p.dp = dp, p.tp = tp, p.pp = pp, p.zero = zero, p.sequenceParallel = sp, p.recompute = rec;
                p.microBatch = mb, p.microBatches = m, p.schedule = style, p.virtualStages = v;
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
  double rest = (perStage * p.layerActs + p.endsActs) * mb * inFlight + p.temps * mb;
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
    else comm = m * (std::max(0.0, ag - f) + std::max(0.0, ag + rs - b));
  }
  double optimizer = perStage * p.layerOptimizer + p.endsOptimizer;
  if (x.zero >= 1) optimizer /= dp;
  a.estimatedSeconds = pipelined + comm + optimizer;
}

} // namespace

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

  std::vector<AutoCandidate> all;
  enumerate(all);
  r.candidates = all.size();
  if (all.empty())
    r.rejected.push_back("every mesh: global_batch " + std::to_string(cfg.train.globalBatch) +
                         " is not divisible by the data-parallel size of any mesh of the " +
                         counted(cfg.cluster.worldSize(), "device") + " (tp within a node, pp dividing the " +
                         counted(layers, "layer") + ")");
  progress(counted(int64_t(all.size()), "candidate plan") + " of " + counted(cfg.cluster.worldSize(), "device") +
           "; profiling the model" + (depth.empty() ? "" : " (one and two of its '" + depth + "' layers)"));

  // Profile every (tp, sp, recompute); families the model rejects go.
  std::map<int64_t, std::string> badTp;
  std::vector<AutoCandidate> estimated;
  for (AutoCandidate &a : all) {
    if (badTp.count(a.plan.tp)) continue;
    const Profile &p = profile({a.plan.tp, a.plan.sequenceParallel, a.plan.recompute});
    if (!p.valid) {
      // A tp the model cannot be split by is a family of its own.
      if (!a.plan.sequenceParallel && a.plan.recompute == RecomputePolicy::None) badTp[a.plan.tp] = p.error;
      continue;
    }
    estimate(a, p);
    estimated.push_back(a);
  }
  r.profiles = profiles.size();
  r.estimates.reserve(estimated.size());
  for (const AutoCandidate &a : estimated) r.estimates.push_back({a.estimatedPeak, a.estimatedSeconds});
  for (auto &[tp, why] : badTp) r.rejected.push_back("tp = " + std::to_string(tp) + ": " + why);
  if (cfg.cluster.gpusPerNode < cfg.cluster.worldSize())
    r.rejected.push_back("tp > " + std::to_string(cfg.cluster.gpusPerNode) +
                         ": not searched (tensor parallelism stays inside a node: its collectives block every layer)");
  progress(std::to_string(profiles.size()) + " profiles, " + std::to_string(estimated.size()) +
           " estimates; analysing the best in full");

  // The best estimates that fit (with a margin for the estimate's error,
  // a few percent: tests/lit/cost/auto-estimates.test), one of each mesh
  // before a second of any.
  const double margin = 1.03;
  std::vector<AutoCandidate *> order;
  for (AutoCandidate &a : estimated)
    if (double(a.estimatedPeak) <= margin * double(budget)) order.push_back(&a);
  std::stable_sort(order.begin(), order.end(),
                   [](const AutoCandidate *a, const AutoCandidate *b) { return a->estimatedSeconds < b->estimatedSeconds; });
  // Analysed in full in order of estimate, one of each mesh before a
  // second of any, until fullAnalyses fit (or three more were tried).
  std::vector<AutoCandidate> chosen;
  std::set<std::string> meshesTaken, tried;
  size_t fitting = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (AutoCandidate *cand : order) {
      if (fitting >= o.fullAnalyses || chosen.size() >= o.fullAnalyses + 3) break;
      std::string family = meshText(cand->plan);
      if (pass == 0 && meshesTaken.count(family)) continue;
      if (!tried.insert(cand->plan.describe()).second) continue;
      meshesTaken.insert(family);
      AutoCandidate a = *cand;
      Variant v = analyseVariant(c, a.plan.sets(), {}, o.calibration);
      a.analysed = true;
      if (!v.analysis) {
        a.valid = false;
        a.invalidReason = v.error;
      } else {
        a.peakArena = v.analysis->peakArena();
        a.stepSeconds = v.analysis->time.stepTime;
        a.mfu = v.analysis->time.mfu();
        a.fits = a.peakArena <= budget;
        a.commBytes = v.analysis->cost.commBytes;
        a.recomputeFlops = v.analysis->cost.recomputeFlops;
        a.bubble = v.analysis->cost.bubble;
        fitting += a.fits;
        progress(a.plan.describe() + ": " + formatBytes(a.peakArena) + " (estimated " + formatBytes(a.estimatedPeak) +
                 "), " + formatSeconds(a.stepSeconds) + " (estimated " + formatSeconds(a.estimatedSeconds) + ")" +
                 (a.fits ? "" : ", over budget"));
      }
      chosen.push_back(std::move(a));
    }
  std::stable_sort(chosen.begin(), chosen.end(), [](const AutoCandidate &a, const AutoCandidate &b) {
    if (a.valid != b.valid) return a.valid;
    if (a.fits != b.fits) return a.fits;
    if (a.fits) return a.stepSeconds < b.stepSeconds;
    return a.peakArena < b.peakArena;
  });
  r.analysed = std::move(chosen);

  // One line per mesh family that lost: over budget everywhere, or slower.
  const AutoCandidate *best = r.best();
  std::map<std::string, std::pair<const AutoCandidate *, const AutoCandidate *>> families; // fastest fitting, smallest
  for (const AutoCandidate &a : estimated) {
    auto &[fast, small] = families[meshText(a.plan)];
    bool fitsEst = a.estimatedPeak <= budget;
    if (fitsEst && (!fast || a.estimatedSeconds < fast->estimatedSeconds)) fast = &a;
    if (!small || a.estimatedPeak < small->estimatedPeak) small = &a;
  }
  // A family analysed in full speaks for itself: printed among the best,
  // it is no rejection; below them, its analysed step is the reason.
  std::map<std::string, const AutoCandidate *> analysedBest;
  std::set<std::string> printed;
  size_t rank = 0;
  for (const AutoCandidate &a : r.analysed) {
    if (!a.valid || !a.fits) continue;
    std::string family = meshText(a.plan);
    if (rank++ < o.top) printed.insert(family);
    if (!analysedBest.count(family)) analysedBest[family] = &a;
  }
  for (auto &[family, pair] : families) {
    auto [fast, small] = pair;
    if (printed.count(family)) continue;
    auto analysed = analysedBest.find(family);
    if (best && analysed != analysedBest.end()) {
      double ratio = analysed->second->stepSeconds / std::max(1e-12, best->stepSeconds);
      r.rejected.push_back(family + ": analysed in full, " + llvm::formatv("{0:F2}", ratio).str() +
                           "x the best step (" + analysed->second->plan.describe() + ")");
    } else if (!fast) {
      r.rejected.push_back(family + ": over budget in every setting (estimated); the smallest, " + small->plan.describe() +
                           ", needs about " + formatBytes(small->estimatedPeak) + " of " + formatBytes(budget));
    } else if (best) {
      double ratio = fast->estimatedSeconds / std::max(1e-12, best->estimatedSeconds);
      r.rejected.push_back(family + ": predicted " + llvm::formatv("{0:F2}", ratio).str() + "x the best step at best (" +
                           fast->plan.describe() + ")");
    }
  }

  // The plan as written, for comparison.
  Variant now;
  if (o.analyseCurrent) now = analyseVariant(c, {}, {}, o.calibration);
  if (now.analysis) {
    AutoCandidate cur;
    cur.plan = currentPlanChoice(c);
    cur.analysed = true;
    cur.peakArena = now.analysis->peakArena();
    cur.stepSeconds = now.analysis->time.stepTime;
    cur.mfu = now.analysis->time.mfu();
    cur.fits = cur.peakArena <= budget;
    r.current = cur;
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

PlanChoice planc::currentPlanChoice(const Compilation &c) {
  const PlanConfig &cfg = c.getConfig();
  const ParallelConfig &par = cfg.parallel;
  PlanChoice p;
  p.dp = par.size(MeshAxis::DP), p.tp = par.size(MeshAxis::TP), p.pp = par.size(MeshAxis::PP);
  p.zero = par.zeroStage, p.sequenceParallel = par.sequenceParallel, p.recompute = par.recompute;
  p.microBatch = cfg.train.microBatch;
  ScheduleOptions so = scheduleOfPlan(par);
  p.microBatches = so.microBatches;
  p.schedule = so.style;
  p.virtualStages = so.virtualStages;
  return p;
}

llvm::Expected<AutoResult> planc::searchPlans(Compilation &c, const AutoOptions &options) {
  return Search(c, options).run();
}

void planc::printAutoResult(const AutoResult &r, size_t top, llvm::raw_ostream &os) {
  os << "planc auto: " << r.candidates << " candidate plans, " << r.profiles << " profiles, "
     << llvm::count_if(r.analysed, [](const AutoCandidate &a) { return a.analysed; })
     << " analysed in full, in " << llvm::formatv("{0:F1}", r.seconds) << " s; budget " << formatBytes(r.budget)
     << "\n";
  if (r.current)
    os << "  the plan as written: " << formatBytes(r.current->peakArena) << (r.current->fits ? " (fits), " : " (over budget), ")
       << formatSeconds(r.current->stepSeconds) << " per step, MFU " << llvm::formatv("{0:F1}%", r.current->mfu * 100)
       << "\n";
  os << "best plans (analysed in full: the planner's arena, the cost model's step):\n";
  size_t shown = 0;
  for (const AutoCandidate &a : r.analysed) {
    if (shown >= top) break;
    if (!a.valid) continue;
    ++shown;
    os << "  " << shown << ". " << a.plan.describe() << "\n     " << formatBytes(a.peakArena)
       << (a.fits ? "" : " (over budget)") << ", " << formatSeconds(a.stepSeconds) << " per step, MFU "
       << llvm::formatv("{0:F1}%", a.mfu * 100) << "\n";
  }
  if (!shown) os << "  none\n";
  for (const AutoCandidate &a : r.analysed)
    if (!a.valid) os << "  rejected when compiled: " << a.plan.describe() << ": " << a.invalidReason << "\n";
  if (!r.rejected.empty()) {
    os << "rejected:\n";
    for (const std::string &line : r.rejected) os << "  " << line << "\n";
  }
}

std::string planc::applyPlanChoice(Compilation &c, const PlanChoice &choice) {
  const llvm::MemoryBuffer *main = c.getSourceMgr().getMemoryBuffer(c.getMainBuffer());
  llvm::StringRef text = main->getBuffer();
  auto offset = [&](llvm::SMLoc loc) { return size_t(loc.getPointer() - text.begin()); };
  auto inMain = [&](llvm::SMRange r) {
    return r.isValid() && r.Start.getPointer() >= text.begin() && r.End.getPointer() <= text.end();
  };
  // Edits as (begin, end, replacement), applied from the last.
  std::vector<std::tuple<size_t, size_t, std::string>> edits;
  std::string block = choice.parallelBlock(choice.microBatch);
  const ast::ConfigBlock *par = c.getProgram().parallel;
  if (par && inMain(par->range)) {
    if (!block.empty() && block.back() == '\n') block.pop_back();
    edits.push_back({offset(par->range.Start), offset(par->range.End), block});
  } else {
    edits.push_back({text.size(), text.size(), std::string(text.empty() || text.back() == '\n' ? "\n" : "\n\n") + block});
  }
  const TrainConfig &train = c.getConfig().train;
  if (choice.microBatch != train.microBatch) {
    std::string setting = "micro_batch = " + std::to_string(choice.microBatch);
    const ast::ConfigBlock *tb = c.getProgram().train;
    if (inMain(train.microBatchSource.range)) {
      edits.push_back({offset(train.microBatchSource.range.Start), offset(train.microBatchSource.range.End), setting});
    } else if (tb && inMain(tb->range)) {
      // After the block's opening brace.
      size_t brace = text.find('{', offset(tb->keywordRange.End));
      if (brace != llvm::StringRef::npos) edits.push_back({brace + 1, brace + 1, "\n  " + setting});
    } else {
      edits.push_back({text.size(), text.size(), "\ntrain {\n  " + setting + "\n}\n"});
    }
  }
  std::sort(edits.begin(), edits.end(), [](const auto &a, const auto &b) { return std::get<0>(a) > std::get<0>(b); });
  std::string out = text.str();
  for (const auto &[begin, end, replacement] : edits) out.replace(begin, end - begin, replacement);
  return out;
}
