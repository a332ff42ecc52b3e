//===- passes/PipelinePartition.cpp - stages, micro-batches, send/recv ----===//
//
// Turns a partitioned training step of one micro-batch into the step of the
// whole batch under a pipeline schedule:
//
//  1. Micro-batches. Every data input grows to m micro-batches
//     ([m * B, ...], still split over dp along its rows: rank d holds its m
//     micro-batches one after the other), and the forward and backward ops
//     are cloned once per micro-batch, reading micro-batch j's rows. Each
//     clone seeds backward with 1/m, so the gradients summed over the
//     micro-batches are those of the mean loss (Megatron's loss / m); the
//     loss output is the mean of the micro-batches' losses. With m = 1
//     nothing is cloned. This is also gradient accumulation when pp = 1.
//  2. Stages. The repeated layers (ops whose layer path has an index,
//     blocks.3.mlp -> blocks.3) are cut into p * v equal chunks in order;
//     chunk k is virtual stage k, run by pipeline rank k mod p (Megatron's
//     interleaving; v = 1: rank k). Ops before the first layer (embedding)
//     belong to stage 0, after the last (final norm, head, loss) to the last.
//     An op's `stage` attribute (@stage in the plan) overrides this. Backward
//     ops follow the forward op they differentiate (same layer path). An
//     update runs on the stage of its gradient.
//  3. Order. Every op belongs to one instruction of the schedule (forward,
//     backward or, for zero-bubble, weight gradient of micro-batch j on a
//     virtual stage) and the module is ordered by the instructions' start
//     times in the schedule's replay (passes/PipelineSchedule.h), so each
//     pipeline rank's ops run in its schedule's order. Zero-bubble's weight
//     gradient is the backward work no activation gradient sent upstream
//     depends on.
//  4. Messages. A value made on one stage and read on another is sent right
//     after it is made and received right before its first reader there
//     (`send` / `recv` over pp, each pair with its own tag).
//  5. The gradient norm for clipping: each stage's sum of squares, merged
//     across stages (stage_merge) and all-reduced over pp.
//
// Ops carry `pipeline_stage` (the pipeline rank that runs them; absent: every
// rank) and `micro_batch`. Needs: sharding propagation has run (the clones
// copy its layouts). Reads options "pipeline_schedule" (gpipe, 1f1b,
// interleaved, zero_bubble), "micro_batches", "virtual_stages".
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/PipelineSchedule.h"

#include "ir/OpDef.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

using namespace planc;
using namespace planc::ir;
using namespace planc::pipeline;

namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

enum class Section { Forward, Backward, Optimizer };

Section sectionOf(const Op &op) {
  std::string phase = op.getString("phase");
  return phase == "backward" ? Section::Backward : phase == "optimizer" ? Section::Optimizer : Section::Forward;
}

/// "blocks.3" for "blocks.3.attention": the path up to its first index.
std::string layerOf(llvm::StringRef path) {
  llvm::SmallVector<llvm::StringRef, 8> parts;
  path.split(parts, '.');
  std::string prefix;
  for (llvm::StringRef p : parts) {
    prefix += (prefix.empty() ? "" : ".") + p.str();
    if (!p.empty() && llvm::all_of(p, [](char c) { return c >= '0' && c <= '9'; })) return prefix;
  }
  return "";
}

/// Where an op runs and when: the schedule instruction it is part of.
struct Slot {
  int stage = -1; // virtual stage; -1: every rank, in the prologue or the optimizer
  InstrKind kind = InstrKind::Forward;
  int microBatch = 0;
  bool optimizer = false;
};

class Partition {
public:
  Partition(Module &m, const PassOptions &o) : m(m) {
    std::string style = o.get("pipeline_schedule", "1f1b");
    so.style = style == "gpipe"         ? ScheduleStyle::GPipe
               : style == "interleaved" ? ScheduleStyle::Interleaved
               : style == "zero_bubble" ? ScheduleStyle::ZeroBubble
                                        : ScheduleStyle::OneFOneB;
    so.stages = int(m.mesh[unsigned(MeshAxis::PP)]);
    so.microBatches = std::max(1, std::atoi(o.get("micro_batches", "1").c_str()));
    so.virtualStages = so.style == ScheduleStyle::Interleaved ? std::max(1, std::atoi(o.get("virtual_stages", "1").c_str())) : 1;
    if (so.stages == 1 && so.style == ScheduleStyle::Interleaved) so.style = ScheduleStyle::OneFOneB;
  }

