//===- passes/UnrollMicroBatches.cpp - the whole step in schedule order ---===//
//
// Repeats a (pipeline-placed) step of one micro-batch for every micro-batch
// and orders the result as the schedule runs it:
//
//  - Every data input grows to m micro-batches ([m * B, ...], still split
//    over dp along its rows: rank d holds its m micro-batches one after the
//    other); micro-batch j reads its rows through a reshape and a slice.
//  - Forward and backward ops are cloned per micro-batch; each clone seeds
//    backward with 1/m, so the gradients summed over the micro-batches are
//    those of the mean loss (Megatron's loss / m), and the loss output is the
//    mean of the micro-batches' losses. Dropout in micro-batch j draws the
//    rows of the whole batch's mask it holds (`batch_split`), so the step is
//    the single-device step on the whole batch. Messages get a tag per
//    micro-batch. With pp = 1 this is gradient accumulation.
//  - Values of parameters alone (bf16 copies, transposes, ZeRO-1/2 gathers of
//    them: oncePerStepValues) are made once, in the first micro-batch; ZeRO-3
//    gathers are made again in every one. A bucketed all-reduce runs once,
//    on the gradients summed over the micro-batches; a bucketed
//    reduce-scatter (ZeRO-2/3) in every micro-batch, and its shards are
//    summed (reducesOncePerStep).
//  - The module is ordered by the start of each op's instruction in the
//    schedule's replay (analysis/PipelineSchedule.h), the optimizer last, so
//    each pipeline rank runs its ops in its schedule's order; a receive is
//    moved up where needed so that a rank receives from a peer in the order
//    the peer sends (messages between two ranks match in order, as NCCL's).
//
// Needs: sharding propagation, and `pipeline` when pp > 1. Reads
// "pipeline_schedule", "micro_batches", "virtual_stages". With one
// micro-batch and pp = 1 it changes nothing.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "ir/Placement.h"

#include "ir/OpDef.h"
#include "analysis/InstructionTimes.h"
#include "analysis/Placement.h"
#include "passes/PartitionOptions.h"

#include "llvm/ADT/STLExtras.h"
#include "support/Error.h"

#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

using namespace planc;
using namespace planc::ir;

namespace {

/// Where an op falls in the final order: its instruction's start, its
/// virtual stage, its place within the instruction.
using SortKey = std::tuple<int64_t, int, double>;

class Unroll {
public:
  // The schedule the pipeline pass recorded; a module read from text has
  // none, and then `spec` names it.
  Unroll(Module &m, const PipelineScheduleSpec &spec)
      : m(m), so(m.schedule.value_or(scheduleOptionsOf(spec, m.mesh[unsigned(MeshAxis::PP)]))) {}

  llvm::Error run() {
    const int mb = so.microBatches;
    if (mb == 1 && so.stages == 1) return llvm::Error::success();
    for (const auto &op : m.ops) {
      if (hasMicroBatch(*op)) return makeError("the module's micro-batches are already unrolled");
      if (so.stages > 1 && workOf(*op) != Work::Optimizer && !hasPipelineStage(*op) && !op->operands.empty())
        return makeError("with pp = " + std::to_string(so.stages) + " the step must be cut into stages first ('pipeline')");
    }
    if (llvm::Error e = times.build(so)) return e;
    once = oncePerStepValues(m);
    std::vector<std::unique_ptr<Op>> original = std::move(m.ops);
    m.ops.clear();
    size_t expected = original.size() * size_t(mb) + 64;
    m.reserve(expected, expected);
    keys.reserve(expected);
    splitInputs(original);
    cloneMicroBatches(original);
    matchChannelOrder();
    order();
    return llvm::Error::success();
  }

private:
  void key(Op *op, int vs, Work work, int mb, double within) {
    keys[op] = SortKey{times.of(vs, work, mb), work == Work::Optimizer ? 0 : vs, within};
  }

  /// Each data input holds all micro-batches; views pick one.
  void splitInputs(const std::vector<std::unique_ptr<Op>> &original) {
    const int mb = so.microBatches;
    if (mb == 1) return;
    for (Value *in : m.inputs) {
      if (in->type.rank() == 0) continue;
      bool used = llvm::any_of(original, [&](const std::unique_ptr<Op> &op) {
        return workOf(*op) == Work::Forward && llvm::is_contained(op->operands, in);
      });
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
      Sharding layout = Sharding::replicated(split.size());
      layout.dims[0] = rowAxes;
      for (size_t k = 1; k < one.rank(); ++k) layout.dims[k + 2] = one.sharding.dims[k];
      TensorType splitType(split, one.dtype);
      splitType.sharding = layout;
      Op *r = m.append(OpKind::Reshape, {in}, {splitType}, {{"shape", std::vector<int64_t>(split.begin(), split.end())}},
                       in->name + ".microbatches");
      key(r, -1, Work::Forward, 0, double(order_++));
      for (int j = 0; j < mb; ++j) {
        Shape sliced = split;
        sliced[1] = 1;
        TensorType slicedType(sliced, one.dtype);
        slicedType.sharding = layout;
        Op *s = m.append(OpKind::Slice, {r->results[0]}, {slicedType},
                         {{"dim", int64_t(1)}, {"start", int64_t(j)}, {"end", int64_t(j + 1)}});
        Op *back = m.append(OpKind::Reshape, {s->results[0]}, {one},
                            {{"shape", std::vector<int64_t>(one.shape.begin(), one.shape.end())}},
                            in->name + ".mb" + std::to_string(j));
        key(s, -1, Work::Forward, 0, double(order_++));
        key(back, -1, Work::Forward, 0, double(order_++));
        view[{in, j}] = back->results[0];
      }
    }
  }

