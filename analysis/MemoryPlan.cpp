//===- analysis/MemoryPlan.cpp - liveness and arena placement per rank ------===//

#include "analysis/MemoryPlan.h"
#include "ir/PlanError.h"
#include "support/Parallel.h"
#include "analysis/MemoryPlanArena.h"
#include "analysis/Placement.h"
#include "analysis/StageSequence.h"
#include "analysis/StepSchedule.h"

#include "ir/LocalBlocks.h"
#include "ir/MeshLayout.h"
#include "ir/OpDef.h"
#include "ir/Placement.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include "llvm/ADT/StringRef.h"
#include "support/Error.h"
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

/// Results that count as communication buffers: what collectives and
/// receives make, and stage_merge's cross-stage sum.
bool makesCommunicationBuffer(OpKind k) { return isCommunication(k) || picksStage(k); }

/// What every pipeline rank's plan needs to know about the module, computed
/// once: each op's work and placement (attributes, looked up by name) and
/// the values whose role does not depend on the rank.
struct ModuleFacts {
  struct OpFacts {
    Work work = Work::Forward;
    int pipelineStage = -1; // -1: every stage
    int virtualStage = -1;
    bool bucket = false; // a gradient reduction once per step (reducesOncePerStep)
    bool transient = false;
  };
  std::unordered_map<const Op *, OpFacts> ops;
  // Values of parameters alone (a bf16 copy, a transpose, a gather), made
  // once per step (oncePerStepValues).
  std::unordered_set<const Value *> paramDerived;
  // ZeRO-3 gathers of parameters (any phase) and views of them.
  std::unordered_set<const Value *> gatheredParams;
  // Optimizer state: the update ops' state operands and the master weights.
  std::unordered_set<const Value *> states;
  // Narrow copies of master weights as stored, and gathers' send buffers.
  std::unordered_set<const Value *> stored, staging;

  explicit ModuleFacts(const Module &m) {
    for (const auto &up : m.ops) {
      const Op &op = *up;
      OpFacts f;
      f.work = workOf(op);
      if (hasPipelineStage(op)) f.pipelineStage = int(pipelineStageOf(op));
      f.virtualStage = virtualStageOf(op);
      f.bucket = reducesOncePerStep(op);
      f.transient = op.has("transient");
      ops.emplace(&op, f);
    }
    paramDerived = oncePerStepValues(m);
    // ZeRO-3's gathered parameters and their views (a transpose for the
    // tied head), in any phase: made per micro-batch, released after use.
    for (const auto &up : m.ops) {
      const Op &op = *up;
      bool gathered = ops.at(&op).transient;
      if (!gathered && !op.operands.empty()) {
        bool any = false, fromParams = true;
        for (const Value *v : op.operands) {
          any |= gatheredParams.count(v) > 0;
          fromParams &= v->kind == Value::Kind::Param || paramDerived.count(v) || gatheredParams.count(v);
        }
        gathered = any && fromParams;
      }
      if (gathered) gatheredParams.insert(op.results.begin(), op.results.end());
    }
    for (const auto &up : m.ops)
      if (isOptimizerUpdate(up->kind)) {
        const OpDef &def = opDef(up->kind);
        for (size_t i = 0; i < up->operands.size(); ++i)
          if (isStateRole(def.roleOf(i))) states.insert(up->operands[i]);
      }
    // Mixed precision: the f32 master weights are optimizer state.
    for (const Value *v : masterWeights(m)) states.insert(v);
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
        bool kept = user->kind == OpKind::AllGather && !ops.at(user).transient;
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
  Work workOfOp(const Op &op) const { return ops.at(&op).work; }
};

class StagePlanner {
public:
  StagePlanner(const Module &m, const ModuleFacts &facts, const MeshLayout &mesh,
               const sequence::StageSequencer &sequencer, const PlanOptions &options, int stage)
      : m(m), facts(facts), paramDerived(facts.paramDerived), states(facts.states), staging(facts.staging),
        stored(facts.stored), mesh(mesh), sequencer(sequencer), schedule(sequencer.scheduleOf()),
        options(options), stage(stage) {}

