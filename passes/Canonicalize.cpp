//===- passes/Canonicalize.cpp - dead ops and identity folds -------------===//
//
// Two clean-ups other passes rely on to leave their output simple:
//  - a reshape to the shape it already has, or a cast to the dtype it already
//    has, is replaced by its operand;
//  - an op none of whose results is used (transitively from the outputs) is
//    removed, unless it talks to other ranks (send, recv, collectives), since
//    every rank must issue those in the same order.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/OpDef.h"

#include <set>

using namespace planc;
using namespace planc::ir;

namespace {

class CanonicalizePass : public Pass {
public:
  llvm::Error run(Module &m) override {
    // Identity folds: rewrite uses of the result to the operand.
    std::map<Value *, Value *> replaced;
    auto resolve = [&](Value *v) {
      while (replaced.count(v)) v = replaced[v];
      return v;
    };
    for (auto &op : m.ops) {
      for (Value *&operand : op->operands) operand = resolve(operand);
      bool identity = (op->kind == OpKind::Reshape || op->kind == OpKind::Cast) &&
                      op->operands[0]->type == op->results[0]->type;
      if (identity) replaced[op->results[0]] = op->operands[0];
    }
    for (Output &out : m.outputs) out.value = resolve(out.value);

    // Liveness backwards from the outputs and from ops that must run.
    std::set<const Value *> live;
    for (const Output &out : m.outputs) live.insert(out.value);
    std::vector<bool> keep(m.ops.size(), false);
    for (size_t i = m.ops.size(); i-- > 0;) {
      Op &op = *m.ops[i];
      bool used = hasSideEffect(op.kind);
      for (Value *r : op.results)
        if (live.count(r)) used = true;
      if (replaced.count(op.results.empty() ? nullptr : op.results[0])) used = false;
      keep[i] = used;
      if (used)
        for (Value *o : op.operands) live.insert(o);
    }
    std::vector<std::unique_ptr<Op>> kept;
    for (size_t i = 0; i < m.ops.size(); ++i)
      if (keep[i]) kept.push_back(std::move(m.ops[i]));
    m.ops = std::move(kept);
    return llvm::Error::success();
  }
};

} // namespace

std::unique_ptr<Pass> planc::createCanonicalizePass() { return std::make_unique<CanonicalizePass>(); }