  Op *cloneOf(const Op &from, std::vector<Value *> operands, int j) {
    std::vector<TensorType> types;
    types.reserve(from.results.size());
    for (Value *r : from.results) types.push_back(r->type);
    std::string suffix = ".mb" + std::to_string(j);
    Op *op = m.append(from.kind, std::move(operands), std::move(types), from.attrs,
                      from.results.empty() ? "" : from.results[0]->name + suffix);
    for (size_t i = 1; i < op->results.size(); ++i) m.rename(op->results[i], m.uniqueName(from.results[i]->name + suffix));
    op->loc = from.loc;
    op->path = from.path;
    return op;
  }

  /// Forward and backward once per micro-batch, gradients and loss summed.
  void cloneMicroBatches(std::vector<std::unique_ptr<Op>> &original) {
    const int mb = so.microBatches;
    std::unordered_set<const Value *> readLater; // by the optimizer or an output
    for (const auto &op : original)
      if (workOf(*op) == Work::Optimizer || (mb > 1 && reducesOncePerStep(*op)))
        for (Value *v : op->operands) readLater.insert(v);
    for (const Output &out : m.outputs) readLater.insert(out.value);
    int64_t maxTag = 0;
    for (const auto &op : original)
      if (op->kind == OpKind::Send) maxTag = std::max(maxTag, op->getInt("tag"));

    std::unordered_map<const Value *, Value *> total; // summed over micro-batches
    std::unordered_map<const Value *, Value *> vmap;
    vmap.reserve(original.size() * 2);
    for (int j = 0; j < mb; ++j) {
      for (const auto &[k, v] : view)
        if (k.second == j) vmap[k.first] = v;
      for (auto &up : original) {
        if (!up) continue;
        Op &op = *up;
        Work work = workOf(op);
        if (work == Work::Optimizer) continue;
        // A bucketed all-reduce runs once, on the summed gradients.
        if (mb > 1 && reducesOncePerStep(op)) continue;
        // A value of parameters alone is made once, in the first
        // micro-batch; the later ones read it (vmap keeps it).
        if (j > 0 && !op.results.empty() && once.count(op.results[0])) continue;
        int vs = virtualStageOf(op);
        Op *clone;
        if (mb == 1) {
          m.ops.push_back(std::move(up));
          clone = m.ops.back().get();
        } else {
          std::vector<Value *> operands;
          operands.reserve(op.operands.size());
          for (Value *v : op.operands) {
            auto it = vmap.find(v);
            operands.push_back(it == vmap.end() ? v : it->second);
          }
          clone = cloneOf(op, std::move(operands), j);
          for (size_t i = 0; i < op.results.size(); ++i) vmap[op.results[i]] = clone->results[i];
          if (op.kind == OpKind::Fill && !op.results.empty() && op.results[0]->name == "grad.loss")
            clone->attrs["value"] = op.getFloat("value", 1.0) / double(mb);
          if (op.kind == OpKind::Dropout)
            clone->attrs["batch_split"] = std::vector<int64_t>{rowBlocks, int64_t(mb), int64_t(j)};
          if (isPointToPoint(op.kind))
            clone->attrs["tag"] = op.getInt("tag") + int64_t(j) * maxTag;
        }
        setMicroBatch(*clone, int64_t(j));
        key(clone, vs, work, j, double(order_++));
        if (isPointToPoint(op.kind)) messages.push_back(clone);
        if (mb == 1) continue;
        for (size_t i = 0; i < op.results.size(); ++i) {
          const Value *orig = op.results[i];
          if (!readLater.count(orig)) continue;
          auto it = total.find(orig);
          if (it == total.end()) {
            total[orig] = clone->results[i];
            continue;
          }
          Op *add = m.append(OpKind::Add, {it->second, clone->results[i]}, {orig->type}, placementAttrs(*clone),
                             orig->name + ".acc" + std::to_string(j));
          add->loc = op.loc;
          add->path = op.path;
          key(add, vs, work, j, double(order_++));
          it->second = add->results[0];
        }
      }
    }
    // Each bucket in the last micro-batch, right after the latest of its
    // summed gradients.
    std::map<int64_t, SortKey> bucketReady;
    for (auto &up : original)
      if (up && reducesOncePerStep(*up) && workOf(*up) != Work::Optimizer)
        for (Value *v : up->operands)
          if (auto it = total.find(v); it != total.end() && it->second->def) {
            SortKey k = keys[it->second->def];
            auto [b, fresh] = bucketReady.emplace(up->getInt("bucket"), k);
            if (!fresh && b->second < k) b->second = k;
          }
    for (auto &up : original) {
      if (!up || !reducesOncePerStep(*up) || workOf(*up) == Work::Optimizer) continue;
      for (Value *&v : up->operands)
        if (auto it = total.find(v); it != total.end()) v = it->second;
      Op *op = up.get();
      m.ops.push_back(std::move(up));
      setMicroBatch(*op, int64_t(mb - 1));
      SortKey k = bucketReady.count(op->getInt("bucket")) ? bucketReady[op->getInt("bucket")]
                                                          : SortKey{times.of(virtualStageOf(*op), workOf(*op), mb - 1), 0, 0};
      std::get<2>(k) += 1e-4 * double(++bucketOrder);
      keys[op] = k;
    }
    for (auto &up : original) {
      if (!up || workOf(*up) != Work::Optimizer) continue;
      for (Value *&v : up->operands)
        if (auto it = total.find(v); it != total.end()) v = it->second;
      Op *op = up.get();
      m.ops.push_back(std::move(up));
      key(op, virtualStageOf(*op), Work::Optimizer, 0, double(order_++));
    }
    for (Output &out : m.outputs) {
      Value *&v = out.value;
      auto it = total.find(v);
      if (it == total.end()) continue;
      v = it->second;
      if (out.role != OutputRole::Loss) continue;
      // The mean of the micro-batches' means.
      AttrMap attrs = placementAttrs(*v->def);
      attrs["factor"] = 1.0 / double(mb);
      Op *mean = m.append(OpKind::Scale, {v}, {v->type}, std::move(attrs), "loss");
      mean->path = v->def->path;
      keys[mean] = keys[v->def];
      std::get<2>(keys[mean]) += 0.5;
      v = mean->results[0];
    }
  }