  StagePlan run(const std::vector<sequence::SequencedOp> *given) {
    StagePlan plan;
    plan.stage = stage;
    for (int64_t r = 0; r < mesh.numRanks(); ++r)
      if (mesh.coordinates(r)[unsigned(MeshAxis::PP)] == stage) plan.ranks.push_back(r);
    collect();
    indexValues();
    sequence(given);
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
    for (const auto &up : m.ops) {
      const Op &op = *up;
      const ModuleFacts::OpFacts &f = facts.ops.at(&op);
      if (f.pipelineStage >= 0 && f.pipelineStage != stage) continue;
      Work w = f.work;
      if (w == Work::Optimizer) {
        optimizer.push_back(&op);
      } else {
        int vs = f.virtualStage;
        groups[{vs < 0 ? stage : vs, w == Work::WeightGrad && !weightGradInSchedule() ? Work::Backward : w}].push_back(&op);
      }
      for (const Value *v : op.operands)
        if (!v->def) onRank.insert(v);
      // Read by the optimizer or a bucketed gradient sync: summed over the
      // micro-batches into one buffer.
      if (w == Work::Optimizer || f.bucket)
        for (const Value *v : op.operands) readOnce.insert(v);
      if (w == Work::Backward || w == Work::WeightGrad)
        for (const Value *v : op.operands) readInBackward.insert(v);
    }
    // Outputs other than the gradients (which a runtime does not keep: they
    // are reported for checking) live to the end of the step.
    for (const Output &out : m.outputs)
      if (out.role != OutputRole::ParamGradient) {
        readOnce.insert(out.value);
        kept.insert(out.value);
      } else if (options.keepGradientOutputs) {
        // Reported as the step's gradient, summed over the micro-batches:
        // where the optimizer reads it, its own buffer is that sum; a ZeRO-2/3
        // gradient, reduced in every micro-batch, is summed into a copy.
        if (readOnce.count(out.value)) kept.insert(out.value);
        else reported.insert(out.value);
      }
    // The data inputs: one buffer per micro-batch (each holds its rows).
    for (const Value *in : m.inputs)
      if (in->type.rank() > 0) dataInputs.insert(in);
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
      // The gradient an update reads; plain SGD (no momentum) is lowered to
      // p - (g + wd p) * lr, elementwise: its step's first operand.
      const Value *g = nullptr;
      if (isOptimizerUpdate(op->kind)) {
        g = op->operands[1];
      } else if (const Value *p = op->kind == OpKind::Sub ? op->operands[0] : nullptr;
                 p && (p->kind == Value::Kind::Param || (p->def && p->def->kind == OpKind::ShardSlice)) &&
                 !states.count(p)) {
        // The step, (g + wd p) * lr, reduced where it is still a partial sum.
        const Value *step = op->operands[1];
        while (step->def && isCommunication(step->def->kind) && !step->def->operands.empty())
          step = step->def->operands[0];
        if (!step->def || step->def->kind != OpKind::Mul) continue;
        g = step->def->operands[0];
        if (g->def && g->def->kind == OpKind::Add && facts.workOfOp(*g->def) == Work::Optimizer) g = g->def->operands[0];
      } else if (op->kind == OpKind::FusedElementwise) {
        // The same step fused into one op (fusion): it reads the parameter
        // and, beside it, the gradient of its shape.
        auto isParam = [&](const Value *v) {
          return (v->kind == Value::Kind::Param || (v->def && v->def->kind == OpKind::ShardSlice)) && !states.count(v);
        };
        const Value *p = nullptr;
        for (const Value *x : op->operands)
          if (isParam(x)) p = x;
        if (!p) continue;
        for (const Value *x : op->operands)
          if (x != p && !isParam(x) && x->type.shape == p->type.shape) g = x;
        if (!g) continue;
      } else {
        continue;
      }
      // The gradient as held: back through the optimizer's own widening,
      // clipping and reductions to the value backward leaves.
      while (g->def && facts.workOfOp(*g->def) == Work::Optimizer && !g->def->operands.empty() &&
             (g->def->kind == OpKind::Cast || g->def->kind == OpKind::Mul || isCommunication(g->def->kind)))
        g = g->def->operands[0];
      out[size_t(Category::Gradients)] += dataBytesOf(g);
    }
    return out;
  }

  bool onStage(const Op &op) const {
    int placed = facts.ops.at(&op).pipelineStage;
    return placed < 0 || placed == stage;
  }

  bool weightGradInSchedule() const { return schedule.options.style == pipeline::ScheduleStyle::ZeroBubble; }

