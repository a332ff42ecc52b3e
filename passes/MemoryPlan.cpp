//===- passes/MemoryPlan.cpp - liveness and arena placement per rank ------===//

#include "passes/MemoryPlan.h"
#include "passes/PipelineAttrs.h"

#include "ir/LocalBlocks.h"
#include "ir/MeshLayout.h"

#include <algorithm>
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include <map>
#include <unordered_map>
#include <unordered_set>

using namespace planc;
using namespace planc::ir;
using namespace planc::memory;

const char *memory::spelling(Category c) {
  switch (c) {
  case Category::Parameters: return "parameters";
  case Category::Gradients: return "gradients";
  case Category::OptimizerState: return "optimizer state";
  case Category::Activations: return "activations";
  case Category::Temporaries: return "temporaries";
  case Category::Communication: return "communication";
  }
  return "";
}

const StagePlan &MemoryPlan::peakStage() const {
  return *std::max_element(stages.begin(), stages.end(),
                           [](const StagePlan &a, const StagePlan &b) { return a.peak < b.peak; });
}

namespace {

constexpr uint64_t kAlign = 64;

/// One rank's arena: buffers at fixed offsets, first fit in address order.
class Arena {
public:
  uint64_t allocate(uint64_t size) {
    for (auto it = holes.begin(); it != holes.end(); ++it)
      if (it->second >= size) {
        uint64_t at = it->first, left = it->second - size;
        holes.erase(it);
        if (left) holes[at + size] = left;
        return at;
      }
    // Grow, absorbing a hole that ends at the top.
    uint64_t at = end;
    if (!holes.empty()) {
      auto last = std::prev(holes.end());
      if (last->first + last->second == end) {
        at = last->first;
        holes.erase(last);
      }
    }
    end = std::max(end, at + size);
    return at;
  }
  void release(uint64_t at, uint64_t size) {
    auto [it, inserted] = holes.emplace(at, size);
    (void)inserted;
    if (auto next = std::next(it); next != holes.end() && at + size == next->first) {
      it->second += next->second;
      holes.erase(next);
    }
    if (it != holes.begin())
      if (auto prev = std::prev(it); prev->first + prev->second == at) {
        prev->second += it->second;
        holes.erase(it);
      }
  }
  uint64_t size() const { return end; }

private:
  std::map<uint64_t, uint64_t> holes; // offset -> size
  uint64_t end = 0;
};

/// Results that count as communication buffers: what collectives and
/// receives make, and stage_merge's cross-stage sum.
bool makesCommunicationBuffer(OpKind k) { return isCommunication(k) || k == OpKind::StageMerge; }

/// A buffer instance: a value in one micro-batch (-1: once per step).
using Key = std::pair<const Value *, int>;
struct KeyHash {
  size_t operator()(const Key &k) const { return std::hash<const Value *>()(k.first) * 31 + size_t(k.second + 1); }
};

class StagePlanner {
public:
  StagePlanner(const Module &m, const MeshLayout &mesh, const pipeline::PipelineSchedule &schedule, int stage)
      : m(m), mesh(mesh), schedule(schedule), stage(stage) {}

  StagePlan run() {
    StagePlan plan;
    plan.stage = stage;
    for (int64_t r = 0; r < mesh.numRanks(); ++r)
      if (mesh.coordinates(r)[unsigned(MeshAxis::PP)] == stage) plan.ranks.push_back(r);
    collect();
    sequence();
    findLastUses();
    simulate(plan);
    plan.modelStates = countModelStates();
    return plan;
  }

private:
  /// The rank-local block's bytes, unpadded.
  uint64_t dataBytesOf(const Value *v) const {
    Shape local = localShape(v->type, mesh);
    uint64_t n = 1;
    for (int64_t d : local) n *= uint64_t(d);
    return n * byteSize(v->type.dtype);
  }
  /// What the buffer takes in the arena: padded to the alignment.
  uint64_t bytesOf(const Value *v) const { return (dataBytesOf(v) + kAlign - 1) / kAlign * kAlign; }