  llvm::Error run() {
    if (so.stages == 1 && so.microBatches == 1) return llvm::Error::success();
    for (const auto &op : m.ops)
      if (op->kind == OpKind::Send || op->kind == OpKind::Recv || op->has("pipeline_stage"))
        return fail("the module is already split into pipeline stages");
    auto schedule = buildSchedule(so);
    if (!schedule) return schedule.takeError();
    auto sim = simulate(*schedule);
    if (!sim) return sim.takeError();
    for (size_t r = 0; r < sim->timelines.size(); ++r)
      for (const TimedInstr &t : sim->timelines[r])
        if (t.instr.isCompute())
          startOf[key(int(r) + t.instr.chunk * so.stages, t.instr.kind, t.instr.microBatch)] = t.start;
    hasWeightGrad = so.style == ScheduleStyle::ZeroBubble;

    if (llvm::Error e = assignStages()) return e;
    std::vector<std::unique_ptr<Op>> original = std::move(m.ops);
    m.ops.clear();
    size_t expected = original.size() * size_t(so.microBatches) * 2;
    slot.reserve(expected);
    seq.reserve(expected);
    m.ops.reserve(expected);
    splitInputs(original);
    cloneMicroBatches(original);
    placeOptimizer(original);
    if (llvm::Error e = fixLateReaders()) return e;
    if (llvm::Error e = insertMessages()) return e;
    order();
    return llvm::Error::success();
  }

private:
  static int64_t key(int stage, InstrKind kind, int mb) { return (int64_t(stage) * 8 + int64_t(kind)) * 1000003 + mb; }
  int numStages() const { return so.stages * so.virtualStages; }
  int rankOf(int stage) const { return stage % so.stages; }

  int64_t timeOf(const Slot &s) const {
    if (s.optimizer) return INT64_MAX / 2;
    if (s.stage < 0) return -1;
    InstrKind k = s.kind == InstrKind::WeightGrad && !hasWeightGrad ? InstrKind::Backward : s.kind;
    auto it = startOf.find(key(s.stage, k, s.microBatch));
    return it == startOf.end() ? 0 : it->second;
  }

  /// Step 2: the virtual stage of every forward and backward op.
  llvm::Error assignStages() {
    std::vector<std::string> layers;
    std::unordered_map<std::string, size_t> layerIndex;
    size_t firstLayerOp = SIZE_MAX, lastLayerOp = 0;
    for (size_t i = 0; i < m.ops.size(); ++i) {
      const Op &op = *m.ops[i];
      if (sectionOf(op) != Section::Forward) continue;
      std::string layer = layerOf(op.path);
      if (layer.empty()) continue;
      if (!layerIndex.count(layer)) {
        layerIndex[layer] = layers.size();
        layers.push_back(layer);
      }
      firstLayerOp = std::min(firstLayerOp, i);
      lastLayerOp = i;
    }
    const int S = numStages();
    if (S > 1 && (layers.empty() || layers.size() % size_t(S) != 0))
      return fail(std::to_string(layers.size()) + " repeated layers cannot be cut into " + std::to_string(S) +
                  " equal pipeline chunks (pp x virtual stages)");
    size_t perChunk = S > 1 ? layers.size() / size_t(S) : 1;
    for (size_t i = 0; i < m.ops.size(); ++i) {
      const Op &op = *m.ops[i];
      if (sectionOf(op) != Section::Forward) continue;
      std::string layer = layerOf(op.path);
      int stage = layer.empty() ? (i < firstLayerOp ? 0 : S - 1) : int(layerIndex[layer] / perChunk);
      if (S == 1) stage = 0;
      if (op.has("stage")) stage = int(std::clamp<int64_t>(op.getInt("stage"), 0, S - 1));
      forwardStage[&op] = stage;
      if (!pathStage.count(op.path)) pathStage[op.path] = stage;
    }
    for (const auto &op : m.ops) {
      if (sectionOf(*op) != Section::Backward) continue;
      auto it = pathStage.find(op->path);
      std::string layer = layerOf(op->path);
      int stage = it != pathStage.end() ? it->second
                  : !layer.empty() && layerIndex.count(layer) ? int(layerIndex[layer] / perChunk)
                                                               : S - 1;
      if (S == 1) stage = 0;
      forwardStage[op.get()] = stage;
    }
    // Zero-bubble: backward work nothing sent upstream depends on is W.
    if (hasWeightGrad) {
      std::unordered_map<const Value *, const Op *> producer;
      for (const auto &op : m.ops)
        for (Value *r : op->results) producer[r] = op.get();
      std::vector<const Op *> work;
      for (const auto &op : m.ops) {
        if (sectionOf(*op) != Section::Backward) continue;
        for (Value *v : op->operands) {
          auto p = producer.find(v);
          if (p == producer.end() || sectionOf(*p->second) != Section::Backward) continue;
          if (forwardStage[p->second] > forwardStage[op.get()]) work.push_back(p->second);
        }
      }
      while (!work.empty()) {
        const Op *op = work.back();
        work.pop_back();
        if (!inputGrad.insert(op).second) continue;
        for (Value *v : op->operands) {
          auto p = producer.find(v);
          if (p != producer.end() && sectionOf(*p->second) == Section::Backward &&
              forwardStage[p->second] == forwardStage[op])
            work.push_back(p->second);
        }
      }
    }
    return llvm::Error::success();
  }

