//===- passes/PipelinePartition.cpp - pipeline stages and send/recv -------===//
//
// Cuts a partitioned training step (one micro-batch) into pipeline stages:
//
//  1. Stages. The repeated layers (ops whose layer path has an index,
//     blocks.3.mlp -> blocks.3) are cut into p * v contiguous chunks, by
//     layer count or by forward FLOPs (the spec's balance, StageBalance.h);
//     chunk k is virtual stage k, run by pipeline rank
//     k mod p (Megatron's interleaving; v = 1: rank k). Ops outside the
//     layers belong to stage 0, or to the last stage where they read a
//     layer's output (by the data, not by their place in the module).
//     An op's `stage` attribute (@stage in the plan) overrides this. Backward
//     ops of a layer run on its stage; outside the layers, backward work
//     that reads the layers' input gradient runs on stage 0, the rest (the
//     loss's and the head's) on the last. An update runs on the stage of its
//     gradient.
//  2. Work. Each op is part of its stage's forward, backward or, for the
//     zero-bubble schedule, weight-gradient instruction: W is the backward
//     work that no activation gradient sent to an earlier stage depends on.
//  3. Messages. A value made on one pipeline rank and read on another is
//     sent right after it is made and received right before its first reader
//     there, in the earliest instruction that reads it (`send` / `recv` over
//     pp, each pair with its own tag) -- except values of parameters alone (a
//     tied table's bf16 copy), which each reading rank makes from its own
//     copy of the parameter. An op scheduled before an operand it reads is
//     made (a gradient summed on an earlier stage than its last part) moves
//     to that operand's instruction. A sum of gradient parts of different
//     ranks read only by the optimizer (a tied parameter's) is taken once per
//     step; no other op (a weight gradient contracting the micro-batch rows)
//     is deferred.
//  4. The gradient norm for clipping: each stage's sum of squares, merged
//     across stages (stage_merge) and all-reduced over pp.
//
// The result is rolled: one micro-batch's ops, placed (analysis/Placement.h);
// the execution plan runs them per micro-batch in schedule order
// (analysis/StageSequence.h). Needs:
// sharding propagation has run. Reads the PipelineScheduleSpec
// (passes/PartitionOptions.h) and records the schedule it names on the
// module (ir::Module::schedule). With pp = 1 it changes nothing else.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/StageBalance.h"
#include "analysis/InstructionTimes.h"
#include "analysis/Placement.h"
#include "passes/PartitionOptions.h"
#include "analysis/SavedActivations.h"

#include "ir/OpDef.h"
#include "ir/Placement.h"

#include "llvm/ADT/STLExtras.h"
#include "support/Error.h"
#include "support/Plural.h"

#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

using namespace planc;
using namespace planc::ir;

namespace {


class Partition {
public:
  Partition(Module &m, const PipelineScheduleSpec &spec)
      : m(m), so(scheduleOptionsOf(spec, m.mesh[unsigned(MeshAxis::PP)])), balance(spec.balance) {}

  llvm::Error run() {
    m.schedule = so;
    if (so.stages == 1) return llvm::Error::success();
    for (const auto &op : m.ops)
      if (isPointToPoint(op->kind) || hasPipelineStage(*op))
        return makeError("the module is already split into pipeline stages");
    // Each stage holds at least one op; more stages than ops is a malformed
    // mesh, refused before the schedule's replay (whose cost grows with them).
    if (so.stages > int64_t(m.ops.size()))
      return makeError("pp = " + counted(so.stages, "stage") + ", but the step has " +
                       counted(int64_t(m.ops.size()), "op") + " to place on them");
    if (llvm::Error e = times.build(so)) return e;
    if (llvm::Error e = assignStages()) return e;
    copyParameterValues();
    placeOptimizer();
    deferCrossStageGradientSums();
    replicateSharedUpdates();
    fixLateReaders();
    if (llvm::Error e = insertMessages()) return e;
    matchChannelOrder();
    return llvm::Error::success();
  }

private:
  int numStages() const { return so.stages * so.virtualStages; }
  int rankOf(int vs) const { return vs % so.stages; }

