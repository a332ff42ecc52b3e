//===- frontend/ConfigParallel.cpp - the parallel { } block and checkConfig ---===//
//
// The device mesh, ZeRO, sequence parallelism, the pipeline schedule and its
// stage balance, recompute, gradient buckets and overlap; then checkConfig, the checks that
// need settings from more than one block but nothing from the model.
//
//===----------------------------------------------------------------------===//

#include "frontend/ConfigReader.h"
#include "support/Plural.h"

#include <cstdio>

using namespace planc;
using namespace planc::config;

namespace {

const KeySpec keys[] = {
    {"mesh", "'mesh(dp = 2, pp = 2, tp = 4)'"},
    {"zero", "'zero = 1'"},
    {"sequence_parallel", "'sequence_parallel = true'"},
    {"pipeline", "'pipeline 1f1b(micro_batches = 32)'"},
    {"balance", "'balance = layers'"},
    {"recompute", "'recompute selective'"},
    {"bucket", "'bucket = 25 MiB'"},
    {"overlap", "'overlap(grad_reduce = true, param_gather = true)'"},
};

const KeySpec &spec(StringRef key) { return keySpec(keys, key); }

const Field *get(const Bound &args, StringRef name) {
  auto it = args.find(name.str());
  return it == args.end() ? nullptr : &it->second;
}

std::vector<StringRef> axisNames() {
  std::vector<StringRef> names;
  for (unsigned i = 0; i < kNumMeshAxes; ++i) names.push_back(spelling(MeshAxis(i)));
  return names;
}

/// `mesh(dp = 2, tp = 4)`. An unwritten dp is left 0 for interpretConfig to
/// derive from the cluster; an unwritten other axis is 1.
void readMesh(const Entry &e, ParallelConfig &p, Reader &r) {
  const KeySpec &key = spec("mesh");
  auto s = r.structured(e, key);
  if (!s) return;
  // `--set parallel.mesh=mesh(dp = 2, tp = 4)` writes the call with the key's name.
  if (s->scalar || (!s->head.empty() && s->head != "mesh")) {
    r.formError(e.key, e.keyRange, key.example);
    return;
  }
  std::vector<StringRef> names = axisNames();
  Bound args = r.bind("mesh", *s, names, 0, key.example, [&](StringRef name, SMRange range) {
    auto d = r.diags.report(DiagID::err_unknown_mesh_axis, range);
    d << name;
    Reader::suggest(d, name, range, names);
  });
  // Overrides adjust the mesh the file wrote: its axes stay unless replaced.
  if (s->written) {
    p.axisSize = {0, 1, 1, 1, 1};
    p.axisSource = {};
    p.axisOrder.clear();
  }
  // Keep the written order for printing: the file's fields first, then new axes from --set.
  std::vector<std::string> written;
  for (const Field &f : s->fields)
    if (!llvm::is_contained(written, f.name) && get(args, f.name)) written.push_back(f.name);
  for (const ArgOverride &o : s->overrides)
    if (!llvm::is_contained(written, o.name) && get(args, o.name)) written.push_back(o.name);
  for (const std::string &name : written) {
    const Field *f = get(args, name);
    MeshAxis axis = *parseMeshAxis(name);
    if (auto v = r.integer(f->value, f->name, 1, kMaxCount)) {
      // No pass splits the sequence over cp or the experts over ep: a
      // larger axis would only multiply the data-parallel replicas.
      if ((axis == MeshAxis::CP || axis == MeshAxis::EP) && *v > 1) {
        r.diags.report(DiagID::err_not_supported_yet, fieldRange(*f))
            << ("mesh axis '" + name + "' = " + std::to_string(*v))
            << "the mesh splits the work over dp, tp and pp only";
        continue;
      }
      p.axisSize[unsigned(axis)] = *v;
      p.axisSource[unsigned(axis)].range = f->fromOverride ? f->range : fieldRange(*f);
    }
    if (!llvm::is_contained(p.axisOrder, axis)) p.axisOrder.push_back(axis);
  }
  p.meshSource.range = e.source;
}

void readPipeline(const Entry &e, ParallelConfig &p, Reader &r) {
  const KeySpec &key = spec("pipeline");
  auto s = r.structured(e, key);
  if (!s) return;
  if (s->scalar || (s->written && s->head.empty())) {
    r.formError(e.key, e.keyRange, key.example);
    return;
  }
  // `pipeline none`: no schedule, as if none were written (what
  // `--set parallel.pipeline=none` needs to take a plan's pipeline away).
  if (s->head == "none" && s->fields.empty() && s->overrides.empty()) {
    p.schedule.reset();
    p.virtualStages = 1;
    p.microBatches = 0;
    p.scheduleSource = SettingSource();
    return;
  }
  // A pipeline setting names a schedule.
  std::optional<ScheduleStyle> kind = p.schedule;
  int64_t v = p.virtualStages, micro = p.microBatches;
  if (!s->head.empty()) {
    auto k = r.choice("pipeline schedule", s->head, s->headRange, kindNames<ScheduleStyle>());
    if (!k) return;
    kind = ScheduleStyle(*k);
    v = kind == ScheduleStyle::Interleaved ? 2 : 1; // two model chunks per stage unless told
    micro = 0;
  }
  std::vector<StringRef> params = {"micro_batches"};
  if (kind == ScheduleStyle::Interleaved) params.insert(params.begin(), "v");
  Bound args = r.bind(!kind ? "pipeline" : spelling(*kind), *s, params, 1,
                      key.example);
  if (const Field *f = get(args, "micro_batches"))
    if (auto n = r.integer(f->value, "micro_batches", 1, kMaxBatch)) micro = *n;
  if (const Field *f = get(args, "v"))
    // v = 1 is plain 1F1B; interleaving needs at least two chunks per stage.
    if (auto n = r.integer(f->value, "v", 2, kMaxCount)) v = *n;
  p.schedule = kind;
  p.virtualStages = v;
  p.microBatches = micro;
  p.scheduleSource.range = e.source;
}

void readOverlap(const Entry &e, ParallelConfig &p, Reader &r) {
  const KeySpec &key = spec("overlap");
  auto s = r.structured(e, key);
  if (!s) return;
  if (s->scalar) { // `overlap = false` switches every overlap off
    if (auto b = r.boolean(s->scalar, "overlap")) p.overlapGradReduce = p.overlapParamGather = *b;
    return;
  }
  if (!s->head.empty() && s->head != "overlap") {
    r.formError(e.key, e.keyRange, key.example);
    return;
  }
  Bound args = r.bind("overlap", *s, {"grad_reduce", "param_gather", "p2p"}, 0, key.example);
  if (const Field *f = get(args, "grad_reduce"))
    if (auto b = r.boolean(f->value, "grad_reduce")) p.overlapGradReduce = *b;
  if (const Field *f = get(args, "param_gather"))
    if (auto b = r.boolean(f->value, "param_gather")) p.overlapParamGather = *b;
  // Pipeline send/recv are placed by the schedule; no pass overlaps them
  // with compute, so `p2p` would be read by nothing.
  if (const Field *f = get(args, "p2p"))
    r.diags.report(DiagID::err_not_supported_yet, fieldRange(*f))
        << "'overlap(p2p)'" << "pipeline send and receive are not overlapped with compute; remove 'p2p'";
}

} // namespace