  Op *newOp(const Op &from, std::vector<Value *> operands, const std::string &suffix) {
    std::vector<TensorType> types;
    for (Value *r : from.results) types.push_back(r->type);
    Op *op = m.append(from.kind, std::move(operands), types, from.attrs,
                      from.results.empty() ? "" : from.results[0]->name + suffix);
    for (size_t i = 1; i < op->results.size(); ++i) m.rename(op->results[i], m.uniqueName(from.results[i]->name + suffix));
    op->loc = from.loc;
    op->path = from.path;
    return op;
  }

  void place(Op *op, Slot s) {
    slot[op] = s;
    seq[op] = double(nextSeq++);
    if (s.stage >= 0) op->attrs["pipeline_stage"] = int64_t(rankOf(s.stage));
    else op->attrs.erase("pipeline_stage");
    if (s.stage >= 0 && so.virtualStages > 1) op->attrs["chunk"] = int64_t(s.stage / so.stages);
    if (!s.optimizer && s.stage >= 0) op->attrs["micro_batch"] = int64_t(s.microBatch);
  }

  /// Step 1a: each data input holds all micro-batches; views pick one.
  void splitInputs(const std::vector<std::unique_ptr<Op>> &original) {
    const int mb = so.microBatches;
    for (Value *in : m.inputs) {
      if (in->type.rank() == 0 || mb == 1) continue;
      bool used = false;
      for (const auto &op : original)
        if (sectionOf(*op) == Section::Forward && llvm::is_contained(op->operands, in)) used = true;
      if (!used) continue;
      TensorType one = in->type;
      one.sharding.dims.resize(one.rank());
      std::vector<MeshAxis> rowAxes = one.sharding.dims[0];
      int64_t d = 1;
      for (MeshAxis a : rowAxes) d *= m.mesh[unsigned(a)];
      rowBlocks = std::max(rowBlocks, d);
      in->type.shape[0] *= mb;
      // [m*B] -> [d, m, B/d, ...] -> slice j on dim 1 -> [d, 1, B/d, ...] -> [B, ...]
      Shape split{d, mb, one.shape[0] / d};
      split.insert(split.end(), one.shape.begin() + 1, one.shape.end());
      Sharding splitLayout = Sharding::replicated(split.size());
      splitLayout.dims[0] = rowAxes;
      for (size_t k = 1; k < one.rank(); ++k) splitLayout.dims[k + 2] = one.sharding.dims[k];
      TensorType splitType(split, one.dtype);
      splitType.sharding = splitLayout;
      Op *r = m.append(OpKind::Reshape, {in}, {splitType}, {{"shape", std::vector<int64_t>(split.begin(), split.end())}},
                       in->name + ".microbatches");
      place(r, Slot{});
      for (int j = 0; j < mb; ++j) {
        Shape sliced = split;
        sliced[1] = 1;
        TensorType slicedType(sliced, one.dtype);
        slicedType.sharding = splitLayout;
        Op *s = m.append(OpKind::Slice, {r->results[0]}, {slicedType},
                         {{"dim", int64_t(1)}, {"start", int64_t(j)}, {"end", int64_t(j + 1)}});
        place(s, Slot{});
        Op *back = m.append(OpKind::Reshape, {s->results[0]}, {one},
                            {{"shape", std::vector<int64_t>(one.shape.begin(), one.shape.end())}},
                            in->name + ".mb" + std::to_string(j));
        place(back, Slot{});
        inputView[{in, j}] = back->results[0];
      }
    }
  }