  void place(Op &op, int vs, Work work) {
    placed[&op] = {vs, work};
    if (vs < 0) {
      clearStages(op);
    } else {
      setPipelineStage(op, rankOf(vs));
      if (so.virtualStages > 1) setVirtualStage(op, vs);
    }
    if (work != Work::Optimizer) setWork(op, work);
  }
  int stageOf(const Value *v) const {
    if (!v->def) return -1;
    auto it = placed.find(v->def);
    return it == placed.end() ? -1 : it->second.first;
  }

  /// Steps 1 and 2.
  llvm::Error assignStages() {
    std::vector<std::string> layers;
    std::unordered_map<std::string, size_t> layerIndex;
    // Forward ops outside the layers go with the first chunk, or with the
    // last where they read a layer's output (the head, the loss). By the
    // data, not by position: a ZeRO-3 gather that prefetch hoisted above the
    // embedding must not make the embedding look like it follows the layers.
    std::unordered_set<const Value *> afterLayerForward;
    std::unordered_set<const Op *> tailOps;
    for (size_t i = 0; i < m.ops.size(); ++i) {
      const Op &op = *m.ops[i];
      if (workOf(op) != Work::Forward) continue;
      std::string layer = repeatedLayerOf(op.path);
      bool after = !layer.empty() ||
                   llvm::any_of(op.operands, [&](const Value *v) { return afterLayerForward.count(v) > 0; });
      if (after) afterLayerForward.insert(op.results.begin(), op.results.end());
      if (layer.empty()) {
        if (after) tailOps.insert(&op);
        continue;
      }
      if (!layerIndex.count(layer)) {
        layerIndex[layer] = layers.size();
        layers.push_back(layer);
      }
    }
    const int S = numStages();
    if (layers.size() < size_t(S))
      return makeError(std::to_string(layers.size()) + " repeated layers cannot be cut into " + std::to_string(S) +
                  " pipeline chunks (pp x virtual stages) of at least one layer each");
    std::vector<int> chunkOf = balance == StageBalance::Flops ? balanceByFlops(m, layers, layerIndex, tailOps, S)
                                                              : balanceByLayers(layers.size(), S);
    std::unordered_map<std::string, int> pathStage;
    std::unordered_map<const Op *, int> stage;
    for (size_t i = 0; i < m.ops.size(); ++i) {
      const Op &op = *m.ops[i];
      if (workOf(op) != Work::Forward) continue;
      std::string layer = repeatedLayerOf(op.path);
      int vs = layer.empty() ? (tailOps.count(&op) ? S - 1 : 0) : chunkOf[layerIndex[layer]];
      if (op.has("stage")) vs = int(std::clamp<int64_t>(op.getInt("stage"), 0, S - 1));
      stage[&op] = vs;
      pathStage.emplace(op.path, vs);
    }
    // Outside the layers, a value of parameters and inputs alone (the final
    // norm's ZeRO-3 gather, a tied table's cast, the targets' tp slice) is
    // made where it is first read: it depends on no layer, but need not come
    // before them.
    placeWhereFirstRead(stage, Work::Forward, parameterAndInputValues(Work::Forward));
    // Backward ops of a layer run on the layer's stage (an @stage on the
    // forward op is copied to its gradient ops). Outside the layers the path
    // does not tell the embedding's backward from the head's (both can be
    // model level), so the data does: backward work that reads the layers'
    // input gradient differentiates what came before the layers (stage 0);
    // the rest (the loss, the head) runs before them, on the last stage.
    std::unordered_set<const Value *> afterLayerBackward;
    for (const auto &op : m.ops) {
      Work w = workOf(*op);
      if (w != Work::Backward) continue;
      std::string layer = repeatedLayerOf(op->path);
      bool inLayer = !layer.empty() && layerIndex.count(layer);
      bool afterLayers = inLayer || llvm::any_of(op->operands, [&](const Value *v) { return afterLayerBackward.count(v); });
      if (afterLayers) afterLayerBackward.insert(op->results.begin(), op->results.end());
      auto it = pathStage.find(op->path);
      int vs = inLayer ? chunkOf[layerIndex[layer]] : afterLayers ? 0 : S - 1;
      if (op->has("stage")) vs = int(std::clamp<int64_t>(op->getInt("stage"), 0, S - 1));
      else if (inLayer && it != pathStage.end()) vs = it->second; // the forward op's own stage
      stage[op.get()] = vs;
    }
    // A backward value of parameters alone outside the layers (the ZeRO-3
    // gather of a model-level norm's weight for its gradient) is made where
    // it is read, as in forward.
    placeWhereFirstRead(stage, Work::Backward, parameterAndInputValues(Work::Backward));
    // Zero-bubble: backward work that nothing sent upstream depends on is W.
    std::unordered_set<const Op *> inputGrad;
    if (times.hasWeightGrad()) {
      std::unordered_map<const Value *, const Op *> producer;
      for (const auto &op : m.ops)
        for (Value *r : op->results) producer[r] = op.get();
      auto backwardProducer = [&](const Value *v) -> const Op * {
        auto p = producer.find(v);
        return p != producer.end() && workOf(*p->second) == Work::Backward ? p->second : nullptr;
      };
      std::vector<const Op *> work;
      for (const auto &op : m.ops) {
        if (workOf(*op) != Work::Backward) continue;
        for (Value *v : op->operands)
          if (const Op *p = backwardProducer(v); p && stage[p] > stage[op.get()]) work.push_back(p);
      }
      while (!work.empty()) {
        const Op *op = work.back();
        work.pop_back();
        if (!inputGrad.insert(op).second) continue;
        for (Value *v : op->operands)
          if (const Op *p = backwardProducer(v); p && stage[p] == stage[op]) work.push_back(p);
      }
    }
    for (const auto &op : m.ops) {
      Work w = workOf(*op);
      if (w == Work::Optimizer) continue;
      if (w == Work::Backward && times.hasWeightGrad() && !inputGrad.count(op.get())) w = Work::WeightGrad;
      place(*op, stage[op.get()], w);
    }
    return llvm::Error::success();
  }

