//===- passes/ShardingPropagation.cpp - SPMD partitioning of a step -------===//
//
// Gives every value of a training step a sharding over the module's mesh and
// inserts the collectives (passes/Reshard.h) where a consumer needs a value
// laid out otherwise than its producer made it. The module stays one SPMD
// program with global shapes; per-rank views come later (ir/LocalAttrs.h).
//
// Needs: a verified training step (autodiff and optimizer ran) with no
// collectives yet; parameter shardings from @shard and the ZeRO pass; the
// mesh in the module.
//
// Sources of shardings:
//  - parameters as annotated (Megatron's column/row splits, vocab-parallel
//    tables) and as the ZeRO pass split them and their optimizer states;
//  - inputs split along their first (batch) dim over dp;
//  - `sharding_constraint` attributes (a `@shard` on a value), enforced on
//    the op's result;
//  - sequence parallelism (option sequence_parallel = true): a partial sum
//    over tp of a [b, s, ...] activation is reduce-scattered along s instead
//    of all-reduced, so norms, dropout and residual adds run on s / tp rows.
//
// How an op's layout is chosen (greedy, in program order, as GSPMD's
// propagation does, with the dims of each op as einsum labels,
// passes/ShardingRules.h): the labels take the axes of, in priority order,
//   1. the layout its gradient's consumer wants (the optimizer update's
//      parameter layout, propagated backwards: "hints"), except dp;
//   2. the operands derived from parameters alone (weights never move over
//      tp: Megatron's layout), less their dp split (ZeRO storage), which
//      only an op of parameters alone keeps, at the lowest priority;
//   3. the other operands, larger first (moving the larger costs more).
// A label takes an axis only if no other label has it; dims that must stay
// whole (softmax'd, normalised, sliced) take none. Operands are then moved to
// the chosen layout; a partial sum stays partial through ops linear in it
// (add of two partials, matmul, transpose, ...) and is reduced before any
// other. Summed labels that are split (a matmul's contraction, a vocab-split
// table's rows, the batch of a weight gradient) make the result partial.
//
// Handled by name (passes/ShardingHandlers.cpp): reshape (a split moves with the major dim of a merged or
// split group), cross-entropy over vocab-split logits (Megatron's
// vocab-parallel loss: all-reduce of the row max, then of the sums of exp
// and of the target logit), a mean over split rows (the local loss divided by
// the global count), global_norm (sums of squares per layout, all-reduced
// over their axes), and the optimizer updates (in the layout of their states,
// so ZeRO-sharded states update only their shard, the gradients
// reduce-scattered into it: 2(n-1)/n of the gradient bytes, as an
// all-reduce). New parameter values are gathered back to the parameter's
// layout, and the loss is all-reduced so every rank holds it. A
// `sharding_constraint` that costs communication leaves a remark (the driver
// warns at the annotation, naming both layouts).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Reshard.h"
#include "passes/ShardingHandlers.h"
#include "passes/ShardingRules.h"

#include "ir/OpDef.h"
#include "ir/Placement.h"

#include "llvm/ADT/STLExtras.h"
#include "support/Error.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

using namespace planc;
using namespace planc::ir;
using namespace planc::spmd;

namespace {

/// "shard(2, tp)" as lowering writes a `@shard` on a value.
std::optional<Sharding> parseConstraint(llvm::StringRef text, size_t rank) {
  text = text.trim();
  if (!text.consume_front("shard(") || !text.consume_back(")")) return std::nullopt;
  auto [dimText, axisText] = text.split(',');
  int64_t dim;
  if (dimText.trim().getAsInteger(10, dim) || dim < 0 || size_t(dim) >= rank) return std::nullopt;
  std::optional<MeshAxis> axis = parseMeshAxis(axisText.trim());
  if (!axis) return std::nullopt;
  Sharding s = Sharding::replicated(rank);
  s.dims[size_t(dim)] = {*axis};
  return s;
}

/// The layout an op's labels give one of its dims lists.
Sharding layoutOf(const std::vector<int> &labels, const std::vector<std::vector<MeshAxis>> &assign) {
  Sharding s = Sharding::replicated(labels.size());
  for (size_t d = 0; d < labels.size(); ++d)
    if (labels[d] >= 0) s.dims[d] = assign[size_t(labels[d])];
  return s;
}

class Propagation : public Handlers {
public:
  Propagation(Module &m, const PartitionOptions &options)
      : m(m), rs(m), sequenceParallel(options.sequenceParallel), zeroStage(int(options.zeroStage)) {}