  /// Step 1b: forward and backward once per micro-batch, gradients summed.
  void cloneMicroBatches(std::vector<std::unique_ptr<Op>> &original) {
    const int mb = so.microBatches;
    std::unordered_set<const Value *> readLater; // by the optimizer or an output
    for (const auto &op : original)
      if (sectionOf(*op) == Section::Optimizer)
        for (Value *v : op->operands) readLater.insert(v);
    for (const auto &out : m.outputs) readLater.insert(out.second);

    std::unordered_map<const Value *, Value *> total; // accumulated over micro-batches
    for (int j = 0; j < mb; ++j) {
      std::unordered_map<const Value *, Value *> vmap;
      for (const auto &[k, v] : inputView)
        if (k.second == j) vmap[k.first] = v;
      for (auto &up : original) {
        Op &op = *up;
        Section sec = sectionOf(op);
        if (sec == Section::Optimizer) continue;
        Slot s;
        s.stage = forwardStage[&op];
        s.kind = sec == Section::Forward ? InstrKind::Forward
                 : hasWeightGrad && !inputGrad.count(&op) ? InstrKind::WeightGrad
                                                          : InstrKind::Backward;
        s.microBatch = j;
        Op *clone;
        if (mb == 1) {
          m.ops.push_back(std::move(up));
          clone = m.ops.back().get();
        } else {
          std::vector<Value *> operands;
          for (Value *v : op.operands) {
            auto it = vmap.find(v);
            operands.push_back(it == vmap.end() ? v : it->second);
          }
          clone = newOp(op, operands, ".mb" + std::to_string(j));
          for (size_t i = 0; i < op.results.size(); ++i) vmap[op.results[i]] = clone->results[i];
          if (op.kind == OpKind::Fill && !op.results.empty() && op.results[0]->name == "grad.loss")
            clone->attrs["value"] = op.getFloat("value", 1.0) / double(mb);
          // Dropout draws the whole batch's mask rows this micro-batch holds.
          if (op.kind == OpKind::Dropout)
            clone->attrs["batch_split"] = std::vector<int64_t>{rowBlocks, int64_t(mb), int64_t(j)};
        }
        place(clone, s);
        if (mb == 1) continue;
        for (size_t i = 0; i < op.results.size(); ++i) {
          const Value *orig = op.results[i];
          if (!readLater.count(orig)) continue;
          Value *mine = clone->results[i];
          auto it = total.find(orig);
          if (it == total.end()) {
            total[orig] = mine;
            continue;
          }
          Op *add = m.append(OpKind::Add, {it->second, mine}, {orig->type}, {{"phase", std::string("backward")}},
                             orig->name + ".acc" + std::to_string(j));
          add->loc = op.loc;
          add->path = op.path;
          Slot as = s;
          if (sec == Section::Forward) as.kind = InstrKind::Forward;
          place(add, as);
          it->second = add->results[0];
        }
      }
    }
    if (mb == 1) return;
    for (auto &up : original)
      if (up && sectionOf(*up) == Section::Optimizer)
        for (Value *&v : up->operands)
          if (auto it = total.find(v); it != total.end()) v = it->second;
    for (auto &[name, v] : m.outputs) {
      auto it = total.find(v);
      if (it == total.end()) continue;
      v = it->second;
      if (name == "loss") { // the mean of the micro-batches' means
        Op *mean = m.append(OpKind::Scale, {v}, {v->type}, {{"factor", 1.0 / double(mb)}}, "loss");
        mean->path = v->def ? v->def->path : "";
        place(mean, slot[v->def]);
        v = mean->results[0];
      }
    }
  }

  int stageOfValue(const Value *v) const {
    if (!v->def) return -1;
    auto it = slot.find(v->def);
    return it == slot.end() ? -1 : it->second.stage;
  }