  /// Every value this rank's ops make or read gets a dense index and its
  /// size, lifetime kind and category, computed once: the simulation below
  /// visits each op once per micro-batch (hundreds of thousands of steps for
  /// a large pipeline) and must not look anything up by name or hash.
  void indexValues() {
    auto add = [&](const Value *v) {
      auto [it, fresh] = indexOf.emplace(v, uint32_t(values.size()));
      if (fresh) {
        ValueInfo info;
        info.v = v;
        info.bytes = bytesOf(v);
        info.perStep =
            !v->def || readOnce.count(v) || facts.workOfOp(*v->def) == Work::Optimizer || paramDerived.count(v);
        info.readOnce = readOnce.count(v) > 0;
        info.kept = kept.count(v) > 0;
        info.category = v->def ? categoryOf(v, facts.workOfOp(*v->def)) : Category::Temporaries;
        values.push_back(info);
      }
      return it->second;
    };
    auto addOp = [&](const Op *op) {
      OpInfo info;
      info.op = op;
      info.update = isOptimizerUpdate(op->kind);
      for (const Value *v : op->operands) info.operands.push_back(v->def ? int32_t(add(v)) : -1);
      for (const Value *r : op->results) info.results.push_back(add(r));
      opIndex.emplace(op, uint32_t(ops.size()));
      ops.push_back(std::move(info));
    };
    for (const auto &[group, list] : groups)
      for (const Op *op : list) addOp(op);
    for (const Op *op : optimizer) addOp(op);
  }

  /// The ops in the order this rank runs them (analysis/StageSequence.h).
  void sequence(const std::vector<sequence::SequencedOp> *given) {
    std::vector<sequence::SequencedOp> own;
    if (!given) own = sequencer.sequence(stage);
    for (const sequence::SequencedOp &q : given ? *given : own)
      steps.push_back({opIndex.at(q.op), q.microBatch, q.work, q.chunk});
  }

  /// The buffer instance of value `v` in micro-batch `mb`: values summed over
  /// the micro-batches (gradients, the loss), values of parameters alone and
  /// the optimizer's are one buffer per step.
  size_t slotOf(uint32_t v, int mb) const {
    return size_t(v) * slotsPerValue + (values[v].perStep ? 0 : size_t(std::max(mb, 0) + 1));
  }

  static constexpr uint32_t kNoUse = ~0u;

  void findLastUses() {
    slotsPerValue = size_t(schedule.options.microBatches) + 1;
    lastUse.assign(values.size() * slotsPerValue, kNoUse);
    for (size_t i = 0; i < steps.size(); ++i) {
      const OpInfo &op = ops[steps[i].op];
      for (size_t k = 0; k < op.operands.size(); ++k)
        if (op.operands[k] >= 0) lastUse[slotOf(uint32_t(op.operands[k]), steps[i].mb)] = uint32_t(i);
        else residentLastUse[op.op->operands[k]] = uint32_t(i);
    }
  }

  Category categoryOf(const Value *v, Work made) const {
    if (readOnce.count(v) && (made == Work::Backward || made == Work::WeightGrad)) return Category::Gradients;
    // A ZeRO-3 gather (released after its phase) and the send buffer of a
    // gather are communication, not the stored parameter.
    if (staging.count(v) || facts.gatheredParams.count(v)) return Category::Communication;
    // A value of parameters alone (a bf16 copy, a transpose, a ZeRO-3
    // gather) is made once per step, not per micro-batch.
    if (paramDerived.count(v)) return Category::Parameters;
    // A received stage input that backward reads is an activation (kept
    // until its micro-batch's backward), not a transfer buffer.
    if (made == Work::Forward && readInBackward.count(v)) return Category::Activations;
    if (v->def && makesCommunicationBuffer(v->def->kind)) return Category::Communication;
    return Category::Temporaries;
  }