  llvm::Error run() {
    for (const auto &op : m.ops)
      if (isCommunication(op->kind))
        return makeError("the module already has collectives ('" + std::string(spelling(op->kind)) +
                    "'): sharding propagation runs once, on an unpartitioned module");
    splitBatch();
    findParamDerived();
    computeHints();
    std::vector<std::unique_ptr<Op>> old = std::move(m.ops);
    m.ops.clear();
    for (auto &op : old) {
      Op &o = *op;
      for (Value *&v : o.operands) {
        v = resolve(v);
        if (!v->type.sharding.partial.empty())
          if (Value *r = rs.reducedOf(v)) v = r;
      }
      bool keep = visit(o);
      if (!rs.error.empty()) return makeError(describe(o) + ": " + rs.error);
      if (keep) {
        m.ops.push_back(std::move(op));
        meanOverSplitDims(o);
        applyConstraint(o);
        if (!rs.error.empty()) return makeError(describe(o) + ": " + rs.error);
      }
    }
    fixOutputs();
    if (!rs.error.empty()) return makeError(rs.error);
    removeUnusedTransposes();
    return llvm::Error::success();
  }

  /// A transpose whose moves all went through its operand (see move) is read
  /// by nothing: it is dropped, so no rank computes or holds it.
  void removeUnusedTransposes() {
    if (transposedMoves.empty()) return;
    std::unordered_set<const Value *> used;
    for (const auto &op : m.ops) used.insert(op->operands.begin(), op->operands.end());
    for (const Output &out : m.outputs) used.insert(out.value);
    llvm::erase_if(m.ops, [&](const std::unique_ptr<Op> &op) {
      return op->kind == OpKind::Transpose && paramDerived.count(op->results[0]) && !used.count(op->results[0]);
    });
  }

private:
  static std::string describe(const Op &op) {
    std::string s = std::string("'") + spelling(op.kind) + "'";
    if (!op.results.empty()) s += " defining %" + op.results[0]->name;
    if (op.loc.isKnown())
      s += " at " + op.loc.text();
    return s;
  }

  int64_t axisSize(MeshAxis a) const { return m.mesh[unsigned(a)]; }
  int64_t devices(const std::vector<MeshAxis> &axes) const override {
    int64_t n = 1;
    for (MeshAxis a : axes) n *= axisSize(a);
    return n;
  }

  Resharder &resharder() override { return rs; }
  void replace(Value *from, Value *to) override { replaced[from] = to; }
  const Sharding *hintOf(const Value *v) const override {
    auto h = hint.find(v);
    return h == hint.end() ? nullptr : &h->second;
  }
  int zeroStageOf() const override { return zeroStage; }

  Value *resolve(Value *v) const {
    auto it = replaced.find(v);
    return it == replaced.end() ? v : it->second;
  }

  /// The data-parallel split: every input's batch dim over dp.
  void splitBatch() {
    if (axisSize(MeshAxis::DP) == 1) return;
    for (Value *in : m.inputs) {
      TensorType &t = in->type;
      if (t.rank() == 0 || t.shape[0] % axisSize(MeshAxis::DP) != 0) continue;
      t.sharding = normalized(t.sharding, t.rank());
      if (t.sharding.dims[0].empty()) t.sharding.dims[0] = {MeshAxis::DP};
    }
  }

  void findParamDerived() {
    for (Value *p : m.params) paramDerived.insert(p);
    for (const auto &op : m.ops) {
      if (op->operands.empty()) continue;
      bool all = llvm::all_of(op->operands, [&](Value *v) { return paramDerived.count(v); });
      if (all)
        for (Value *r : op->results) paramDerived.insert(r);
    }
  }

