//===- passes/Recompute.cpp - activation recomputation -------------------===//
//
// Trades compute for memory (Korthikanti et al. 2022, "Reducing Activation
// Recomputation in Large Transformer Models"): a forward value that backward
// reads is either saved (kept alive from forward to backward) or recomputed
// (its forward ops are cloned into the backward section and backward reads
// the clone). The forward section is never changed.
//
// Sections. An op with `phase = "backward"` is a backward op, one with
// `phase = "optimizer"` an optimizer op, every other op a forward op.
//
// Policy. PartitionOptions::recompute (none, selective or full; default
// none) is the plan-wide policy; a forward op's own `recompute` attribute
// (from `@recompute` / `@recompute(policy)` in the plan) overrides it for the
// values that op produces. Any other string is an error. For a value V, the result of forward op O with policy P:
//  - none: V is saved.
//  - selective: V is recomputed iff it is in the attention core, decided by
//    structure, in forward order:
//      * V is an activation if some operand of O is a module input or an
//        activation (parameters, and values computed from parameters alone,
//        are not activations);
//      * V is in the core if V has rank >= 2 with its last two dims equal, and
//        either O is a `matmul` of two activations neither of which is in the
//        core (the scores Q K^T, [..., s, s]), or O is not a `matmul` and has
//        an operand in the core of V's shape (the scale, the causal mask, the
//        softmax, the dropout of the probabilities). The matmul with V ends
//        the core. Parameter-only products (a tied head) and matmuls with a
//        weight (projections, MLP) are never in the core, whatever their
//        shape.
//  - full: let L be the repeated-layer instance of O's path (the prefix up to
//    its first all-digit component, "blocks.3" for "blocks.3.attention";
//    `repeatedLayerOf`). Where O's path is in no repeat and O carries an
//    explicit `recompute = "full"`, L is the first component of its path (the
//    annotated top-level call). V is recomputed iff L is not empty and no
//    forward op outside L reads V: each layer keeps only the values that
//    leave it, which are the next layer's inputs. Values outside every layer
//    (the embedding, the final norm, the loss) are saved, and so are values
//    of parameters alone (bf16 copies of weights), which are made once per
//    step (analysis/Placement.h, oncePerStepValues).
//  - `send` and `recv` results are always saved (a point-to-point transfer
//    is not repeated).
//
// Mechanics. Values to recompute are grouped by the layer instance of their
// op (or by the op's path where it is in no repeat). For each group, at the
// first backward op that reads one of its values, the pass inserts clones of
// the forward ops that produce those values, transitively back to saved
// values, parameters and inputs, once, in forward order. A clone has the
// original's kind, attributes (less `recompute`), result types, location and
// path, plus `phase = "backward"` and `recomputed = true`; its results are
// named %<original>.recompute. Every backward op that reads a recomputed
// value reads the group's clone instead. Dropout clones draw the same mask:
// the kernel keys it by the `seed` and `stream` attributes, which the clone
// copies.
//
// Guarantees after: the forward ops, optimizer ops and outputs are unchanged;
// no backward op reads a forward value that the policy recomputes, so
// `savedActivations` is exactly the saved set; the module verifies if it did;
// the outputs are bit-identical to those of the module without the pass. The
// pass is idempotent, and with the policy none everywhere it changes nothing.
//
//===----------------------------------------------------------------------===//

#include "analysis/SavedActivations.h"
#include "passes/Passes.h"
#include "ir/Placement.h"

#include "ir/OpDef.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "support/Error.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

using namespace planc;
using namespace planc::ir;