  /// Step 5 and the updates: optimizer ops run on the stage of what they read.
  void placeOptimizer(std::vector<std::unique_ptr<Op>> &original) {
    for (auto &up : original) {
      if (!up || sectionOf(*up) != Section::Optimizer) continue;
      Op &op = *up;
      std::set<int> stages;
      for (Value *v : op.operands)
        if (int s = stageOfValue(v); s >= 0) stages.insert(rankOf(s));
      if (op.kind == OpKind::GlobalNorm && stages.size() > 1) {
        splitNorm(std::move(up));
        continue;
      }
      m.ops.push_back(std::move(up));
      Slot s;
      s.optimizer = true;
      // A rank's virtual stages share its ops; take the first operand's.
      for (Value *v : op.operands)
        if (int st = stageOfValue(v); st >= 0) {
          s.stage = st;
          break;
        }
      place(&op, s);
    }
  }

  /// Each stage's sum of squares; merged and all-reduced over pp.
  void splitNorm(std::unique_ptr<Op> up) {
    Op &op = *up;
    std::vector<std::vector<Value *>> perRank(size_t(so.stages));
    for (Value *v : op.operands) perRank[size_t(rankOf(std::max(stageOfValue(v), 0)))].push_back(v);
    std::vector<Value *> parts;
    for (int r = 0; r < so.stages; ++r) {
      Op *part;
      if (perRank[size_t(r)].empty()) {
        part = m.append(OpKind::Fill, {}, {op.results[0]->type},
                        {{"value", 0.0}, {"shape", std::vector<int64_t>{}}, {"dtype", std::string(spelling(op.results[0]->type.dtype))}});
      } else {
        part = m.append(OpKind::GlobalNorm, perRank[size_t(r)], {op.results[0]->type}, op.attrs);
      }
      part->loc = op.loc;
      part->path = op.path;
      Slot s;
      s.optimizer = true;
      s.stage = r; // rank r's first chunk
      place(part, s);
      parts.push_back(part->results[0]);
    }
    TensorType merged = op.results[0]->type;
    merged.sharding.partial.push_back(MeshAxis::PP);
    Op *merge = m.append(OpKind::StageMerge, parts, {merged}, {{"phase", std::string("optimizer")}});
    merge->loc = op.loc;
    place(merge, Slot{-1, InstrKind::Forward, 0, true});
    Op *sum = m.append(OpKind::AllReduce, {merge->results[0]}, {op.results[0]->type},
                       {{"axis", std::string("pp")}, {"phase", std::string("optimizer")}});
    sum->loc = op.loc;
    place(sum, Slot{-1, InstrKind::Forward, 0, true});
    Value *old = op.results[0], *now = sum->results[0];
    replacedNorm[old] = now;
  }

  /// An op placed before an operand is made (a gradient summed on an earlier
  /// stage than its last part) moves to that operand's instruction.
  llvm::Error fixLateReaders() {
    for (auto &up : m.ops) {
      Op &op = *up;
      for (Value *&v : op.operands)
        if (auto it = replacedNorm.find(v); it != replacedNorm.end()) v = it->second;
      Slot &mine = slot[&op];
      for (Value *v : op.operands) {
        if (!v->def || !slot.count(v->def)) continue;
        const Slot &theirs = slot[v->def];
        if (timeOf(theirs) > timeOf(mine) || (timeOf(theirs) == timeOf(mine) && seq[v->def] > seq[&op])) {
          Slot moved = theirs;
          place(&op, moved);
          mine = slot[&op];
        }
      }
    }
    return llvm::Error::success();
  }

  /// Step 4: a send after the producer, a recv before the first reader.
  llvm::Error insertMessages() {
    std::map<std::pair<const Value *, int>, Value *> received;
    int64_t tag = 0;
    std::vector<Op *> ops;
    for (auto &up : m.ops) ops.push_back(up.get());
    for (Op *op : ops) {
      if (op->kind == OpKind::StageMerge) continue; // reads each stage's own operand
      int mine = slot[op].stage >= 0 ? rankOf(slot[op].stage) : -1;
      for (Value *&v : op->operands) {
        int from = stageOfValue(v);
        if (from < 0) continue;
        int src = rankOf(from);
        if (mine < 0)
          return fail("'" + std::string(spelling(op->kind)) + "' runs on every pipeline rank but reads %" + v->name +
                      ", which only pipeline rank " + std::to_string(src) + " has");
        if (src == mine) continue;
        auto k = std::make_pair(static_cast<const Value *>(v), mine);
        if (auto it = received.find(k); it != received.end()) {
          v = it->second;
          continue;
        }
        ++tag;
        Op *send = m.append(OpKind::Send, {v}, {},
                            {{"axis", std::string("pp")}, {"peer_offset", int64_t(mine - src)}, {"tag", tag}});
        send->loc = v->def->loc;
        send->path = v->def->path;
        copyPhase(*v->def, *send);
        place(send, slot[v->def]);
        seq[send] = seq[v->def] + 0.25;
        TensorType t = v->type;
        Op *recv = m.append(OpKind::Recv, {}, {t},
                            {{"axis", std::string("pp")}, {"peer_offset", int64_t(src - mine)}, {"tag", tag},
                             {"shape", std::vector<int64_t>(t.shape.begin(), t.shape.end())},
                             {"dtype", std::string(spelling(t.dtype))}},
                            v->name + ".recv");
        recv->loc = op->loc;
        recv->path = op->path;
        copyPhase(*op, *recv);
        Slot rs = slot[op];
        place(recv, rs);
        seq[recv] = seq[op] - 0.25;
        received[k] = recv->results[0];
        v = recv->results[0];
        channels[{src, mine}].push_back({send, recv});
      }
    }
    matchChannelOrder();
    return llvm::Error::success();
  }