  /// Backwards from the updates: the layout each gradient will be consumed in.
  void computeHints() {
    for (auto it = m.ops.rbegin(); it != m.ops.rend(); ++it) {
      const Op &op = **it;
      if (isOptimizerUpdate(op.kind)) {
        const Value *layout = updateLayoutOperand(op);
        hint.emplace(operandsWithRole(op, OperandRole::Gradient).front(),
                     wholeOf(layout->type.sharding, layout->type.rank()));
        continue;
      }
      if (op.results.size() != 1 || op.kind == OpKind::Reshape) continue;
      auto h = hint.find(op.results[0]);
      if (h == hint.end()) continue;
      std::optional<DimLabels> L = dimLabelsOf(op);
      if (!L) continue;
      std::vector<std::vector<MeshAxis>> assign(size_t(L->numLabels));
      for (size_t d = 0; d < L->results[0].size(); ++d)
        if (L->results[0][d] >= 0 && d < h->second.dims.size()) assign[size_t(L->results[0][d])] = h->second.dims[d];
      for (size_t i = 0; i < op.operands.size(); ++i)
        if (!paramDerived.count(op.operands[i]) && op.operands[i]->type.rank() == op.results[0]->type.rank())
          hint.emplace(op.operands[i], layoutOf(L->operands[i], assign));
    }
  }

  /// Chooses the op's layout from its labels (see the file comment).
  /// `unlock`: a label made splittable although the rule has it whole.
  Decision decide(const Op &op, DimLabels L, int unlock = -1) override {
    if (unlock >= 0) L.whole[size_t(unlock)] = false;
    const size_t n = op.operands.size();
    std::vector<Sharding> cur;
    for (Value *v : op.operands) cur.push_back(normalized(v->type.sharding, v->type.rank()));

    Decision dec;
    dec.assign.assign(size_t(L.numLabels), {});
    bool used[kNumMeshAxes] = {};

    struct Source {
      double priority;
      int label;
      std::vector<MeshAxis> axes;
    };
    std::vector<Source> sources;
    for (size_t r = 0; r < op.results.size(); ++r) {
      auto h = hint.find(op.results[r]);
      if (h == hint.end()) continue;
      for (size_t d = 0; d < L.results[r].size() && d < h->second.dims.size(); ++d) {
        std::vector<MeshAxis> axes = h->second.dims[d];
        // A cast on the way to the update (the optimizer widening a bf16
        // gradient) may take the update's dp split: the gradient is then
        // reduce-scattered narrow, before it, and the cast runs on the shard.
        // Not an f32 accumulator (`main_grad`): it is whole until reduced.
        if (op.kind != OpKind::Cast || zeroStage < 1 || op.getBool("main_grad"))
          axes.erase(std::remove(axes.begin(), axes.end(), MeshAxis::DP), axes.end());
        if (!axes.empty()) sources.push_back({4e18, L.results[r][d], axes});
      }
    }
    // An op of parameters alone (the cast of a master shard) may run on
    // their ZeRO shards; one that also reads activations gathers the dp split
    // (ZeRO storage, not a layout of the computation), so only the rest of a
    // weight's split (its tp part) is a source: a dp split riding along with
    // tp on the same dim must not take the weight's tp out of the running.
    // Where the shard itself cannot be kept (a dim dp does not divide, under
    // an op that is not padding-safe) the tp part is the fallback.
    const bool paramOnly = !op.results.empty() && paramDerived.count(op.results[0]);
    for (size_t i = 0; i < n; ++i) {
      bool pinned = paramDerived.count(op.operands[i]);
      for (size_t d = 0; d < L.operands[i].size(); ++d) {
        const std::vector<MeshAxis> &axes = cur[i].dims[d];
        if (axes.empty()) continue;
        bool dp = llvm::is_contained(axes, MeshAxis::DP);
        if (!pinned || !dp) {
          sources.push_back({pinned ? 3e18 : double(op.operands[i]->type.numel()), L.operands[i][d], axes});
          continue;
        }
        if (paramOnly) sources.push_back({-1.0, L.operands[i][d], axes});
        std::vector<MeshAxis> rest = withoutAxis(Sharding{{axes}, {}}, MeshAxis::DP).dims[0];
        if (!rest.empty()) sources.push_back({paramOnly ? -2.0 : 3e18, L.operands[i][d], rest});
        else if (!paramOnly) sources.push_back({-1.0, L.operands[i][d], axes});
      }
    }
    std::stable_sort(sources.begin(), sources.end(),
                     [](const Source &a, const Source &b) { return a.priority > b.priority; });
    for (const Source &s : sources) {
      if (s.label < 0 || L.whole[size_t(s.label)] || !dec.assign[size_t(s.label)].empty()) continue;
      if (llvm::any_of(s.axes, [&](MeshAxis a) { return used[unsigned(a)]; })) continue;
      if (!fits(op, L, s.label, s.axes)) continue;
      dec.assign[size_t(s.label)] = s.axes;
      for (MeshAxis a : s.axes) used[unsigned(a)] = true;
    }

    // Partial sums that may stay partial: over an axis no label took, through
    // an op linear in them.
    std::vector<std::vector<MeshAxis>> keep(n);
    std::vector<MeshAxis> kept;
    if (L.jointlyLinear && n > 0) {
      for (MeshAxis a : cur[0].partial)
        if (!used[unsigned(a)] &&
            llvm::all_of(cur, [&](const Sharding &s) { return llvm::is_contained(s.partial, a); }))
          kept.push_back(a);
      for (auto &k : keep) k = kept;
    } else {
      for (size_t i = 0; i < n; ++i)
        for (MeshAxis a : cur[i].partial) {
          if (!L.linearIn[i] || used[unsigned(a)] || llvm::is_contained(kept, a)) continue;
          bool other = false;
          for (size_t j = 0; j < n; ++j) other |= j != i && llvm::is_contained(cur[j].partial, a);
          if (other) continue;
          keep[i].push_back(a);
          kept.push_back(a);
        }
    }

    // Sequence parallelism: reduce a [b, s, ...] partial over tp onto s.
    if (sequenceParallel && axisSize(MeshAxis::TP) > 1 && !used[unsigned(MeshAxis::TP)] &&
        !llvm::is_contained(kept, MeshAxis::TP))
      for (size_t i = 0; i < n; ++i) {
        if (!llvm::is_contained(cur[i].partial, MeshAxis::TP) || llvm::is_contained(keep[i], MeshAxis::TP)) continue;
        if (op.operands[i]->type.rank() < 3) continue;
        int label = L.operands[i][1];
        if (label < 0 || L.whole[size_t(label)] || !dec.assign[size_t(label)].empty()) continue;
        if (!fits(op, L, label, {MeshAxis::TP})) continue;
        dec.assign[size_t(label)] = {MeshAxis::TP};
        used[unsigned(MeshAxis::TP)] = true;
        break;
      }

    for (size_t i = 0; i < n; ++i) {
      Sharding s = layoutOf(L.operands[i], dec.assign);
      s.partial = keep[i];
      dec.operands.push_back(s);
    }
    for (size_t r = 0; r < op.results.size(); ++r) {
      Sharding s = layoutOf(L.results[r], dec.assign);
      s.partial = kept;
      for (int label = 0; label < L.numLabels; ++label) {
        if (!L.summed[size_t(label)] || llvm::is_contained(L.results[r], label)) continue;
        for (MeshAxis a : dec.assign[size_t(label)])
          if (!llvm::is_contained(s.partial, a)) s.partial.push_back(a);
      }
      dec.results.push_back(s);
    }
    return dec;
  }