  /// The parameters, the inputs, and the values made from parameters alone
  /// or from inputs alone (not both: an embedding lookup is the model's
  /// work, a slice of the targets is not) by forward ops, and with
  /// `upTo = Backward` by backward ops too.
  std::unordered_set<const Value *> parameterAndInputValues(Work upTo) const {
    std::unordered_set<const Value *> params(m.params.begin(), m.params.end()),
        inputs(m.inputs.begin(), m.inputs.end());
    for (const auto &op : m.ops) {
      Work w = workOf(*op);
      bool counted = w == Work::Forward || (upTo == Work::Backward && w != Work::Optimizer);
      if (!counted || op->operands.empty()) continue;
      for (auto *alone : {&params, &inputs})
        if (llvm::all_of(op->operands, [&](const Value *v) { return alone->count(v) > 0; }))
          alone->insert(op->results.begin(), op->results.end());
    }
    params.insert(inputs.begin(), inputs.end());
    return params;
  }

  /// Ops of `work` outside the layers that make values of `alone` run where
  /// their first reader does.
  void placeWhereFirstRead(std::unordered_map<const Op *, int> &stage, Work work,
                           const std::unordered_set<const Value *> &alone) const {
    std::unordered_map<const Value *, int> firstReader;
    for (auto it = m.ops.rbegin(); it != m.ops.rend(); ++it) {
      const Op &op = **it;
      if (workOf(op) != work) continue;
      if (repeatedLayerOf(op.path).empty() && !op.has("stage") && !op.results.empty() && alone.count(op.results[0]))
        if (auto r = firstReader.find(op.results[0]); r != firstReader.end()) stage[&op] = r->second;
      for (const Value *v : op.operands) firstReader[v] = stage[&op]; // reverse order: the first reader wins
    }
  }

