//===- passes/Autodiff.cpp - reverse-mode differentiation ----------------===//
//
// Appends the backward graph of the loss to the forward graph, so that one
// module computes the loss and the gradient of every trainable parameter.
//
// Needs: a verified module whose output "loss" is a floating-point scalar, and
// no backward ops yet (the pass runs once).
//
// Guarantees after:
//  - d(loss) = 1 is seeded with a `fill` (%grad.loss); the ops of the forward
//    graph are visited in reverse and each one on a path from a trainable
//    parameter to the loss applies its OpDef gradient rule. A value used by
//    several ops gets the sum (`add`) of their contributions, in reverse op
//    order, so the result is deterministic.
//  - every op the pass adds has `phase = "backward"` and the location and
//    layer path of the forward op it differentiates (the seed: those of the
//    loss), and of that op's annotations only `stage` and `precision` (where
//    and how precisely its gradient runs); `recompute` and
//    `sharding_constraint` describe forward values and are not copied.
//  - for every parameter that is not frozen and has a floating-point dtype, an
//    output "grad.<param path>" of the parameter's shape and dtype, its value
//    named %grad.<param path>. A parameter the loss does not depend on gets a
//    `fill` of zeros. Frozen parameters, inputs and integer values get none.
//  - the forward ops and outputs are unchanged, and no added op is dead: the
//    rules' results that no gradient needs (those of inputs, say) are removed.
//  - backward values are typed replicated: shardings are assigned by the
//    passes that partition the module, which run after this one.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/Builder.h"
#include "ir/OpDef.h"
#include "ir/Placement.h"
#include "ir/StepOutputs.h"
#include "ir/Printer.h"
#include "support/Error.h"

#include <unordered_map>
#include <unordered_set>

using namespace planc;
using namespace planc::ir;

