//===- passes/FuseElementwise.cpp - elementwise chains into one op --------===//
//
// Groups grow along the step: each elementwise op with a formula starts a
// group, and takes in the group of each operand's producer when the edge
// may fuse (passes/FuseElementwise.h). A group of two ops or more becomes
// fused_elementwise at its root's place, reading the group's outside
// operands, with the members' formulas composed (ir/ops/Formula.h,
// inlineFormula) and their attributes made constants. The root's value is
// kept, so its readers are unchanged; the members' intermediate values
// disappear, and the memory planner, which runs after, allocates nothing
// for them.
//
//===----------------------------------------------------------------------===//

#include "passes/FuseElementwise.h"
#include "passes/Passes.h"

#include "ir/OpDef.h"
#include "ir/Printer.h"
#include "ir/ops/Formula.h"
#include "support/Error.h"

#include <cstring>
#include <map>
#include <unordered_map>
#include <unordered_set>

using namespace planc;
using namespace planc::ir;

namespace {

/// An op the pass can put into a group: one result, a float, a formula.
bool fusable(const Op &op) {
  const Formula *f = formulaOf(op.kind);
  return f && f->results.size() == 1 && op.results.size() == 1 && isFloat(op.results[0]->type.dtype) &&
         !hasSideEffect(op.kind);
}

/// The attributes that are not the formula's own: what must agree along a
/// group (phase, stage, recompute, precision...).
AttrMap annotationsOf(const Op &op) {
  AttrMap a;
  const Formula *f = formulaOf(op.kind);
  std::vector<const char *> own = f ? f->attrs() : std::vector<const char *>{};
  for (const auto &entry : op.attrs) {
    const std::string &name = entry.first;
    if (std::none_of(own.begin(), own.end(), [&](const char *o) { return name == o; })) a[name] = entry.second;
  }
  return a;
}

} // namespace

ElementwiseFusionAnalysis planc::findElementwiseFusions(const Module &m) {
  std::unordered_map<const Value *, size_t> readers;
  for (const auto &op : m.ops)
    for (const Value *o : op->operands) ++readers[o];
  std::unordered_set<const Value *> outputs;
  for (const Output &o : m.outputs) outputs.insert(o.value);

  ElementwiseFusionAnalysis a;
  // Groups are the sets of a union-find over the fusable ops (each op's
  // index in `parent`), so that joining a long chain costs its length, not
  // its square; `size` is a root's member count.
  std::unordered_map<const Op *, size_t> groupOf;
  std::vector<size_t> parent, size;
  auto find = [&](size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const auto &opPtr : m.ops) {
    const Op &op = *opPtr;
    if (!fusable(op)) continue;
    const size_t g = parent.size();
    parent.push_back(g);
    size.push_back(1);
    groupOf[&op] = g;
    std::vector<const Op *> joined;
    for (const Value *v : op.operands) {
      const Op *p = v->def;
      if (!p || !fusable(*p) || std::find(joined.begin(), joined.end(), p) != joined.end()) continue;
      const size_t from = find(groupOf.at(p));
      std::string why;
      if (outputs.count(v)) why = "the intermediate is an output of the step";
      else if (readers[v] > 1) why = "the intermediate has other readers (kept for backward, or shared)";
      else if (v->type.shape != op.results[0]->type.shape) why = "the intermediate is broadcast into a larger result";
      else if (!(v->type == op.results[0]->type)) why = "the intermediate and the result differ in dtype or layout";
      else if (annotationsOf(*p) != annotationsOf(op)) why = "the ops differ in phase, stage or annotations";
      else if (size[from] + size[g] > kMaxFusedOps)
        why = "the fused op would hold more than " + std::to_string(kMaxFusedOps) + " ops";
      if (!why.empty()) {
        a.refused.push_back({p, &op, why});
        continue;
      }
      joined.push_back(p);
      parent[from] = g;
      size[g] += size[from];
    }
  }
  // The members of each group in step order: the ops are visited in order.
  std::unordered_map<size_t, size_t> groupIndex; // root -> index into a.groups
  for (const auto &opPtr : m.ops) {
    auto it = groupOf.find(opPtr.get());
    if (it == groupOf.end()) continue;
    const size_t root = find(it->second);
    if (size[root] < 2) continue;
    auto [slot, added] = groupIndex.emplace(root, a.groups.size());
    if (added) a.groups.emplace_back();
    ElementwiseFusion &f = a.groups[slot->second];
    if (!f.ops.empty())
      f.intermediateBytes +=
          double(f.ops.back()->results[0]->type.numel()) * double(byteSize(f.ops.back()->results[0]->type.dtype));
    f.ops.push_back(opPtr.get());
  }
  std::unordered_map<const Op *, size_t> order;
  for (size_t i = 0; i < m.ops.size(); ++i) order[m.ops[i].get()] = i;
  std::sort(a.groups.begin(), a.groups.end(), [&](const ElementwiseFusion &x, const ElementwiseFusion &y) {
    return order[x.ops.back()] < order[y.ops.back()];
  });
  return a;
}