  void simulate(StagePlan &plan) {
    // Both placements run side by side; the smaller arena is the plan's.
    Arena firstFit(false), bestFit(true);
    CategoryBytes live{};
    uint64_t total = 0;
    struct Placed {
      uint64_t at = 0, atBest = 0, size = 0;
      Category category = Category::Temporaries;
      bool live = false;
      int64_t index = -1;    // in plan.placements (keepPlacements)
      bool borrowed = false; // another buffer's bytes, given back with it
    };
    const bool keep = options.keepPlacements;
    // keepPlacements: every buffer's two offsets, until the smaller arena is known.
    std::vector<std::pair<uint64_t, uint64_t>> offsets;
    int64_t at = -1; // the step being placed; -1 before the first
    auto record = [&](Placed &p, const Value *v, int slot, int64_t aliasOf) {
      if (!keep) return;
      p.index = int64_t(plan.placements.size());
      PlacedBuffer b;
      b.value = v;
      b.slot = slot;
      b.size = p.size;
      b.category = p.category;
      b.aliasOf = aliasOf;
      b.firstStep = at;
      plan.placements.push_back(b);
      offsets.push_back({p.at, p.atBest});
    };
    std::vector<Placed> placed(values.size() * slotsPerValue);
    std::unordered_map<const Value *, Placed> reportSums; // never released
    auto allocate = [&](Placed &p, uint64_t size, Category c) {
      p = {firstFit.allocate(size), bestFit.allocate(size), size, c, true, -1, false};
      live[size_t(c)] += size;
      total += size;
      ++plan.buffers;
      plan.timeline.push_back(total);
      return total > plan.peak;
    };
    // A buffer that takes over another's bytes in place (the other's life ends).
    auto takeOver = [&](Placed &from, Placed &to, const Value *v, int slot, Category c) {
      to = from;
      from.live = false;
      live[size_t(to.category)] -= to.size;
      to.category = c;
      live[size_t(c)] += to.size;
      if (keep && from.index >= 0) {
        plan.placements[size_t(from.index)].lastStep = at;
        record(to, v, slot, from.index);
      }
    };
    auto notePeak = [&](const std::string &op, const std::string &path, int mb, Work w) {
      plan.peak = total;
      plan.atPeak = live;
      plan.peakOp = op;
      plan.peakPath = path;
      plan.peakMicroBatch = mb;
      plan.peakWork = ir::spelling(w);
    };
    auto release = [&](Placed &p) {
      if (!p.live) return;
      if (keep && p.index >= 0) plan.placements[size_t(p.index)].lastStep = at;
      if (p.borrowed) {
        p.live = false;
        return;
      }
      firstFit.release(p.at, p.size);
      bestFit.release(p.atBest, p.size);
      live[size_t(p.category)] -= p.size;
      total -= p.size;
      p.live = false;
    };
    // Parameters, states and inputs this rank reads live for the whole step
    // (outside the slots: nothing releases them).
    // Each parameter, state and input this rank reads: its placement per
    // micro-batch slot (a data input has one per micro-batch, the others
    // one for the step, at index 0).
    std::unordered_map<const Value *, std::vector<Placed>> resident;
    auto reside = [&](const Value *v, int slot) {
      Category c = states.count(v)                 ? Category::OptimizerState
                   : v->kind == Value::Kind::Param ? Category::Parameters
                                                   : Category::Temporaries;
      std::vector<Placed> &r = resident[v];
      r.emplace_back();
      if (allocate(r.back(), bytesOf(v), c)) notePeak("%" + v->name, "", -1, Work::Forward);
      record(r.back(), v, slot, -1);
    };
    for (const Value *p : m.params)
      if (onRank.count(p)) reside(p, -1);
    const int microBatches = schedule.options.microBatches;
    for (const Value *in : m.inputs)
      if (onRank.count(in)) {
        if (!dataInputs.count(in)) reside(in, -1);
        else
          for (int j = 0; j < microBatches; ++j) reside(in, j);
      }
    // The placement a step reads for an operand.
    auto residentOf = [&](const Value *v, int mb) -> Placed * {
      auto it = resident.find(v);
      if (it == resident.end()) return nullptr;
      return &it->second[it->second.size() == 1 ? 0 : size_t(std::max(mb, 0))];
    };
    for (size_t i = 0; i < steps.size(); ++i) {
      // Lives are counted in the program's steps (copies included).
      at = keep ? int64_t(plan.program.size()) : int64_t(i);
      const Step &s = steps[i];
      const OpInfo &op = ops[s.op];
      PlacedStep placedStep;
      if (keep) {
        placedStep.op = op.op;
        placedStep.microBatch = s.mb;
        placedStep.work = s.work;
        placedStep.chunk = s.chunk;
        placedStep.inputs.reserve(op.operands.size());
        placedStep.outputs.reserve(op.results.size());
        placedStep.accumulate.reserve(op.results.size());
        for (size_t k = 0; k < op.operands.size(); ++k) {
          int32_t v = op.operands[k];
          if (v >= 0) {
            const Placed &p = placed[slotOf(uint32_t(v), s.mb)];
            placedStep.inputs.push_back(p.live ? p.index : -1);
          } else {
            const Placed *p = residentOf(op.op->operands[k], s.mb);
            placedStep.inputs.push_back(p ? p->index : -1);
          }
        }
      }
      auto finish = [&] {
        if (keep) plan.program.push_back(std::move(placedStep));
      };
      // An all-reduce of a buffer read by nothing after it reduces in place.
      if (op.op->kind == OpKind::AllReduce && op.operands[0] >= 0) {
        size_t from = slotOf(uint32_t(op.operands[0]), s.mb), to = slotOf(op.results[0], s.mb);
        if (placed[from].live && lastUse[from] == i && !placed[to].live && !values[size_t(op.operands[0])].kept) {
          takeOver(placed[from], placed[to], op.op->results[0], values[op.results[0]].perStep ? -1 : s.mb,
                   values[op.results[0]].category);
          if (keep) {
            placedStep.outputs.push_back(placed[to].index);
            placedStep.accumulate.push_back(false);
          }
          finish();
          continue;
        }
      }
      // An update writes its parameter and states in place: each result
      // takes over its operand's bytes (a resident parameter's, or a value's
      // such as ZeRO-1's shard of a parameter, which lives on as the result).
      const std::vector<int> &inPlace = opDef(op.op->kind).inPlaceOf;
      for (size_t k = 0; k < op.results.size(); ++k) {
        uint32_t r = op.results[k];
        Placed &p = placed[slotOf(r, s.mb)];
        const int slot = values[r].perStep ? -1 : s.mb;
        // In place only where nothing reads the old value after the update
        // (loss scaling's select keeps the old parameter on overflow).
        bool inPlaceHere = op.update && k < inPlace.size() && inPlace[k] >= 0;
        if (inPlaceHere) {
          int32_t v = op.operands[size_t(inPlace[k])];
          inPlaceHere = v >= 0 ? lastUse[slotOf(uint32_t(v), s.mb)] == i
                               : residentLastUse[op.op->operands[size_t(inPlace[k])]] == i;
        }
        if (inPlaceHere) {
          int32_t v = op.operands[size_t(inPlace[k])];
          if (v >= 0) {
            takeOver(placed[slotOf(uint32_t(v), s.mb)], p, op.op->results[k], slot, values[r].category);
          } else if (Placed *home = residentOf(op.op->operands[size_t(inPlace[k])], s.mb)) {
            // The resident buffer stays live under its own name; the new
            // value is an alias of it, kept after the step.
            p = *home;
            p.borrowed = true;
            record(p, op.op->results[k], slot, home->index);
          }
          if (keep) {
            placedStep.outputs.push_back(p.index);
            placedStep.accumulate.push_back(false);
          }
          continue;
        }
        bool sum = p.live; // a sum over micro-batches, made by the first
        if (!sum) {
          if (allocate(p, values[r].bytes, values[r].category))
            notePeak(std::string(ir::spelling(op.op->kind)) + " %" + op.op->results[0]->name, op.op->path, s.mb, s.work);
          record(p, op.op->results[k], slot, -1);
        }
        if (keep) {
          placedStep.outputs.push_back(p.index);
          placedStep.accumulate.push_back(sum);
        }
      }
      finish();
      // The sums of reported gradients read in every micro-batch.
      if (!reported.empty())
        for (size_t k = 0; k < op.results.size(); ++k) {
          const Value *v = op.op->results[k];
          if (!reported.count(v) || !placed[slotOf(op.results[k], s.mb)].live) continue;
          at = int64_t(plan.program.size());
          auto [it, fresh] = reportSums.try_emplace(v);
          Placed &sum = it->second;
          if (fresh) {
            if (allocate(sum, values[op.results[k]].bytes, Category::Gradients))
              notePeak("sum of %" + v->name, op.op->path, s.mb, s.work);
            sum.index = -1;
            record(sum, v, -1, -1);
          }
          if (keep) {
            PlacedStep copy;
            copy.copyOf = op.op;
            copy.microBatch = s.mb;
            copy.work = s.work;
            copy.chunk = s.chunk;
            copy.inputs = {placed[slotOf(op.results[k], s.mb)].index};
            copy.outputs = {sum.index};
            copy.accumulate = {!fresh};
            plan.program.push_back(std::move(copy));
          }
        }
      for (int32_t v : op.operands) {
        if (v < 0) continue;
        size_t k = slotOf(uint32_t(v), s.mb);
        const ValueInfo &info = values[size_t(v)];
        if (lastUse[k] == i && !info.kept && !(info.perStep && info.readOnce && s.work != Work::Optimizer))
          release(placed[k]);
      }
      for (uint32_t r : op.results) {
        size_t k = slotOf(r, s.mb);
        if (lastUse[k] == kNoUse && !values[r].readOnce && !values[r].kept)
          release(placed[k]); // nothing reads it here
      }
    }
    at = keep ? int64_t(plan.program.size()) : int64_t(steps.size());
    plan.bestFit = bestFit.size() < firstFit.size();
    plan.arena = std::min(firstFit.size(), bestFit.size());
    for (size_t b = 0; b < plan.placements.size(); ++b)
      plan.placements[b].offset = plan.bestFit ? offsets[b].second : offsets[b].first;
  }