  /// Every dim with `label` divides over `axes`, or, under an op that keeps
  /// padding zero (ir/OpDef.h: it may run on a ZeRO shard that dp does not
  /// divide, as the cast of a master shard, the widening and clip scaling of
  /// a gradient shard, loss scaling's select), over the axes outside a
  /// minor-most dp (a padded dp split).
  bool fits(const Op &op, const DimLabels &L, int label, const std::vector<MeshAxis> &axes) const {
    int64_t n = devices(axes);
    if (keepsPaddingZero(op.kind) && !axes.empty() && axes.back() == MeshAxis::DP) n /= axisSize(MeshAxis::DP);
    auto check = [&](const std::vector<int> &labels, const Shape &shape) {
      for (size_t d = 0; d < labels.size(); ++d)
        if (labels[d] == label && shape[d] % n != 0) return false;
      return true;
    };
    for (size_t i = 0; i < op.operands.size(); ++i)
      if (!check(L.operands[i], op.operands[i]->type.shape)) return false;
    for (size_t r = 0; r < op.results.size(); ++r)
      if (!check(L.results[r], op.results[r]->type.shape)) return false;
    return true;
  }

  /// The memo key of a move: ZeRO-3 gathers a parameter again per phase (and
  /// releases it after); below stage 3 a gathered parameter (the narrow copy
  /// of a split master) is kept for the whole step.
  std::string moveKey(const Value *v, const OpStamp &stamp) const {
    if (!paramDerived.count(v) || zeroStage < 3) return "";
    return spelling(phaseOf(stamp.attrs));
  }