namespace {

class FuseElementwisePass : public Pass {
public:
  explicit FuseElementwisePass(FusionOptions o) : options(o) {}

  llvm::Error run(Module &m) override {
    if (options.policy == FusionPolicy::None || !options.elementwise) return llvm::Error::success();
    ElementwiseFusionAnalysis a = findElementwiseFusions(m);
    std::map<const Op *, std::unique_ptr<Op>> replacement; // root -> fused op
    std::unordered_set<const Op *> removed;
    for (const ElementwiseFusion &g : a.groups) {
      std::unordered_map<const Value *, int> node; // member results and outside operands -> formula node
      std::vector<Value *> operands;
      FormulaBuilder b;
      std::unordered_set<const Op *> inGroup(g.ops.begin(), g.ops.end());
      for (const Op *op : g.ops)
        for (Value *v : op->operands)
          if (!(v->def && inGroup.count(v->def)) && !node.count(v)) {
            node[v] = b.input(int(operands.size()));
            operands.push_back(v);
          }
      std::string names;
      for (const Op *op : g.ops) {
        const Formula &f = *formulaOf(op->kind);
        std::vector<int> inputs;
        for (const Value *v : op->operands) inputs.push_back(node.at(v));
        node[op->results[0]] = inlineFormula(b, f, attrValues(f, op->attrs), inputs);
        names += (names.empty() ? "" : ",") + std::string(spelling(op->kind));
      }
      const Op *root = g.ops.back();
      Formula fused = b.done(node.at(root->results[0]));
      AttrMap attrs = annotationsOf(*root);
      attrs["formula"] = formulaText(fused);
      attrs["ops"] = names;
      attrs["dtype"] = std::string(spelling(root->results[0]->type.dtype));
      std::vector<TensorType> types;
      if (std::string e = inferResultTypes(OpKind::FusedElementwise, operands, attrs, types); !e.empty())
        return makeError("fuse-elementwise: the group ending in " + toText(*root) + ": " + e);
      if (types[0].shape != root->results[0]->type.shape)
        return makeError("fuse-elementwise: the group ending in " + toText(*root) + " would change its shape");
      Op *op = m.append(OpKind::FusedElementwise, operands, {}, attrs);
      std::unique_ptr<Op> owned = std::move(m.ops.back());
      m.ops.pop_back();
      Value *out = root->results[0];
      out->def = op;
      out->resultIndex = 0;
      op->results = {out};
      op->loc = root->loc;
      op->path = root->path;
      for (const Op *x : g.ops) removed.insert(x);
      replacement[root] = std::move(owned);
    }
    if (replacement.empty()) return llvm::Error::success();
    std::vector<std::unique_ptr<Op>> kept;
    kept.reserve(m.ops.size());
    for (std::unique_ptr<Op> &op : m.ops) {
      auto r = replacement.find(op.get());
      if (r != replacement.end()) kept.push_back(std::move(r->second));
      else if (!removed.count(op.get())) kept.push_back(std::move(op));
    }
    m.ops = std::move(kept);
    return llvm::Error::success();
  }

private:
  FusionOptions options;
};

} // namespace

std::unique_ptr<Pass> planc::createFuseElementwisePass(const FusionOptions &options) {
  return std::make_unique<FuseElementwisePass>(options);
}