  /// The ops this pipeline rank runs, by instruction group, and the roles of
  /// values that decide their category and lifetime.
  void collect() {
    for (const Value *p : m.params) paramDerived.insert(p);
    for (const auto &up : m.ops) {
      bool fromParams = !up->operands.empty() && workOf(*up) == Work::Forward;
      for (const Value *v : up->operands) fromParams &= paramDerived.count(v) > 0;
      if (fromParams)
        for (const Value *r : up->results) paramDerived.insert(r);
    }
    for (const Value *p : m.params) paramDerived.erase(p);
    for (const auto &up : m.ops) {
      const Op &op = *up;
      if (op.has("pipeline_stage") && op.getInt("pipeline_stage") != stage) continue;
      Work w = workOf(op);
      if (w == Work::Optimizer) {
        optimizer.push_back(&op);
      } else {
        int vs = virtualStageOf(op);
        groups[{vs < 0 ? stage : vs, w == Work::WeightGrad && !weightGradInSchedule() ? Work::Backward : w}].push_back(&op);
      }
      for (const Value *v : op.operands)
        if (!v->def) onRank.insert(v);
      if (isOptimizerUpdate(op.kind)) {
        size_t first = 2, last = op.kind == OpKind::AdamUpdate ? 3 : op.kind == OpKind::SgdUpdate ? 2 : 5;
        for (size_t i = first; i <= last && i < op.operands.size(); ++i) states.insert(op.operands[i]);
      }
      // Read by the optimizer or a bucketed gradient sync: summed over the
      // micro-batches into one buffer.
      if (w == Work::Optimizer || op.has("bucket"))
        for (const Value *v : op.operands) readOnce.insert(v);
      if (w == Work::Backward || w == Work::WeightGrad)
        for (const Value *v : op.operands) readInBackward.insert(v);
    }
    // Outputs other than the gradients (which a runtime does not keep: they
    // are reported for checking) live to the end of the step.
    for (const auto &out : m.outputs)
      if (!llvm::StringRef(out.first).startswith("grad.")) readOnce.insert(out.second);
    // Mixed precision: a parameter that forward and backward read only
    // through a cast to a narrower dtype is a master copy, part of the
    // optimizer's state (ZeRO's K = 12 counts it there); the narrow copy is
    // the parameter.
    std::unordered_map<const Value *, bool> onlyNarrowed;
    for (const auto &up : m.ops) {
      if (workOf(*up) == Work::Optimizer) continue;
      for (const Value *v : up->operands) {
        if (v->kind != Value::Kind::Param) continue;
        bool narrowing = up->kind == OpKind::Cast && byteSize(up->results[0]->type.dtype) < byteSize(v->type.dtype);
        auto [it, fresh] = onlyNarrowed.emplace(v, narrowing);
        if (!fresh) it->second = it->second && narrowing;
      }
    }
    for (const auto &[v, narrowed] : onlyNarrowed)
      if (narrowed) states.insert(v);
    // The narrow copy of a master weight: stored as cast, unless every use
    // is a gather kept for the step (ZeRO-1/2 under mixed precision): then
    // the cast is that gather's send buffer and the gathered copy is stored.
    std::unordered_map<const Value *, std::vector<const Op *>> narrowUsers;
    for (const auto &up : m.ops)
      for (const Value *v : up->operands)
        if (v->def && v->def->kind == OpKind::Cast && v->def->operands[0]->kind == Value::Kind::Param)
          narrowUsers[v].push_back(up.get());
    for (const auto &up : m.ops) {
      const Op &op = *up;
      if (op.kind != OpKind::Cast || op.operands[0]->kind != Value::Kind::Param || !states.count(op.operands[0]))
        continue;
      const Value *c = op.results[0];
      std::vector<const Value *> gathers;
      bool onlyGathered = true;
      for (const Op *user : narrowUsers[c]) {
        bool kept = user->kind == OpKind::AllGather && !user->has("transient");
        onlyGathered &= kept;
        if (kept) gathers.push_back(user->results[0]);
      }
      if (onlyGathered && !gathers.empty()) {
        staging.insert(c);
        stored.insert(gathers.begin(), gathers.end());
      } else {
        stored.insert(c);
      }
    }
  }