  Value *move(Value *v, const Sharding &target, const OpStamp &stamp) override {
    std::string key = moveKey(v, stamp);
    // A transposed parameter (the tied embedding read as the head) is moved
    // by moving the parameter and transposing again, so one gather serves
    // both uses instead of a second gather of the transpose.
    if (Op *t = v->def; t && t->kind == OpKind::Transpose && paramDerived.count(v) &&
                        normalized(v->type.sharding, v->type.rank()) != normalized(target, v->type.rank())) {
      auto memoKey = std::make_tuple(static_cast<const Value *>(v), toString(target), key);
      if (auto it = transposedMoves.find(memoKey); it != transposedMoves.end()) return it->second;
      std::vector<int64_t> perm = t->getInts("perm");
      Sharding want = normalized(target, v->type.rank()), source = want;
      for (size_t d = 0; d < perm.size() && d < want.dims.size(); ++d) source.dims[size_t(perm[d])] = want.dims[d];
      Value *moved = move(t->operands[0], source, stamp);
      if (!moved) return nullptr;
      Op *again = rs.emit(OpKind::Transpose, {moved}, t->attrs, stamp);
      if (!again) return nullptr;
      again->loc = t->loc;
      again->path = t->path;
      again->results[0]->type.sharding = want;
      return transposedMoves[memoKey] = again->results[0];
    }
    if (key.empty()) return rs.to(v, target, stamp, /*allReduceFirst=*/false, key);
    // A ZeRO-3 gather lives for one phase: `transient` tells the memory
    // planner it is a communication buffer, not the stored parameter.
    OpStamp gather = stamp;
    gather.attrs["transient"] = true;
    return rs.to(v, target, gather, /*allReduceFirst=*/false, key);
  }

  void apply(Op &op, const Decision &dec) override {
    OpStamp stamp = OpStamp::of(op);
    for (size_t i = 0; i < op.operands.size(); ++i) {
      Value *moved = move(op.operands[i], dec.operands[i], stamp);
      if (!moved) return;
      op.operands[i] = moved;
    }
    for (size_t r = 0; r < op.results.size(); ++r) op.results[r]->type.sharding = dec.results[r];
  }

  /// Everything whole: the rule for ops no rule describes.
  void replicate(Op &op) override {
    Decision dec;
    for (Value *v : op.operands) dec.operands.push_back(Sharding::replicated(v->type.rank()));
    for (Value *v : op.results) dec.results.push_back(Sharding::replicated(v->type.rank()));
    apply(op, dec);
  }

  /// Returns false when the op was replaced by others (its results mapped).
  bool visit(Op &op) {
    if (std::optional<bool> kept = expand(op)) return *kept;
    std::optional<DimLabels> L = dimLabelsOf(op);
    if (!L) {
      replicate(op);
      return true;
    }
    Decision dec = decide(op, *L);
    apply(op, dec);
    if (op.kind == OpKind::ReduceMean) {
      int64_t n = 1;
      for (int label = 0; label < L->numLabels; ++label)
        if (L->summed[size_t(label)]) n *= devices(dec.assign[size_t(label)]);
      if (n > 1) meanSplitOver[&op] = n;
    }
    return true;
  }

  /// A mean over split dims (after the op is in place): each rank's mean of
  /// its rows, over the number of ranks, is its addend of the global mean.
  void meanOverSplitDims(Op &op) {
    auto it = meanSplitOver.find(&op);
    if (it == meanSplitOver.end()) return;
    int64_t n = it->second;
    Op *s = rs.emit(OpKind::Scale, {op.results[0]}, {{"factor", 1.0 / double(n)}}, OpStamp::of(op));
    if (!s) return;
    s->results[0]->type.sharding = op.results[0]->type.sharding;
    replaced[op.results[0]] = s->results[0];
  }