  /// A forward value of parameters (or inputs) alone (a weight's bf16 copy, its
  /// transpose, its ZeRO gather) read on another pipeline rank than the one
  /// that makes it is made there too, from that rank's own copy of the
  /// parameters, instead of being sent every step: as Megatron, each stage
  /// that reads a tied embedding keeps its own copy, and only the gradient
  /// is summed across those stages (deferCrossStageGradientSums); the
  /// update is repeated on each (replicateSharedUpdates).
  void copyParameterValues() {
    std::unordered_set<const Value *> fromParams = parameterAndInputValues(Work::Forward);
    std::map<std::pair<const Value *, int>, Value *> copies;
    std::vector<std::unique_ptr<Op>> old = std::move(m.ops);
    m.ops.clear();
    // The copy of `v` on rank `rank`, made (with its operands' copies) just
    // before the op now being placed, in that op's chunk's forward.
    std::function<Value *(Value *, int, int)> copyOf = [&](Value *v, int rank, int vs) -> Value * {
      if (!v->def || rankOf(stageOf(v)) == rank) return v;
      if (auto it = copies.find({v, rank}); it != copies.end()) return it->second;
      const Op &op = *v->def;
      std::vector<Value *> operands;
      for (Value *o : op.operands) operands.push_back(copyOf(o, rank, vs));
      std::vector<TensorType> types;
      for (const Value *r : op.results) types.push_back(r->type);
      std::string suffix = ".pp" + std::to_string(rank);
      Op *copy = m.append(op.kind, operands, types, op.attrs, op.results[0]->name + suffix);
      for (size_t k = 1; k < copy->results.size(); ++k)
        m.rename(copy->results[k], m.uniqueName(op.results[k]->name + suffix));
      copy->loc = op.loc;
      copy->path = op.path;
      place(*copy, vs, Work::Forward);
      for (size_t k = 0; k < op.results.size(); ++k) copies[{op.results[k], rank}] = copy->results[k];
      return copies.at({v, rank});
    };
    for (auto &up : old) {
      Op &op = *up;
      auto p = placed.find(&op);
      if (p != placed.end() && p->second.first >= 0 && p->second.second != Work::Optimizer)
        for (Value *&v : op.operands)
          if (fromParams.count(v) && v->def && rankOf(stageOf(v)) != rankOf(p->second.first))
            v = copyOf(v, rankOf(p->second.first), p->second.first);
      m.ops.push_back(std::move(up));
    }
  }

  /// Updates on their gradient's stage; the norm summed per stage (step 4).
  void placeOptimizer() {
    std::vector<std::unique_ptr<Op>> old = std::move(m.ops);
    m.ops.clear();
    for (auto &up : old) {
      Op &op = *up;
      if (workOf(op) != Work::Optimizer) {
        m.ops.push_back(std::move(up));
        continue;
      }
      for (Value *&v : op.operands)
        if (auto it = replaced.find(v); it != replaced.end()) v = it->second;
      std::set<int> ranks;
      int first = -1;
      for (Value *v : op.operands)
        if (int s = stageOf(v); s >= 0) {
          ranks.insert(rankOf(s));
          if (first < 0) first = s;
        }
      if (op.kind == OpKind::GlobalNorm && ranks.size() > 1) {
        splitNorm(op);
        continue;
      }
      m.ops.push_back(std::move(up));
      place(op, first, Work::Optimizer);
    }
    // An optimizer op of parameters alone (ZeRO's slice of a parameter for
    // its update) runs where its readers do, not on every rank: a stage
    // holds the parameters it updates, not the whole model's.
    std::unordered_map<const Value *, std::set<int>> readerStages;
    for (auto it = m.ops.rbegin(); it != m.ops.rend(); ++it) {
      Op &op = **it;
      auto p = placed.find(&op);
      int vs = p == placed.end() ? -1 : p->second.first;
      if (vs < 0 && workOf(op) == Work::Optimizer && !op.operands.empty() && !op.results.empty() &&
          llvm::all_of(op.operands, [](const Value *v) { return v->kind == Value::Kind::Param; })) {
        std::set<int> readers;
        for (const Value *r : op.results)
          if (auto rs = readerStages.find(r); rs != readerStages.end()) readers.insert(rs->second.begin(), rs->second.end());
        std::set<int> readerRanks;
        for (int r : readers) readerRanks.insert(rankOf(r));
        if (readerRanks.size() == 1 && !readers.count(-1)) {
          vs = *readers.begin();
          place(op, vs, Work::Optimizer);
        }
      }
      for (const Value *v : op.operands) readerStages[v].insert(vs);
    }
  }