  /// ZeRO's accounting of this rank's model states (StagePlan::modelStates).
  CategoryBytes countModelStates() const {
    CategoryBytes out{};
    for (const Value *p : m.params)
      if (onRank.count(p))
        out[size_t(states.count(p) ? Category::OptimizerState : Category::Parameters)] += dataBytesOf(p);
    for (const Value *v : stored)
      if (v->def && onStage(*v->def)) out[size_t(Category::Parameters)] += dataBytesOf(v);
    for (const Op *op : optimizer) {
      if (!isOptimizerUpdate(op->kind)) continue;
      // The gradient as held: back through the optimizer's own widening,
      // clipping and reductions to the value backward leaves.
      const Value *g = op->operands[1];
      while (g->def && workOf(*g->def) == Work::Optimizer && !g->def->operands.empty() &&
             (g->def->kind == OpKind::Cast || g->def->kind == OpKind::Mul || isCommunication(g->def->kind)))
        g = g->def->operands[0];
      out[size_t(Category::Gradients)] += dataBytesOf(g);
    }
    return out;
  }

  bool onStage(const Op &op) const { return !op.has("pipeline_stage") || op.getInt("pipeline_stage") == stage; }

  bool weightGradInSchedule() const { return schedule.options.style == pipeline::ScheduleStyle::ZeroBubble; }

  /// The ops in the order this rank runs them: its instructions, then the
  /// optimizer.
  void sequence() {
    for (const pipeline::Instr &in : schedule.ranks[size_t(stage)]) {
      if (!in.isCompute()) continue;
      Work w = in.kind == pipeline::InstrKind::Forward      ? Work::Forward
               : in.kind == pipeline::InstrKind::WeightGrad ? Work::WeightGrad
                                                            : Work::Backward;
      auto it = groups.find({schedule.virtualStage(stage, in.chunk), w});
      if (it == groups.end()) continue;
      for (const Op *op : it->second) steps.push_back({op, in.microBatch, w});
    }
    for (const Op *op : optimizer) steps.push_back({op, -1, Work::Optimizer});
  }

  /// Values summed over the micro-batches (gradients, the loss) and values of
  /// the optimizer are one buffer per step.
  Key keyOf(const Value *v, int mb) const {
    if (!v->def || readOnce.count(v) || workOf(*v->def) == Work::Optimizer || paramDerived.count(v)) return {v, -1};
    return {v, mb};
  }

  void findLastUses() {
    for (size_t i = 0; i < steps.size(); ++i)
      for (const Value *v : steps[i].op->operands)
        if (v->def) lastUse[keyOf(v, steps[i].mb)] = i;
  }

  Category categoryOf(const Value *v, Work made) const {
    if (readOnce.count(v) && (made == Work::Backward || made == Work::WeightGrad)) return Category::Gradients;
    // A ZeRO-3 gather (released after its phase) and the send buffer of a
    // gather are communication, not the stored parameter.
    if (staging.count(v) || (v->def && v->def->has("transient"))) return Category::Communication;
    // A value of parameters alone (a bf16 copy, a transpose, a ZeRO-3
    // gather) is made once per step, not per micro-batch.
    if (paramDerived.count(v)) return Category::Parameters;
    if (v->def && makesCommunicationBuffer(v->def->kind)) return Category::Communication;
    if (made == Work::Forward && readInBackward.count(v)) return Category::Activations;
    return Category::Temporaries;
  }