  /// A rank receives from a peer in the order the peer sends: a receive
  /// whose reader comes before an earlier message's moves that earlier
  /// message's receive up, to just before its own.
  void matchChannelOrder() {
    std::map<int64_t, Op *> sendOf;
    for (Op *op : messages)
      if (op->kind == OpKind::Send) sendOf[op->getInt("tag")] = op;
    std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<Op *, Op *>>> channels;
    for (Op *recv : messages) {
      if (recv->kind != OpKind::Recv) continue;
      auto s = sendOf.find(recv->getInt("tag"));
      if (s == sendOf.end()) continue;
      int64_t to = pipelineStageOf(*recv), from = pipelineStageOf(*s->second);
      channels[{from, to}].push_back({s->second, recv});
    }
    for (auto &[ends, pairs] : channels) {
      std::stable_sort(pairs.begin(), pairs.end(),
                       [&](const auto &a, const auto &b) { return keys[a.first] < keys[b.first]; });
      for (size_t k = pairs.size() - 1; k-- > 0;) {
        Op *recv = pairs[k].second, *next = pairs[k + 1].second;
        if (keys[recv] < keys[next]) continue;
        keys[recv] = keys[next];
        std::get<2>(keys[recv]) -= 1e-3;
        matchMicroBatchAndWork(*next, *recv);
      }
    }
  }

  void order() {
    std::vector<std::pair<SortKey, size_t>> sorted;
    sorted.reserve(m.ops.size());
    for (size_t i = 0; i < m.ops.size(); ++i) sorted.push_back({keys[m.ops[i].get()], i});
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    std::vector<std::unique_ptr<Op>> ops;
    ops.reserve(m.ops.size());
    for (const auto &s : sorted) ops.push_back(std::move(m.ops[s.second]));
    m.ops = std::move(ops);
  }

  Module &m;
  pipeline::ScheduleOptions so;
  InstructionTimes times;
  int64_t rowBlocks = 1; // the dp blocks of the batch rows
  double order_ = 0;
  int bucketOrder = 0;
  std::unordered_set<const Value *> once; // oncePerStepValues
  std::map<std::pair<const Value *, int>, Value *> view;
  std::unordered_map<const Op *, SortKey> keys;
  std::vector<Op *> messages;
};

class UnrollMicroBatchesPass : public Pass {
public:
  explicit UnrollMicroBatchesPass(const PipelineScheduleSpec &spec) : spec(spec) {}
  llvm::Error run(Module &m) override { return Unroll(m, spec).run(); }

private:
  PipelineScheduleSpec spec;
};

} // namespace

std::unique_ptr<Pass> planc::createUnrollMicroBatchesPass(const PipelineScheduleSpec &spec) {
  return std::make_unique<UnrollMicroBatchesPass>(spec);
}