  void splitNorm(const Op &op) {
    std::vector<std::vector<Value *>> perRank(size_t(so.stages));
    for (Value *v : op.operands) perRank[size_t(rankOf(std::max(stageOf(v), 0)))].push_back(v);
    std::vector<Value *> parts;
    const TensorType &type = op.results[0]->type;
    for (int r = 0; r < so.stages; ++r) {
      Op *part = perRank[size_t(r)].empty()
                     ? m.append(OpKind::Fill, {}, {type},
                                {{"value", 0.0}, {"shape", std::vector<int64_t>{}},
                                 {"dtype", std::string(spelling(type.dtype))}})
                     : m.append(OpKind::GlobalNorm, perRank[size_t(r)], {type}, op.attrs);
      if (perRank[size_t(r)].empty()) setPhase(*part, Phase::Optimizer);
      part->loc = op.loc;
      part->path = op.path;
      place(*part, r, Work::Optimizer); // rank r's first chunk
      parts.push_back(part->results[0]);
    }
    TensorType merged = type;
    merged.sharding.partial.push_back(MeshAxis::PP);
    Op *merge = m.append(OpKind::StageMerge, parts, {merged});
    Op *sum = m.append(OpKind::AllReduce, {merge->results[0]}, {type}, {{"axis", std::string("pp")}});
    for (Op *o : {merge, sum}) {
      setPhase(*o, Phase::Optimizer);
      o->loc = op.loc;
      o->path = op.path;
      place(*o, -1, Work::Optimizer);
    }
    replaced[op.results[0]] = sum->results[0];
  }

  /// A parameter used on several stages (a tied embedding) gets gradient
  /// contributions on each; their sum is taken once per step, after every
  /// micro-batch (as Megatron all-reduces the embedding gradient between the
  /// first and last stage), not per micro-batch: a backward op that adds
  /// values of different pipeline ranks and is read only by the optimizer
  /// and the outputs moves to the optimizer.
  void deferCrossStageGradientSums() {
    std::unordered_map<const Value *, std::vector<const Op *>> users;
    for (const auto &op : m.ops)
      for (Value *v : op->operands) users[v].push_back(op.get());
    for (auto it = m.ops.rbegin(); it != m.ops.rend(); ++it) {
      Op &op = **it;
      Work w = workOf(op);
      if (w != Work::Backward && w != Work::WeightGrad) continue;
      std::set<int> ranks;
      for (Value *v : op.operands)
        if (int st = stageOf(v); st >= 0) ranks.insert(rankOf(st));
      if (ranks.size() < 2) continue;
      // Only a sum can wait: the micro-batches' a + b summed is the sum of
      // their a's plus the sum of their b's, but a product that contracts
      // the micro-batch rows (a weight gradient x^T g) is not (sum x)^T (sum g).
      if (op.kind != OpKind::Add && op.kind != OpKind::Sub) continue;
      // A bucketed gradient reduction (grad-buckets) is the optimizer's too.
      auto forOptimizer = [](const Op *u) { return workOf(*u) == Work::Optimizer || u->has("bucket"); };
      bool onlyOptimizer = llvm::all_of(op.results, [&](const Value *r) { return llvm::all_of(users[r], forOptimizer); });
      if (!onlyOptimizer) continue;
      setWork(op, Work::Optimizer);
      int first = -1;
      for (Value *v : op.operands)
        if (int st = stageOf(v); st >= 0 && first < 0) first = st;
      place(op, first, Work::Optimizer);
      for (const Value *r : op.results)
        for (const Op *u : users[r])
          if (workOf(*u) != Work::Optimizer) {
            Op &sync = const_cast<Op &>(*u);
            setWork(sync, Work::Optimizer);
            place(sync, first, Work::Optimizer);
          }
    }
  }