  struct ValueInfo {
    const Value *v = nullptr;
    uint64_t bytes = 0;
    bool perStep = false, readOnce = false, kept = false; // kept: lives to the end of the step
    Category category = Category::Temporaries;
  };
  struct OpInfo {
    const Op *op = nullptr;
    bool update = false;
    std::vector<int32_t> operands; // value indices; -1: a parameter or input
    std::vector<uint32_t> results;
  };
  struct Step {
    uint32_t op;
    int mb;
    Work work;
    int chunk;
  };
  const Module &m;
  const ModuleFacts &facts;
  const std::unordered_set<const Value *> &paramDerived, &states, &staging, &stored;
  const MeshLayout &mesh;
  const sequence::StageSequencer &sequencer;
  const pipeline::PipelineSchedule &schedule;
  const PlanOptions &options;
  int stage;
  std::map<std::pair<int, Work>, std::vector<const Op *>> groups;
  std::vector<const Op *> optimizer;
  std::unordered_set<const Value *> onRank, readOnce, readInBackward, kept, dataInputs, reported;
  std::unordered_map<const Value *, uint32_t> indexOf;
  std::unordered_map<const Op *, uint32_t> opIndex;
  std::vector<ValueInfo> values;
  std::vector<OpInfo> ops;
  std::vector<Step> steps;
  size_t slotsPerValue = 1;
  std::vector<uint32_t> lastUse;
  std::unordered_map<const Value *, uint32_t> residentLastUse; // parameters, states, inputs
};

} // namespace