  void simulate(StagePlan &plan) {
    Arena arena;
    CategoryBytes live{};
    uint64_t total = 0;
    struct Placed {
      uint64_t at, size;
      Category category;
    };
    std::unordered_map<Key, Placed, KeyHash> placed;
    auto allocate = [&](Key k, Category c, const Op *by, int mb, Work w) {
      uint64_t size = bytesOf(k.first);
      placed[k] = {arena.allocate(size), size, c};
      live[size_t(c)] += size;
      total += size;
      ++plan.buffers;
      plan.timeline.push_back(total);
      if (total > plan.peak) {
        plan.peak = total;
        plan.atPeak = live;
        plan.peakOp = by ? std::string(ir::spelling(by->kind)) + (by->results.empty() ? "" : " %" + by->results[0]->name)
                         : "%" + k.first->name;
        plan.peakPath = by ? by->path : "";
        plan.peakMicroBatch = mb;
        plan.peakWork = planc::spelling(w);
      }
    };
    auto release = [&](Key k) {
      auto it = placed.find(k);
      if (it == placed.end()) return;
      arena.release(it->second.at, it->second.size);
      live[size_t(it->second.category)] -= it->second.size;
      total -= it->second.size;
      placed.erase(it);
    };
    // Parameters, states and inputs this rank reads live for the whole step.
    std::vector<const Value *> resident;
    for (const Value *p : m.params)
      if (onRank.count(p)) resident.push_back(p);
    for (const Value *in : m.inputs)
      if (onRank.count(in)) resident.push_back(in);
    for (const Value *v : resident)
      allocate({v, -1}, states.count(v) ? Category::OptimizerState
                        : v->kind == Value::Kind::Param ? Category::Parameters
                                                        : Category::Temporaries,
               nullptr, -1, Work::Forward);
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step &s = steps[i];
      // An all-reduce of a buffer read by nothing after it reduces in place.
      if (s.op->kind == OpKind::AllReduce && s.op->operands[0]->def) {
        Key from = keyOf(s.op->operands[0], s.mb), to = keyOf(s.op->results[0], s.mb);
        auto it = placed.find(from);
        if (it != placed.end() && lastUse[from] == i && !placed.count(to)) {
          Placed p = it->second;
          placed.erase(it);
          live[size_t(p.category)] -= p.size;
          p.category = categoryOf(s.op->results[0], s.work);
          live[size_t(p.category)] += p.size;
          placed[to] = p;
          continue;
        }
      }
      // An update writes its parameter and states in place.
      if (!isOptimizerUpdate(s.op->kind))
        for (const Value *r : s.op->results) {
          Key k = keyOf(r, s.mb);
          if (placed.count(k)) continue; // a sum over micro-batches, made by the first
          allocate(k, categoryOf(r, s.work), s.op, s.mb, s.work);
        }
      for (const Value *v : s.op->operands) {
        if (!v->def) continue;
        Key k = keyOf(v, s.mb);
        if (lastUse[k] == i && !(k.second < 0 && readOnce.count(v) && s.work != Work::Optimizer)) release(k);
      }
      for (const Value *r : s.op->results) {
        Key k = keyOf(r, s.mb);
        if (!lastUse.count(k) && !readOnce.count(r)) release(k); // nothing reads it here
      }
    }
    plan.arena = arena.size();
  }

  struct Step {
    const Op *op;
    int mb;
    Work work;
  };
  const Module &m;
  const MeshLayout &mesh;
  const pipeline::PipelineSchedule &schedule;
  int stage;
  std::map<std::pair<int, Work>, std::vector<const Op *>> groups;
  std::vector<const Op *> optimizer;
  std::unordered_set<const Value *> onRank, states, readOnce, readInBackward, paramDerived, staging, stored;
  std::vector<Step> steps;
  std::unordered_map<Key, size_t, KeyHash> lastUse;
};

} // namespace

llvm::Expected<MemoryPlan> memory::planMemory(const Module &m, const pipeline::ScheduleOptions &options) {
  pipeline::ScheduleOptions so = options;
  so.stages = int(m.mesh[unsigned(MeshAxis::PP)]);
  for (const auto &op : m.ops)
    if (op->has("micro_batch"))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "the memory plan reads the placed step of one micro-batch, not an unrolled one");
  auto schedule = pipeline::buildSchedule(so);
  if (!schedule) return schedule.takeError();
  MeshLayout mesh(m.mesh);
  MemoryPlan plan;
  for (int s = 0; s < so.stages; ++s) plan.stages.push_back(StagePlanner(m, mesh, *schedule, s).run());
  return plan;
}