  /// A parameter read on several pipeline ranks (a tied embedding) has a
  /// copy on each; every copy must see the same update, so the optimizer ops
  /// that make its new value run on each of those ranks (Megatron updates
  /// both embedding copies with the summed gradient). The copies carry
  /// `replica = true`: the rank's own next value of the parameter.
  void replicateSharedUpdates() {
    std::unordered_map<const Value *, std::set<int>> readers;
    for (const auto &op : m.ops) {
      auto p = placed.find(op.get());
      if (p == placed.end() || p->second.first < 0 || p->second.second == Work::Optimizer) continue;
      for (const Value *v : op->operands)
        if (v->kind == Value::Kind::Param) readers[v].insert(rankOf(p->second.first));
    }
    std::unordered_map<const Value *, size_t> position;
    for (size_t i = 0; i < m.ops.size(); ++i)
      for (const Value *r : m.ops[i]->results) position[r] = i;
    // Each replica's new values are outputs of the step too, under the same
    // names: the rank's program keeps them (and copies a new value made out
    // of place, as ZeRO's gathered one, into its parameter), and verify
    // compares them with the single device's.
    std::vector<Output> replicaOutputs;
    const size_t originalOutputs = m.outputs.size();
    for (size_t u = 0; u < originalOutputs; ++u) {
      const Output &update = m.outputs[u];
      const Value *out = update.value;
      if (!update.isUpdate() || !out->def) continue;
      const Value *param = m.lookup(update.path);
      auto r = param ? readers.find(param) : readers.end();
      if (r == readers.end() || r->second.size() < 2) continue;
      // The optimizer ops that make the new value, in module order.
      std::set<size_t> slice;
      std::vector<const Value *> work{out};
      while (!work.empty()) {
        const Value *v = work.back();
        work.pop_back();
        auto at = position.find(v);
        if (at == position.end() || slice.count(at->second)) continue;
        const Op &op = *m.ops[at->second];
        auto p = placed.find(&op);
        if (p == placed.end() || p->second.second != Work::Optimizer || p->second.first < 0) continue;
        slice.insert(at->second);
        for (const Value *o : op.operands) work.push_back(o);
      }
      int home = rankOf(placed.at(out->def).first);
      for (int rank : r->second) {
        if (rank == home) continue;
        std::unordered_map<const Value *, Value *> remap;
        for (size_t i : slice) {
          const Op &op = *m.ops[i];
          if (rankOf(placed.at(&op).first) == rank) continue; // already there
          std::vector<Value *> operands;
          for (Value *o : op.operands) operands.push_back(remap.count(o) ? remap[o] : o);
          std::vector<TensorType> types;
          for (Value *res : op.results) types.push_back(res->type);
          std::string suffix = ".pp" + std::to_string(rank);
          Op *copy = m.append(op.kind, operands, types, op.attrs, op.results.empty() ? "" : op.results[0]->name + suffix);
          for (size_t k = 1; k < copy->results.size(); ++k)
            m.rename(copy->results[k], m.uniqueName(op.results[k]->name + suffix));
          for (size_t k = 0; k < op.results.size(); ++k) remap[op.results[k]] = copy->results[k];
          copy->attrs["replica"] = true;
          if (isPointToPoint(op.kind)) copy->attrs.erase("tag");
          copy->loc = op.loc;
          copy->path = op.path;
          place(*copy, rank, Work::Optimizer);
        }
        for (size_t k = 0; k < originalOutputs; ++k) {
          const Output &o = m.outputs[k];
          auto copied = o.isUpdate() ? remap.find(o.value) : remap.end();
          if (copied == remap.end()) continue;
          bool seen = false;
          for (const Output &r : replicaOutputs) seen |= r.name == o.name && r.value == copied->second;
          if (!seen) replicaOutputs.push_back(Output(o.name, copied->second, o.role, o.path, o.owner));
        }
      }
    }
    for (Output &o : replicaOutputs) m.outputs.push_back(std::move(o));
  }