namespace {

bool isPolicy(llvm::StringRef p) { return parseKind<RecomputePolicy>(p).has_value(); }

class RecomputePass : public Pass {
public:
  // The rules compare the plan-wide policy with ops' `recompute` attributes,
  // which are spelled as the policies are.
  explicit RecomputePass(RecomputePolicy policy) : policy(spelling(policy)) {}
  llvm::Error run(Module &m) override;

private:
  std::string policy; // the plan-wide one
};

/// What the rules decide for one module, before anything changes.
struct Analysis {
  std::unordered_map<const Value *, const Op *> forwardDef; // result -> its forward op
  std::unordered_map<const Op *, size_t> order;             // forward op -> its index
  std::unordered_set<const Value *> recompute;              // values backward must not read
  std::unordered_map<const Op *, std::string> group;        // forward op -> its clone group
};

llvm::Error analyze(const Module &m, const std::string &planPolicy, Analysis &a) {
  std::unordered_set<const Value *> activation, core;
  std::unordered_map<const Value *, std::vector<const Op *>> readers; // forward readers
  std::vector<const Op *> forward;
  for (const auto &opPtr : m.ops) {
    const Op &op = *opPtr;
    if (!isForwardOp(op)) continue;
    a.order[&op] = forward.size();
    forward.push_back(&op);
    bool fromActivations = false;
    for (const Value *o : op.operands) {
      readers[o].push_back(&op);
      fromActivations |= o->kind == Value::Kind::Input || activation.count(o) > 0;
    }
    for (const Value *r : op.results) {
      a.forwardDef[r] = &op;
      if (fromActivations) activation.insert(r);
      const Shape &s = r->type.shape;
      if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2]) continue;
      bool inCore = false;
      if (op.kind == OpKind::MatMul) {
        inCore = op.operands.size() == 2 && llvm::all_of(op.operands, [&](const Value *o) {
                   return activation.count(o) && !core.count(o);
                 });
      } else {
        inCore = llvm::any_of(op.operands, [&](const Value *o) { return core.count(o) && o->type.shape == s; });
      }
      if (inCore) core.insert(r);
    }
  }

  for (const Op *op : forward) {
    std::string p = planPolicy;
    bool explicitPolicy = op->has("recompute");
    if (explicitPolicy) {
      p = op->getString("recompute");
      if (!isPolicy(p))
        return makeError("unknown recompute policy '" + p + "' on '" + spelling(op->kind) + "' at path \"" + op->path +
                    "\"; expected none, selective or full");
    }
    std::string layer = repeatedLayerOf(op->path);
    a.group[op] = layer.empty() ? op->path : layer;
    if (p == "none" || isPointToPoint(op->kind)) continue;
    if (p == "selective") {
      for (const Value *r : op->results)
        if (core.count(r)) a.recompute.insert(r);
      continue;
    }
    // full
    if (layer.empty() && explicitPolicy) layer = llvm::StringRef(op->path).split('.').first.str();
    if (layer.empty()) continue;
    a.group[op] = layer;
    for (const Value *r : op->results) {
      bool leaves = false;
      for (const Op *reader : readers[r]) {
        std::string l = repeatedLayerOf(reader->path);
        if (l.empty() && explicitPolicy && layer == llvm::StringRef(reader->path).split('.').first) l = layer;
        leaves |= l != layer;
      }
      // Values of parameters alone (a bf16 copy, a gathered weight) are made
      // once per step and kept for backward anyway: recomputing them would
      // only repeat their casts and gathers.
      if (!leaves && activation.count(r)) a.recompute.insert(r);
    }
  }
  return llvm::Error::success();
}

llvm::Error RecomputePass::run(Module &m) {
  Analysis a;
  if (llvm::Error e = analyze(m, policy, a)) return e;
  if (a.recompute.empty()) return llvm::Error::success();

  // Which values each group must recompute, and the backward op before which
  // its clones go (the first one that reads any of them).
  std::map<std::string, std::vector<const Value *>> needed;
  std::map<std::string, size_t> insertAt;
  for (size_t i = 0; i < m.ops.size(); ++i) {
    const Op &op = *m.ops[i];
    if (phaseOf(op) != Phase::Backward) continue;
    for (const Value *v : op.operands) {
      if (!a.recompute.count(v)) continue;
      const std::string &g = a.group.at(a.forwardDef.at(v));
      insertAt.try_emplace(g, i);
      needed[g].push_back(v);
    }
  }
  if (needed.empty()) return llvm::Error::success();

  // Per group: the forward ops to clone (transitively, through recomputed
  // operands), cloned in forward order; clones are appended for now.
  std::map<std::string, std::unordered_map<const Value *, Value *>> cloneOf;
  std::map<size_t, std::vector<std::unique_ptr<Op>>> clonesBefore; // by backward op index
  for (auto &[g, values] : needed) {
    std::set<std::pair<size_t, const Op *>> toClone;
    std::vector<const Value *> work = values;
    while (!work.empty()) {
      const Value *v = work.back();
      work.pop_back();
      const Op *def = a.forwardDef.at(v);
      if (!toClone.insert({a.order.at(def), def}).second) continue;
      for (const Value *o : def->operands)
        if (a.recompute.count(o)) work.push_back(o);
    }
    auto &map = cloneOf[g];
    for (auto &[index, orig] : toClone) {
      std::vector<Value *> operands;
      for (Value *o : orig->operands) {
        auto it = map.find(o);
        operands.push_back(it != map.end() ? it->second : o);
      }
      std::vector<TensorType> types;
      for (const Value *r : orig->results) types.push_back(r->type);
      AttrMap attrs = orig->attrs;
      attrs.erase("recompute");
      setPhase(attrs, Phase::Backward);
      attrs["recomputed"] = true;
      Op *clone = m.append(orig->kind, std::move(operands), std::move(types), std::move(attrs));
      clone->loc = orig->loc;
      clone->path = orig->path;
      for (size_t k = 0; k < orig->results.size(); ++k) {
        m.rename(clone->results[k], m.uniqueName(orig->results[k]->name + ".recompute"));
        map[orig->results[k]] = clone->results[k];
      }
      clonesBefore[insertAt.at(g)].push_back(std::move(m.ops.back()));
      m.ops.pop_back();
    }
  }

  // Backward reads the clones of its group.
  for (auto &opPtr : m.ops) {
    if (phaseOf(*opPtr) != Phase::Backward) continue;
    for (Value *&v : opPtr->operands)
      if (a.recompute.count(v)) v = cloneOf.at(a.group.at(a.forwardDef.at(v))).at(v);
  }

  // Splice the clones in before the first backward op that needs them.
  m.insertBefore(std::move(clonesBefore));
  return llvm::Error::success();
}

} // namespace

std::unique_ptr<Pass> planc::createRecomputePass(const PartitionOptions &options) {
  return std::make_unique<RecomputePass>(options.recompute);
}