ArrayRef<KeySpec> config::parallelKeys() { return keys; }

void config::interpretParallel(const Block &block, ParallelConfig &p, Reader &r) {
  p.axisSize[unsigned(MeshAxis::DP)] = 0; // derived later unless the mesh writes it
  r.with(block, "mesh", [&](const Entry &e) { readMesh(e, p, r); });
  r.with(block, "zero", [&](const Entry &e) {
    const ast::Expr *x = r.scalar(e, spec("zero"));
    auto *n = llvm::dyn_cast_or_null<ast::NumberExpr>(x);
    if (n && n->isInteger && (n->intValue > 3 || n->overflow)) {
      r.diags.report(DiagID::err_zero_stage, x->range) << n->text;
      return;
    }
    if (x)
      if (auto v = r.integer(x, "zero", 0, 3)) {
        p.zeroStage = *v;
        p.zeroSource.range = e.source;
      }
  });
  r.readBool(block, spec("sequence_parallel"), p.sequenceParallel, p.sequenceParallelSource);
  r.with(block, "pipeline", [&](const Entry &e) { readPipeline(e, p, r); });
  r.with(block, "balance", [&](const Entry &e) {
    if (const ast::Expr *x = r.scalar(e, spec("balance")))
      if (auto k = r.choiceOf(x, "balance", "stage balance", kindNames<StageBalance>())) {
        p.balance = StageBalance(*k);
        p.balanceSource.range = e.source;
      }
  });
  r.with(block, "recompute", [&](const Entry &e) {
    const ast::Expr *x = r.scalar(e, spec("recompute"));
    // `auto` would choose per layer from the memory budget; until that is
    // written it is no policy, and not an unknown word either.
    if (auto *n = llvm::dyn_cast_or_null<ast::NameExpr>(x); n && n->name == "auto") {
      r.diags.report(DiagID::err_not_supported_yet, x->range) << "recompute policy 'auto'" << "use selective or full";
      return;
    }
    if (x)
      if (auto k = r.choiceOf(x, "recompute", "recompute policy", kindNames<RecomputePolicy>())) {
        p.recompute = RecomputePolicy(*k);
        p.recomputeSource.range = e.source;
      }
  });
  r.with(block, "bucket", [&](const Entry &e) {
    if (const ast::Expr *x = r.scalar(e, spec("bucket")))
      if (auto v = r.quantity(x, "bucket", UnitDim::Bytes)) {
        if (*v >= 0x1p62) {
          r.diags.report(DiagID::err_setting_value, x->range)
              << "bucket" << "less than 4 EiB" << Reader::describe(x);
          return;
        }
        p.bucketBytes = uint64_t(*v);
        p.bucketSource.range = e.source;
      }
  });
  r.with(block, "overlap", [&](const Entry &e) { readOverlap(e, p, r); });
}