  void applyConstraint(Op &op) {
    auto it = op.attrs.find("sharding_constraint");
    if (it == op.attrs.end() || op.results.empty()) return;
    const std::string *text = std::get_if<std::string>(&it->second);
    std::optional<Sharding> s = text ? parseConstraint(*text, op.results[0]->type.rank()) : std::nullopt;
    if (!s) return;
    // An axis of size 1 splits nothing.
    for (unsigned a = 0; a < kNumMeshAxes; ++a)
      if (axisSize(MeshAxis(a)) == 1) *s = withoutAxis(*s, MeshAxis(a));
    Sharding cur = normalized(op.results[0]->type.sharding, op.results[0]->type.rank());
    Sharding want = *s;
    want.partial.clear();
    // The constraint names one dim; splits of other dims (the batch over dp) stay.
    for (size_t d = 0; d < want.dims.size(); ++d)
      if (want.dims[d].empty())
        for (MeshAxis a : cur.dims[d])
          if (!splitsAnywhere(want, a)) want.dims[d].push_back(a);
    if (want == cur) return;
    size_t before = m.ops.size();
    Value *moved = move(op.results[0], want, OpStamp::of(op));
    if (!moved) return;
    replaced[op.results[0]] = moved;
    // A constraint that costs communication is worth a word at its line: the
    // layout the producer gives and the one asked for, and what it takes.
    std::string moves;
    for (size_t i = before; i < m.ops.size(); ++i)
      if (m.ops[i]->kind != OpKind::ShardSlice)
        moves += (moves.empty() ? "" : ", ") + std::string(spelling(m.ops[i]->kind)) + " over " +
                 m.ops[i]->getString("axis");
    auto spelled = [](const Sharding &sh) {
      std::string t = toString(sh);
      if (t.size() >= 2 && t.front() == '{' && t.back() == '}') t = t.substr(1, t.size() - 2);
      return t.empty() ? std::string("replicated") : t;
    };
    // One remark per cause: a layer repeated n times (or its backward clone)
    // reshards at the same line in the same way; only the value differs.
    std::string cause = op.loc.text() + " " +
                        spelled(want) + " " + spelled(cur) + " " + moves;
    if (!moves.empty() && remarked.insert(cause).second)
      m.remarks.push_back({DiagID::warn_constraint_reshards, op.loc, {spelled(want), "%" + op.results[0]->name, spelled(cur), moves}});
  }

  static bool splitsAnywhere(const Sharding &s, MeshAxis a) {
    for (const auto &axes : s.dims)
      if (llvm::is_contained(axes, a)) return true;
    return false;
  }

  void fixOutputs() {
    // The first parameter whose path or name is the key: outputs are matched
    // by lookup, not by a scan of every parameter per output (thousands of
    // each on a large model).
    std::unordered_map<std::string, size_t> firstParam;
    for (size_t i = 0; i < m.params.size(); ++i) {
      firstParam.emplace(m.params[i]->path, i);
      firstParam.emplace(m.params[i]->name, i);
    }
    for (Output &out : m.outputs) {
      Value *&v = out.value;
      v = resolve(v);
      OpStamp stamp = v->def ? OpStamp::of(*v->def) : OpStamp{};
      if (out.role == OutputRole::Loss) {
        v = move(v, Sharding::replicated(v->type.rank()), stamp);
      } else if (out.isUpdate()) {
        // The next step feeds this value back as the parameter (or state).
        if (auto it = firstParam.find(out.path); it != firstParam.end())
          v = move(v, m.params[it->second]->type.sharding, stamp);
      }
      if (!v) return;
    }
  }

  Module &m;
  Resharder rs;
  bool sequenceParallel;
  int zeroStage;
  std::unordered_set<const Value *> paramDerived;
  std::unordered_map<const Value *, Sharding> hint;
  std::unordered_set<std::string> remarked; // causes already remarked on (applyConstraint)
  std::map<std::tuple<const Value *, std::string, std::string>, Value *> transposedMoves;
  std::unordered_map<Value *, Value *> replaced;
  std::unordered_map<const Op *, int64_t> meanSplitOver; // reduce_mean -> devices its mean is split over
};

class ShardingPropagationPass : public Pass {
public:
  explicit ShardingPropagationPass(const PartitionOptions &options) : options(options) {}
  llvm::Error run(Module &m) override { return Propagation(m, options).run(); }

private:
  PartitionOptions options;
};

} // namespace

std::unique_ptr<Pass> planc::createShardingPropagationPass(const PartitionOptions &options) {
  return std::make_unique<ShardingPropagationPass>(options);
}