namespace {

bool isTrainable(const Value &p) { return !p.frozen && isFloat(p.type.dtype); }

/// The output name of a parameter's gradient.
std::string pathOf(const Value &p) { return p.path.empty() ? p.name : p.path; }

/// The layer a parameter belongs to: its path less the parameter's own name
/// (blocks.0.attention.w_qkv -> blocks.0.attention).
std::string layerOf(const Value &p) {
  llvm::StringRef path = p.path.empty() ? llvm::StringRef(p.name) : llvm::StringRef(p.path);
  size_t dot = path.rfind('.');
  return dot == llvm::StringRef::npos ? "" : path.substr(0, dot).str();
}

class AutodiffPass : public Pass {
public:
  llvm::Error run(Module &m) override;

private:
  /// Marks the ops appended since `first` as backward ops of `forward`.
  void stampBackward(Module &m, size_t first, const Op *forward);
  /// Removes the appended ops from `first` on whose results no output reads.
  void removeDeadBackwardOps(Module &m, size_t first);
};

void AutodiffPass::stampBackward(Module &m, size_t first, const Op *forward) {
  for (size_t i = first; i < m.ops.size(); ++i) {
    AttrMap &attrs = m.ops[i]->attrs;
    // Rules may copy the forward op's attributes wholesale (dropout does, to
    // draw the same mask); annotations are decided here instead.
    for (const char *name : {"recompute", "sharding_constraint", "stage", "precision"}) attrs.erase(name);
    if (forward)
      for (const char *name : {"stage", "precision"})
        if (auto it = forward->attrs.find(name); it != forward->attrs.end()) attrs[name] = it->second;
    setPhase(attrs, Phase::Backward);
  }
}

void AutodiffPass::removeDeadBackwardOps(Module &m, size_t first) {
  std::unordered_set<const Value *> live;
  for (const Output &out : m.outputs) live.insert(out.value);
  std::vector<bool> keep(m.ops.size() - first, false);
  for (size_t i = m.ops.size(); i-- > first;) {
    const Op &op = *m.ops[i];
    for (const Value *r : op.results)
      if (live.count(r)) keep[i - first] = true;
    if (keep[i - first])
      for (const Value *o : op.operands) live.insert(o);
  }
  size_t out = first;
  for (size_t i = first; i < m.ops.size(); ++i)
    if (keep[i - first]) m.ops[out++] = std::move(m.ops[i]);
  m.ops.resize(out);
}

llvm::Error AutodiffPass::run(Module &m) {
  const Output *lossOut = m.outputFor(OutputRole::Loss);
  Value *loss = lossOut ? lossOut->value : nullptr;
  if (!loss) return makeError("autodiff needs an output named \"loss\"; the module has none");
  if (loss->type.rank() != 0 || !isFloat(loss->type.dtype))
    return makeError("autodiff needs a floating-point scalar loss; %" + loss->name + " is " + toString(loss->type));
  for (const auto &op : m.ops)
    if (phaseOf(*op) == Phase::Backward)
      return makeError("the module already has backward ops (" + toText(*op) + "); autodiff runs once");
  for (const Output &out : m.outputs)
    if (out.role == OutputRole::ParamGradient)
      return makeError("the module already has a gradient output \"" + out.name + "\"; autodiff runs once");

  // Forward: the values that depend on a trainable parameter. Only their
  // gradients are needed; every other operand's gradient is dropped.
  std::unordered_set<const Value *> varies;
  for (const Value *p : m.params)
    if (isTrainable(*p)) varies.insert(p);
  const size_t numForward = m.ops.size();
  for (size_t i = 0; i < numForward; ++i) {
    const Op &op = *m.ops[i];
    bool any = false;
    for (const Value *o : op.operands) any |= varies.count(o) > 0;
    if (any)
      for (const Value *r : op.results)
        if (isFloat(r->type.dtype)) varies.insert(r);
  }

  Builder b(m);
  std::unordered_map<const Value *, Value *> grads;
  const size_t firstBackward = m.ops.size();

  // Seed d(loss) = 1, where the loss was computed.
  b.loc = loss->def ? loss->def->loc : loss->loc;
  b.path = loss->def ? loss->def->path : "";
  grads[loss] = b.value(OpKind::Fill, {},
                        {{"value", 1.0}, {"shape", Shape{}}, {"dtype", std::string(spelling(loss->type.dtype))}},
                        "grad.loss");
  stampBackward(m, firstBackward, loss->def);

  // Reverse sweep over the forward ops.
  std::vector<Value *> dResults, dOperands;
  for (size_t i = numForward; i-- > 0;) {
    const Op &op = *m.ops[i];
    bool reached = false, needed = false;
    dResults.clear();
    for (const Value *r : op.results) {
      auto it = grads.find(r);
      dResults.push_back(it == grads.end() ? nullptr : it->second);
      reached |= it != grads.end();
    }
    for (const Value *o : op.operands) needed |= varies.count(o) > 0;
    if (!reached || !needed) continue;

    const OpDef &def = opDef(op.kind);
    if (!def.grad)
      return makeError(llvm::Twine("'") + spelling(op.kind) + "' has no gradient rule, but the loss depends on a " +
                  "parameter through it: " + toText(op));
    size_t first = m.ops.size();
    BuilderScope scope(b, op);
    dOperands.clear();
    def.grad(b, op, dResults, dOperands);
    if (dOperands.size() != op.operands.size())
      return makeError(llvm::Twine("the gradient rule of '") + spelling(op.kind) + "' gave " +
                  llvm::Twine(dOperands.size()) + " gradients for " + llvm::Twine(op.operands.size()) +
                  " operands: " + toText(op));
    for (size_t k = 0; k < dOperands.size(); ++k) {
      Value *d = dOperands[k];
      const Value *x = op.operands[k];
      if (!d || !varies.count(x)) continue;
      if (d->type.shape != x->type.shape || d->type.dtype != x->type.dtype)
        return makeError(llvm::Twine("the gradient rule of '") + spelling(op.kind) + "' gave " + toString(d->type) +
                    " for operand %" + x->name + " : " + toString(x->type) + ": " + toText(op));
      auto [it, inserted] = grads.try_emplace(x, d);
      if (!inserted) it->second = b.add(it->second, d); // fan-out: the uses' contributions add up
    }
    stampBackward(m, first, &op);
  }

  // One output per trainable parameter; zeros where the loss does not reach.
  std::unordered_set<std::string> outputNames;
  for (const Output &out : m.outputs) outputNames.insert(out.name);
  std::unordered_set<const Value *> named;
  for (Value *p : m.params) {
    if (!isTrainable(*p)) continue;
    Output out = gradientOutput(pathOf(*p));
    const std::string &name = out.name;
    if (!outputNames.insert(name).second)
      return makeError("two parameters would have the gradient output \"" + name + "\"; the second is %" + p->name);
    Value *g = nullptr;
    if (auto it = grads.find(p); it != grads.end()) {
      g = it->second;
    } else {
      // Structurally zero: the loss does not depend on this parameter.
      size_t first = m.ops.size();
      b.loc = p->loc;
      b.path = layerOf(*p);
      g = b.value(OpKind::Fill, {},
                  {{"value", 0.0}, {"shape", p->type.shape}, {"dtype", std::string(spelling(p->type.dtype))}});
      stampBackward(m, first, nullptr);
    }
    // Readable IR: the gradient is called what it is, once.
    if (named.insert(g).second) m.rename(g, m.uniqueName(name));
    out.value = g;
    m.outputs.push_back(std::move(out));
  }
  removeDeadBackwardOps(m, firstBackward);
  return llvm::Error::success();
}

} // namespace

std::unique_ptr<Pass> planc::createAutodiffPass() { return std::make_unique<AutodiffPass>(); }