//===----------------------------------------------------------------------===//
// checkConfig
//===----------------------------------------------------------------------===//

namespace {

std::string describeMesh(const ParallelConfig &p) {
  std::string out;
  for (unsigned i = 0; i < kNumMeshAxes; ++i) {
    MeshAxis a = MeshAxis(i);
    if (p.size(a) == 1 && !llvm::is_contained(p.axisOrder, a) && a != MeshAxis::DP) continue;
    out += (out.empty() ? "" : " x ") + std::string(spelling(a)) + " = " + std::to_string(p.size(a));
  }
  return out;
}

/// A note at the setting of an axis or a count, when the plan wrote it.
void noteSource(DiagBuilder &d, const SettingSource &source, StringRef name, int64_t value) {
  if (!source.isDefault())
    d.note(DiagID::note_axis_size_here, source.range, {name.str(), std::to_string(value)});
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", fraction * 100);
  std::string s = buf;
  if (llvm::StringRef(s).endswith(".0")) s.resize(s.size() - 2);
  return s;
}

} // namespace

void planc::checkConfig(const PlanConfig &config, DiagnosticEngine &diags, bool meshReplaced) {
  const TrainConfig &t = config.train;
  const ClusterConfig &c = config.cluster;
  const ParallelConfig &p = config.parallel;
  auto bad = [&](std::initializer_list<const char *> settings) {
    return llvm::any_of(settings, [&](const char *s) { return config.isInvalid(s); });
  };
  int64_t dp = p.size(MeshAxis::DP), pp = p.size(MeshAxis::PP), tp = p.size(MeshAxis::TP);

  // The mesh must cover the cluster exactly: every rank holds one mesh
  // coordinate. A mesh the caller replaces need not (planc auto): then
  // nothing below is checked against it.
  int64_t world = 0;
  bool worldOverflow = __builtin_mul_overflow(c.nodes, c.gpusPerNode, &world);
  const bool meshCovers = !worldOverflow && p.meshSize() == world;
  const bool meshIgnored = meshReplaced && !meshCovers;
  if (!meshIgnored && !bad({"parallel.mesh", "cluster.nodes", "cluster.gpus_per_node"}) && !meshCovers) {
    auto d = diags.report(DiagID::err_mesh_size, p.meshSource.range);
    d << counted(p.meshSize(), "device") << describeMesh(p) << world << counted(c.nodes, "node")
      << counted(c.gpusPerNode, "GPU");
    noteSource(d, c.nodesSource, "nodes", c.nodes);
    noteSource(d, c.gpusSource, "gpus_per_node", c.gpusPerNode);
  }

  // A decaying schedule runs from the end of warm-up to the last step: it needs
  // steps left after the warm-up.
  const OptimizerConfig &opt = t.optimizer;
  if (!bad({"train.optimizer", "train.steps"}) && opt.decay != DecayKind::Constant && opt.warmup >= t.steps) {
    auto d = diags.report(DiagID::err_warmup_steps, opt.source.range);
    d << counted(opt.warmup, "step") << t.steps;
    noteSource(d, t.stepsSource, "steps", t.steps);
  }

  // Each data-parallel rank runs whole micro-batches: global = micro x dp x m.
  int64_t perStep = t.microBatch * dp;
  bool batchOk = !meshIgnored && !bad({"train.global_batch", "train.micro_batch", "parallel.mesh"});
  if (batchOk && perStep > 0 && t.globalBatch % perStep != 0) {
    auto d = diags.report(DiagID::err_global_batch_divisible, t.globalBatchSource.range);
    d << t.globalBatch << t.microBatch << dp;
    noteSource(d, t.microBatchSource, "micro_batch", t.microBatch);
    noteSource(d, p.axisSource[unsigned(MeshAxis::DP)], "dp", dp);
    batchOk = false;
  }
  // The memory check and the execution plan follow every micro-batch of the
  // step: a step of millions of them (global_batch = 1e9) is a mistake that
  // would take minutes to analyse, so it is refused like a huge repeat count.
  if (batchOk && perStep > 0 && t.globalBatch / perStep > kMaxMicroBatchesPerStep) {
    diags.report(DiagID::err_setting_value, t.globalBatchSource.range)
        << "global_batch"
        << ("at most " + std::to_string(kMaxMicroBatchesPerStep) + " micro-batches of micro_batch x dp = " +
            std::to_string(t.microBatch) + " x " + std::to_string(dp) + " per step")
        << (std::to_string(t.globalBatch) + ", " + std::to_string(t.globalBatch / perStep) + " micro-batches");
    batchOk = false;
  }
  bool scheduleOk = !bad({"parallel.pipeline"});
  if (batchOk && scheduleOk && perStep > 0 && p.microBatches != 0 &&
      p.microBatches != t.globalBatch / perStep) {
    auto d = diags.report(DiagID::err_micro_batches_mismatch, p.scheduleSource.range);
    d << p.microBatches << t.globalBatch / perStep;
    // The count follows from these three: point at whichever the plan wrote.
    noteSource(d, t.globalBatchSource, "global_batch", t.globalBatch);
    noteSource(d, t.microBatchSource, "micro_batch", t.microBatch);
    noteSource(d, p.axisSource[unsigned(MeshAxis::DP)], "dp", dp);
    scheduleOk = false;
  }

  // With pp = 1, GPipe and 1F1B are plain gradient accumulation: harmless, so
  // only a warning (a `--set parallel.mesh.pp=1` experiment should still
  // compile). Interleaving and zero-bubble split work across stages and mean
  // nothing without them.
  bool meshOk = !meshIgnored && !bad({"parallel.mesh"});
  if (scheduleOk && meshOk && pp == 1 && !p.scheduleSource.isDefault()) {
    if (p.schedule == ScheduleStyle::Interleaved || p.schedule == ScheduleStyle::ZeroBubble) {
      auto d = diags.report(DiagID::err_schedule_needs_pp, p.scheduleSource.range);
      d << spelling(*p.schedule);
      noteSource(d, p.axisSource[unsigned(MeshAxis::PP)], "pp", pp);
      scheduleOk = false;
    } else if (p.schedule) {
      diags.report(DiagID::warn_setting_ignored, p.scheduleSource.range) << "pipeline" << "with pp = 1";
    }
  }
  if (scheduleOk && meshOk && pp > 1 && p.microBatches > 0) {
    if (p.schedule == ScheduleStyle::Interleaved && p.microBatches % pp != 0) {
      auto d = diags.report(DiagID::err_interleaved_micro_batches, p.scheduleSource.range);
      d << p.microBatches << pp;
      noteSource(d, p.axisSource[unsigned(MeshAxis::PP)], "pp", pp);
    } else if (p.microBatches < pp) {
      // GPipe/1F1B bubble: (p - 1) / (m + p - 1) of the step is idle.
      double bubble = double(pp - 1) / double(p.microBatches + pp - 1);
      SMRange at = !p.scheduleSource.isDefault() ? p.scheduleSource.range : p.meshSource.range;
      diags.report(DiagID::warn_few_micro_batches, at) << pp << counted(p.microBatches, "micro-batch") << percent(bubble);
    }
  }

  if (meshOk && !bad({"cluster.gpus_per_node"}) && tp > c.gpusPerNode) {
    SMRange at = p.axisSource[unsigned(MeshAxis::TP)].range;
    diags.report(DiagID::warn_tp_across_nodes, at.isValid() ? at : p.meshSource.range) << tp << counted(c.gpusPerNode, "GPU");
  }
  if (meshOk && p.sequenceParallel && tp == 1)
    diags.report(DiagID::warn_setting_ignored, p.sequenceParallelSource.range)
        << "sequence_parallel" << "with tp = 1";
  // ZeRO shards optimizer state (and more) over the data-parallel ranks.
  if (meshOk && p.zeroStage > 0 && dp == 1)
    diags.report(DiagID::warn_setting_ignored, p.zeroSource.range) << "zero" << "with dp = 1";
}