  /// An op scheduled before an operand it reads moves to that operand's
  /// instruction (times of micro-batch 0 order the instructions).
  void fixLateReaders() {
    for (auto &up : m.ops) {
      Op &op = *up;
      auto mine = placed.find(&op);
      if (mine == placed.end() || mine->second.first < 0 || mine->second.second == Work::Optimizer) continue;
      for (Value *v : op.operands) {
        if (!v->def) continue;
        auto theirs = placed.find(v->def);
        if (theirs == placed.end() || theirs->second.first < 0) continue;
        if (times.of(theirs->second.first, theirs->second.second, 0) >
            times.of(mine->second.first, mine->second.second, 0)) {
          auto p = theirs->second;
          place(op, p.first, p.second);
          mine = placed.find(&op);
        }
      }
    }
  }

  /// Step 3: a send after the producer, a recv before the first reader.
  llvm::Error insertMessages() {
    // Which ranks need each value made on another, and where a reader is
    // per micro-batch work (not only the optimizer).
    std::unordered_map<const Value *, std::vector<int>> readers;
    std::set<std::pair<const Value *, int>> perMicroBatch;
    // A receive runs in the earliest instruction that reads it there: the
    // first reader in module order can be later work (zero-bubble's W reads
    // an activation gradient that the B before it also reads).
    std::map<std::pair<const Value *, int>, std::pair<int, Work>> receiveIn;
    for (const auto &up : m.ops) {
      const Op &op = *up;
      if (op.kind == OpKind::StageMerge) continue; // reads each stage's own operand
      int mine = placed.count(&op) && placed[&op].first >= 0 ? rankOf(placed[&op].first) : -1;
      for (Value *v : op.operands) {
        int from = stageOf(v);
        if (from < 0) continue;
        if (mine < 0)
          return makeError("'" + std::string(spelling(op.kind)) + "' runs on every pipeline rank but reads %" + v->name +
                      ", which only pipeline rank " + std::to_string(rankOf(from)) + " has");
        auto &list = readers[v];
        if (rankOf(from) != mine && !llvm::is_contained(list, mine)) list.push_back(mine);
        if (rankOf(from) != mine && workOf(op) != Work::Optimizer) perMicroBatch.insert({v, mine});
        if (rankOf(from) != mine) {
          auto p = placed[&op];
          auto [at, fresh] = receiveIn.try_emplace({v, mine}, p);
          if (!fresh && times.of(p.first, p.second, 0) < times.of(at->second.first, at->second.second, 0))
            at->second = p;
        }
      }
    }
    std::map<std::pair<const Value *, int>, Value *> received;
    std::map<std::pair<const Value *, int>, int64_t> tagOf;
    int64_t tag = 0;
    std::vector<std::unique_ptr<Op>> old = std::move(m.ops);
    m.ops.clear();
    for (auto &up : old) {
      Op &op = *up;
      int mine = placed.count(&op) && placed[&op].first >= 0 ? rankOf(placed[&op].first) : -1;
      if (op.kind != OpKind::StageMerge)
        for (Value *&v : op.operands) {
          int from = stageOf(v);
          if (from < 0 || rankOf(from) == mine) continue;
          auto k = std::make_pair(static_cast<const Value *>(v), mine);
          if (auto it = received.find(k); it != received.end()) {
            v = it->second;
            continue;
          }
          const TensorType &t = v->type;
          Op *recv = m.append(OpKind::Recv, {}, {t},
                              {{"axis", std::string("pp")}, {"peer_offset", int64_t(rankOf(from) - mine)},
                               {"tag", tagOf.at(k)}, {"shape", std::vector<int64_t>(t.shape.begin(), t.shape.end())},
                               {"dtype", std::string(spelling(t.dtype))}},
                              v->name + ".recv");
          recv->loc = op.loc;
          recv->path = op.path;
          auto p = receiveIn.at(k);
          if (p.second == Work::Optimizer) setPhase(*recv, Phase::Optimizer);
          else copyPhase(op, *recv);
          place(*recv, p.first, p.second);
          received[k] = recv->results[0];
          v = recv->results[0];
        }
      Op *self = up.get();
      m.ops.push_back(std::move(up));
      for (Value *r : self->results) {
        auto it = readers.find(r);
        if (it == readers.end()) continue;
        int from = rankOf(placed[self].first);
        for (int to : it->second) {
          tagOf[{r, to}] = ++tag;
          Op *send = m.append(OpKind::Send, {r}, {},
                              {{"axis", std::string("pp")}, {"peer_offset", int64_t(to - from)}, {"tag", tag}});
          send->loc = self->loc;
          send->path = self->path;
          copyPhase(*self, *send);
          auto p = placed[self];
          // Read only by the optimizer there: sent once, after the
          // micro-batches have summed it.
          if (!perMicroBatch.count({r, to})) {
            p.second = Work::Optimizer;
            setPhase(*send, Phase::Optimizer);
          }
          place(*send, p.first, p.second);
        }
      }
    }
    return llvm::Error::success();
  }