  /// Where an op falls in the final order.
  std::tuple<int64_t, int, double> sortKey(const Op *op) {
    const Slot &s = slot[op];
    return {timeOf(s), s.optimizer ? 0 : s.stage, seq[op]};
  }

  /// Messages between two ranks are matched in order (as NCCL's are), so a
  /// rank must receive in the order its peer sends: a receive whose reader
  /// comes before an earlier message's reader moves that earlier message's
  /// receive up, to just before its own.
  void matchChannelOrder() {
    for (auto &[ends, pairs] : channels) {
      std::stable_sort(pairs.begin(), pairs.end(),
                       [&](const auto &a, const auto &b) { return sortKey(a.first) < sortKey(b.first); });
      for (size_t k = pairs.size() - 1; k-- > 0;) {
        Op *recv = pairs[k].second, *next = pairs[k + 1].second;
        if (sortKey(recv) < sortKey(next)) continue;
        slot[recv] = slot[next];
        seq[recv] = seq[next] - 1e-3;
        recv->attrs["micro_batch"] = next->attrs["micro_batch"];
        if (auto it = next->attrs.find("phase"); it != next->attrs.end()) recv->attrs["phase"] = it->second;
      }
    }
  }

  static void copyPhase(const Op &from, Op &to) {
    if (auto it = from.attrs.find("phase"); it != from.attrs.end()) to.attrs["phase"] = it->second;
  }

  /// Step 3: the module in schedule order.
  void order() {
    // Keys computed once: the module can have a million ops (gpt3-175b).
    std::vector<std::pair<std::tuple<int64_t, int, double>, size_t>> keys;
    keys.reserve(m.ops.size());
    for (size_t i = 0; i < m.ops.size(); ++i) keys.push_back({sortKey(m.ops[i].get()), i});
    std::stable_sort(keys.begin(), keys.end(),
                     [](const auto &a, const auto &b) { return a.first < b.first; });
    std::vector<std::unique_ptr<Op>> sorted;
    sorted.reserve(m.ops.size());
    for (const auto &k : keys) sorted.push_back(std::move(m.ops[k.second]));
    m.ops = std::move(sorted);
  }

  Module &m;
  ScheduleOptions so;
  bool hasWeightGrad = false;
  int64_t rowBlocks = 1; // the dp blocks of the batch rows
  std::unordered_map<int64_t, int64_t> startOf;
  std::unordered_map<const Op *, int> forwardStage;
  std::unordered_map<std::string, int> pathStage;
  std::unordered_set<const Op *> inputGrad;
  std::map<std::pair<const Value *, int>, Value *> inputView;
  std::unordered_map<const Op *, Slot> slot;
  std::unordered_map<const Op *, double> seq;
  std::unordered_map<const Value *, Value *> replacedNorm;
  std::map<std::pair<int, int>, std::vector<std::pair<Op *, Op *>>> channels; // (from, to) rank: (send, recv)
  int64_t nextSeq = 0;
};

class PipelinePartitionPass : public Pass {
public:
  explicit PipelinePartitionPass(PassOptions o) : options(std::move(o)) {}
  llvm::Error run(Module &m) override { return Partition(m, options).run(); }

private:
  PassOptions options;
};

} // namespace

std::unique_ptr<Pass> planc::createPipelinePartitionPass(const PassOptions &options) {
  return std::make_unique<PipelinePartitionPass>(options);
}
