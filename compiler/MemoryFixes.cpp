//===- compiler/MemoryFixes.cpp - changes that may make a plan fit --------===//
//
// The candidates of an over-budget plan and their order. A candidate is only
// a proposal: the check (MemoryCheck.cpp) applies its --set overrides to a
// fresh compilation and drops it when the changed plan does not check or
// partition, so this file may propose freely (a tp the heads do not divide,
// an interleaved schedule the new micro-batch count breaks) without
// repeating the plan checks.
//
// Each family (ZeRO, recompute, tp, pp, micro-batch, ...) proposes its
// strongest change first (ZeRO-3 before ZeRO-2, full recompute before
// selective, the largest tp): when the check can afford to analyse only a
// few candidates, it takes the first of every family before the second of
// any (selectMemoryFixes), so the change that saves most of each kind is
// always measured.
//
//===----------------------------------------------------------------------===//

#include "compiler/MemoryFixes.h"

#include "llvm/Support/SourceMgr.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

using namespace planc;

namespace {

/// The shortest decimal that reads back as `v` ("3e-4" stays 0.0003).
std::string number(double v) {
  char buf[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

class Proposer {
public:
  explicit Proposer(Compilation &c)
      : c(c), cfg(c.getConfig()), par(cfg.parallel), train(cfg.train), program(c.getProgram()) {}

  std::vector<MemoryFix> run() {
    zero();
    recompute();
    meshAxis(MeshAxis::TP);
    meshAxis(MeshAxis::PP);
    microBatch();
    sequenceParallel();
    fusion();
    optimizer();
    adapters();
    return std::move(fixes);
  }

private:
  /// True when `range` lies in the plan file itself (not a --set buffer, not
  /// a default): only then can an edit of the file apply the fix.
  bool inMainFile(llvm::SMRange range) const {
    return range.isValid() && c.getSourceMgr().FindBufferContainingLoc(range.Start) == c.getMainBuffer();
  }

  /// The setting that decides a fix: where it is written, else its block's
  /// header (the setting would go there), else nowhere.
  static llvm::SMRange decidesAt(const SettingSource &source, const ast::ConfigBlock *block) {
    if (source.range.isValid()) return source.range;
    return block ? block->keywordRange : llvm::SMRange();
  }

  static const ast::Setting *fileSetting(const ast::ConfigBlock *block, llvm::StringRef key) {
    if (!block) return nullptr;
    for (const ast::SettingPtr &s : block->settings)
      if (s->key == key) return s.get();
    return nullptr;
  }

  MemoryFix &add(const char *family, std::string change, std::vector<std::string> sets, llvm::SMRange decides) {
    MemoryFix f;
    f.family = family;
    f.change = std::move(change);
    f.sets = std::move(sets);
    f.decides = decides;
    fixes.push_back(std::move(f));
    return fixes.back();
  }

  /// An edit replacing a whole setting of the file with `text`.
  void replaceSetting(MemoryFix &f, const SettingSource &source, const std::string &text) {
    if (inMainFile(source.range)) f.edits.push_back({source.range, text});
  }

  void zero() {
    // ZeRO divides model states over dp; with dp = 1 it changes nothing.
    if (par.size(MeshAxis::DP) < 2) return;
    for (int64_t z = 3; z > par.zeroStage; --z) {
      std::string text = "zero = " + std::to_string(z);
      MemoryFix &f = add("zero", text, {"parallel.zero=" + std::to_string(z)}, decidesAt(par.zeroSource, program.parallel));
      replaceSetting(f, par.zeroSource, text);
    }
  }

  void recompute() {
    std::vector<RecomputePolicy> tries;
    if (par.recompute == RecomputePolicy::None) tries = {RecomputePolicy::Full, RecomputePolicy::Selective};
    else if (par.recompute != RecomputePolicy::Full) tries = {RecomputePolicy::Full};
    for (RecomputePolicy p : tries) {
      std::string text = std::string("recompute ") + spelling(p);
      MemoryFix &f = add("recompute", text, {std::string("parallel.recompute=") + spelling(p)},
                         decidesAt(par.recomputeSource, program.parallel));
      replaceSetting(f, par.recomputeSource, text);
    }
  }

  /// `mesh(dp = 4, tp = 2)`: the axes in the order written, dp first when
  /// the plan left it to the cluster, new axes last.
  static std::string meshText(const ParallelConfig &p, const std::array<int64_t, kNumMeshAxes> &sizes) {
    std::vector<MeshAxis> order = p.axisOrder;
    if (!llvm::is_contained(order, MeshAxis::DP)) order.insert(order.begin(), MeshAxis::DP);
    for (MeshAxis a : {MeshAxis::PP, MeshAxis::TP, MeshAxis::CP, MeshAxis::EP})
      if (sizes[unsigned(a)] > 1 && !llvm::is_contained(order, a)) order.push_back(a);
    std::string text = "mesh(";
    for (size_t i = 0; i < order.size(); ++i)
      text += (i ? ", " : "") + std::string(spelling(order[i])) + " = " + std::to_string(sizes[unsigned(order[i])]);
    return text + ")";
  }

  /// A written pipeline's micro-batch count follows the batch: one more
  /// override (and edit) when dp or micro_batch changes it.
  void followPipeline(MemoryFix &f, int64_t microBatch, int64_t dp) {
    if (!par.scheduleSource.range.isValid()) return; // derived from the batch anyway
    int64_t perStep = microBatch * dp;
    if (perStep <= 0 || train.globalBatch % perStep) return; // the re-check reports it
    int64_t k = train.globalBatch / perStep;
    if (k == par.microBatches) return;
    f.sets.push_back("parallel.pipeline.micro_batches=" + std::to_string(k));
    if (!inMainFile(par.scheduleSource.range)) return;
    if (const ast::Setting *s = fileSetting(program.parallel, "pipeline"))
      if (auto *call = llvm::dyn_cast_or_null<ast::CallExpr>(s->value.get()))
        for (const ast::Arg &a : call->args)
          if (a.name == "micro_batches" && a.value) f.edits.push_back({a.value->range, std::to_string(k)});
  }

  /// tp (within a node) or pp (while the layers divide) doubled, dp halved:
  /// the mesh keeps its rank count. The largest first.
  void meshAxis(MeshAxis axis) {
    const int64_t dp = par.size(MeshAxis::DP), now = par.size(axis);
    const int64_t layers = c.getModel().numLayers;
    std::vector<int64_t> sizesOfAxis;
    for (int64_t n = now * 2; dp % (n / now) == 0; n *= 2) {
      if (axis == MeshAxis::TP && n > cfg.cluster.gpusPerNode) break;
      if (axis == MeshAxis::PP && (layers < n || layers % n)) break;
      sizesOfAxis.insert(sizesOfAxis.begin(), n);
    }
    for (int64_t n : sizesOfAxis) {
      auto sizes = par.axisSize;
      sizes[unsigned(axis)] = n;
      sizes[unsigned(MeshAxis::DP)] = dp / (n / now);
      std::string text = meshText(par, sizes);
      MemoryFix &f = add(axis == MeshAxis::TP ? "tp" : "pp", text, {"parallel.mesh=" + text},
                         decidesAt(par.meshSource, program.parallel));
      replaceSetting(f, par.meshSource, text);
      followPipeline(f, train.microBatch, sizes[unsigned(MeshAxis::DP)]);
    }
  }

  /// Smaller micro-batches, more of them: the global batch stays. The
  /// smallest first.
  void microBatch() {
    std::vector<int64_t> sizes;
    for (int64_t b = train.microBatch; b > 1;) {
      b = b % 2 == 0 ? b / 2 : 1;
      sizes.insert(sizes.begin(), b);
    }
    for (int64_t b : sizes) {
      std::string text = "micro_batch = " + std::to_string(b);
      std::vector<std::string> sets = {"train.micro_batch=" + std::to_string(b)};
      // An unwritten global batch follows the micro-batch: pin it.
      if (train.globalBatchSource.isDefault()) sets.push_back("train.global_batch=" + std::to_string(train.globalBatch));
      MemoryFix &f = add("micro_batch", text, std::move(sets), decidesAt(train.microBatchSource, program.train));
      replaceSetting(f, train.microBatchSource, text);
      followPipeline(f, b, par.size(MeshAxis::DP));
    }
  }

  void sequenceParallel() {
    if (par.size(MeshAxis::TP) < 2 || par.sequenceParallel) return;
    MemoryFix &f = add("sequence_parallel", "sequence_parallel = true", {"parallel.sequence_parallel=true"},
                       decidesAt(par.sequenceParallelSource, program.parallel));
    replaceSetting(f, par.sequenceParallelSource, "sequence_parallel = true");
  }

  /// Fusion turned down from the default: every fusion (flash attention
  /// keeps no s x s scores), then elementwise chains alone. The same step up
  /// to rounding, as the interpreter checks (docs/fusion.md).
  void fusion() {
    for (FusionPolicy p : {FusionPolicy::Aggressive, FusionPolicy::Elementwise}) {
      if (unsigned(p) <= unsigned(train.fusion)) break;
      std::string text = std::string("fusion = ") + spelling(p);
      MemoryFix &f = add("fusion", text, {std::string("train.fusion=") + spelling(p)},
                         decidesAt(train.fusionSource, program.train));
      replaceSetting(f, train.fusionSource, text);
    }
  }

  /// Adam's two f32 moments as 8-bit blocks: the same settings, written out
  /// whole because --set replaces the optimizer's kind only with its arguments.
  void optimizer() {
    const OptimizerConfig &o = train.optimizer;
    if (o.kind != OptimizerKind::Adam && o.kind != OptimizerKind::AdamW) return;
    static const char *decays[] = {"constant", "linear", "cosine"};
    std::string call = "adam8bit(lr = " + number(o.lr) + ", betas = (" + number(o.beta1) + ", " + number(o.beta2) +
                       "), eps = " + number(o.eps) + ", weight_decay = " + number(o.weightDecay) +
                       ", warmup = " + std::to_string(o.warmup) + ", decay = " + decays[unsigned(o.decay)] +
                       ", min_lr = " + number(o.minLr);
    // The rule of which parameters decay, where it is not the default and matters.
    if (o.weightDecayParams != OptimizerConfig().weightDecayParams && o.weightDecay > 0)
      call += std::string(", weight_decay_params = ") + spelling(o.weightDecayParams);
    call += ")";
    MemoryFix &f = add("optimizer", "optimizer adam8bit", {"train.optimizer=" + call}, decidesAt(o.source, program.train));
    f.changesNumerics = true; // quantized moments: not the same numerics (REFERENCES.md, seed 003 9.5)
    // The edit renames the kind and keeps the file's arguments.
    if (!inMainFile(o.source.range)) return;
    if (const ast::Setting *s = fileSetting(program.train, "optimizer"))
      if (auto *callExpr = llvm::dyn_cast_or_null<ast::CallExpr>(s->value.get()))
        f.edits.push_back({callExpr->calleeRange, "adam8bit"});
  }

  /// LoRA (rank 8 on every linear weight, the base frozen): fine-tuning
  /// rather than training, so it changes what the plan does, not only how;
  /// proposed for a model that trains every weight, and ranked with the rest
  /// by its measured peak and price. The re-check drops it for a model with
  /// no linear weight.
  void adapters() {
    if (train.adapters.kind != AdapterKind::None) return;
    if (c.getModel().trainableParams() != c.getModel().totalParams()) return; // adapters or a frozen base already
    MemoryFix &f = add("adapters", "adapters lora(rank = 8)", {"train.adapters=lora(rank = 8)"},
                       decidesAt(train.adapters.source, program.train));
    replaceSetting(f, train.adapters.source, "adapters lora(rank = 8)");
    f.changesTraining = true;
  }

  Compilation &c;
  const PlanConfig &cfg;
  const ParallelConfig &par;
  const TrainConfig &train;
  const Program &program;
  std::vector<MemoryFix> fixes;
};

} // namespace

std::vector<MemoryFix> planc::proposeMemoryFixes(Compilation &c) { return Proposer(c).run(); }

size_t planc::memoryFixBudget(size_t planOps) {
  constexpr size_t kFixSearchOps = 25000;
  return std::max<size_t>(1, kFixSearchOps / std::max<size_t>(1, planOps));
}

std::vector<MemoryFix> planc::memoryFixCandidates(Compilation &c, size_t planOps) {
  return selectMemoryFixes(proposeMemoryFixes(c), memoryFixBudget(planOps));
}

std::vector<MemoryFix> planc::selectMemoryFixes(std::vector<MemoryFix> proposed, size_t allowed) {
  // The families in the order they were proposed, each its changes in order.
  std::vector<std::string> families;
  for (const MemoryFix &f : proposed)
    if (!llvm::is_contained(families, f.family)) families.push_back(f.family);
  allowed = std::max(allowed, families.size());
  std::vector<MemoryFix> out;
  std::vector<bool> taken(proposed.size(), false);
  // Round k takes each family's k-th change.
  for (size_t round = 0; out.size() < allowed && out.size() < proposed.size(); ++round)
    for (const std::string &family : families) {
      size_t seen = 0;
      for (size_t i = 0; i < proposed.size() && out.size() < allowed; ++i) {
        if (proposed[i].family != family) continue;
        if (seen++ == round) {
          out.push_back(proposed[i]);
          taken[i] = true;
          break;
        }
      }
    }
  // Back in the order proposed.
  std::vector<MemoryFix> ordered;
  for (size_t i = 0; i < proposed.size(); ++i)
    if (taken[i]) ordered.push_back(std::move(proposed[i]));
  return ordered;
}

std::vector<MemoryFix> planc::combineMemoryFixes(std::vector<MemoryFix> analysed, size_t closest, size_t size) {
  // The settings a fix changes: the keys of its overrides.
  auto keys = [](const MemoryFix &f) {
    std::vector<std::string> out;
    for (const std::string &s : f.sets) out.push_back(s.substr(0, s.find('=')));
    return out;
  };
  // The best change of each setting (the largest tp, ZeRO-3, full
  // recompute, ...), closest first: combining two meshes means nothing.
  std::stable_sort(analysed.begin(), analysed.end(),
                   [](const MemoryFix &a, const MemoryFix &b) { return a.peakArena < b.peakArena; });
  std::vector<MemoryFix> best;
  std::vector<std::string> seen;
  for (MemoryFix &f : analysed) {
    std::string first = f.sets.empty() ? std::string() : keys(f).front();
    if (llvm::is_contained(seen, first)) continue;
    seen.push_back(first);
    best.push_back(std::move(f));
  }
  analysed = std::move(best);
  if (analysed.size() > closest) analysed.resize(closest);
  std::vector<MemoryFix> out;
  std::vector<size_t> pick;
  // Every increasing index tuple of length `size`, in lexicographic order
  // (so combinations of the closest fixes come first).
  std::function<void(size_t)> choose = [&](size_t from) {
    if (pick.size() == size) {
      MemoryFix f;
      std::vector<std::string> used;
      for (size_t i : pick) {
        const MemoryFix &part = analysed[i];
        for (const std::string &k : keys(part))
          if (llvm::is_contained(used, k)) return; // two changes of one setting
        for (const std::string &k : keys(part)) used.push_back(k);
        f.change += (f.change.empty() ? "" : " and ") + part.change;
        // Until analysed: the best peak of its parts, which it must beat.
        f.peakArena = f.peakArena ? std::min(f.peakArena, part.peakArena) : part.peakArena;
        f.sets.insert(f.sets.end(), part.sets.begin(), part.sets.end());
        f.edits.insert(f.edits.end(), part.edits.begin(), part.edits.end());
        f.changesTraining |= part.changesTraining;
        f.changesNumerics |= part.changesNumerics;
        if (!f.decides.isValid()) f.decides = part.decides;
      }
      out.push_back(std::move(f));
      return;
    }
    for (size_t i = from; i < analysed.size(); ++i) {
      pick.push_back(i);
      choose(i + 1);
      pick.pop_back();
    }
  };
  if (size >= 2) choose(0);
  return out;
}

void planc::rankMemoryFixes(std::vector<MemoryFix> &fixes) {
  // Whole bytes, whole FLOPs and 1e-9 of a step: sums of doubles that should
  // tie do.
  auto bytes = [](const MemoryFix &f) { return std::round(f.extra.commBytes); };
  auto flops = [](const MemoryFix &f) { return std::round(f.extra.recomputeFlops); };
  auto bubble = [](const MemoryFix &f) { return std::round(f.extra.bubble * 1e9); };
  // Predicted step times equal to a microsecond tie.
  auto time = [](const MemoryFix &f) { return std::round(f.stepSeconds * 1e6); };
  std::stable_sort(fixes.begin(), fixes.end(), [&](const MemoryFix &a, const MemoryFix &b) {
    if (a.fits != b.fits) return a.fits;
    if (a.fits) {
      if (a.changesTraining != b.changesTraining) return b.changesTraining;
      if (a.changesNumerics != b.changesNumerics) return b.changesNumerics;
      if (time(a) != time(b)) return time(a) < time(b);
      if (bytes(a) != bytes(b)) return bytes(a) < bytes(b);
      if (flops(a) != flops(b)) return flops(a) < flops(b);
      if (bubble(a) != bubble(b)) return bubble(a) < bubble(b);
    }
    return a.peakArena < b.peakArena;
  });
}