  /// Messages between two ranks are matched in order (as NCCL's are), so a
  /// rank must receive in the order its peer sends: where a receive's reader
  /// comes before that of an earlier message, the earlier message's receive
  /// moves up to just before the later one's (into its instruction).
  void matchChannelOrder() {
    std::unordered_map<const Op *, double> pos;
    for (size_t i = 0; i < m.ops.size(); ++i) pos[m.ops[i].get()] = double(i);
    auto key = [&](const Op *op) {
      auto p = placed.at(op);
      return std::make_tuple(times.of(p.first, p.second, 0), p.first, pos[op]);
    };
    std::map<int64_t, Op *> sendOf;
    for (const auto &op : m.ops)
      if (op->kind == OpKind::Send) sendOf[op->getInt("tag")] = op.get();
    std::map<std::pair<int, int>, std::vector<std::pair<Op *, Op *>>> channels;
    for (const auto &op : m.ops)
      if (op->kind == OpKind::Recv)
        if (auto s = sendOf.find(op->getInt("tag")); s != sendOf.end())
          channels[{int(pipelineStageOf(*s->second)), int(pipelineStageOf(*op))}].push_back(
              {s->second, op.get()});
    bool moved = false;
    for (auto &[ends, pairs] : channels) {
      std::stable_sort(pairs.begin(), pairs.end(),
                       [&](const auto &a, const auto &b) { return key(a.first) < key(b.first); });
      for (size_t k = pairs.size() - 1; k-- > 0;) {
        Op *recv = pairs[k].second, *next = pairs[k + 1].second;
        if (key(recv) < key(next)) continue;
        auto p = placed.at(next);
        place(*recv, p.first, p.second);
        pos[recv] = pos[next] - 1e-3;
        moved = true;
      }
    }
    if (moved)
      std::stable_sort(m.ops.begin(), m.ops.end(),
                       [&](const std::unique_ptr<Op> &a, const std::unique_ptr<Op> &b) { return pos[a.get()] < pos[b.get()]; });
  }

  Module &m;
  pipeline::ScheduleOptions so;
  StageBalance balance;
  InstructionTimes times;
  std::unordered_map<const Op *, std::pair<int, Work>> placed; // virtual stage, work
  std::unordered_map<const Value *, Value *> replaced;
};

class PipelinePartitionPass : public Pass {
public:
  explicit PipelinePartitionPass(const PipelineScheduleSpec &spec) : spec(spec) {}
  llvm::Error run(Module &m) override { return Partition(m, spec).run(); }

private:
  PipelineScheduleSpec spec;
};

} // namespace

std::unique_ptr<Pass> planc::createPipelinePartitionPass(const PipelineScheduleSpec &spec) {
  return std::make_unique<PipelinePartitionPass>(spec);
}