llvm::Expected<MemoryPlan> memory::planMemory(const Module &m, const PlanOptions &options) {
  pipeline::ScheduleOptions so = pipeline::scheduleOf(m);
  for (const auto &op : m.ops)
    if (hasMicroBatch(*op))
      return makeError("the memory plan reads the placed step of one micro-batch, not an unrolled one");
  auto schedule = pipeline::buildSchedule(so);
  if (!schedule) return schedule.takeError();
  MeshLayout mesh(m.mesh);
  // A buffer too large to size (a 2^31-token sequence's scores overflow 64
  // bits) is the plan's error, at the line that makes it: arena offsets
  // must not wrap. 2^44 bytes is a hundred times any device's memory, and
  // a million such buffers still fit the offsets.
  constexpr uint64_t kMaxBufferBytes = uint64_t(1) << 44;
  for (const auto &op : m.ops)
    for (const Value *v : op->results) {
      uint64_t n = byteSize(v->type.dtype);
      bool over = false;
      for (int64_t d : localShape(v->type, mesh)) over |= __builtin_mul_overflow(n, uint64_t(std::max<int64_t>(d, 0)), &n);
      if (over || n > kMaxBufferBytes)
        return makePlanError(DiagID::err_buffer_too_large, op->loc,
                             {toString(v->type.shape), spelling(v->type.dtype),
                              over ? std::string("more than 2^64") : std::to_string(n)});
    }
  MemoryPlan plan;
  ModuleFacts facts(m);
  sequence::StageSequencer sequencer(m, *schedule);
  // The plan's program needs receives in their peers' send order, which
  // looks across stages; the totals alone do not.
  std::vector<std::vector<sequence::SequencedOp>> sequences;
  if (options.keepPlacements) sequences = sequencer.sequenceAll();
  // The stages share only what is read (the module, its facts, the
  // schedule), so they are planned on as many threads as the machine has;
  // each result lands at its stage's index, the same plan on any number.
  plan.stages.resize(size_t(so.stages));
  parallelFor(size_t(so.stages), [&](size_t s) {
    plan.stages[s] = StagePlanner(m, facts, mesh, sequencer, options, int(s)).run(sequences.empty() ? nullptr : &sequences[s]);
  });
  return plan;
}
