//===- passes/FoldTransposes.cpp - transposes into the matmuls that read them ===//
//
// Under `fusion = aggressive`, a transpose of the last two dims next to a
// matmul becomes the matmul's operand flag, so the transposed copy is never
// written (a GEMM reads either layout at the same speed):
//
//   matmul(transpose(a), b)  ->  matmul(a, b) {transpose_a flipped}   (and b alike)
//   transpose(matmul(a, b))  ->  matmul(b, a) {transpose_a = !tb, transpose_b = !ta}
//
// the second as (op(a) op(b))^T = op(b)^T op(a)^T, when the transpose is the
// matmul's only reader. The tied output head of a GPT is the case that pays:
// the [vocab, hidden] table was transposed every step, and its gradient
// computed transposed and transposed back. A transpose other readers still
// need stays; the final canonicalize removes the ones none need.
//
// It runs in the training pipeline after the optimizer, before the last
// canonicalize: forward, backward and update are there, and the
// partitioner then splits the folded matmuls by their own dim labels.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/OpDef.h"

#include <unordered_map>

using namespace planc;
using namespace planc::ir;

namespace {

/// A transpose that swaps the last two dims and keeps the others.
bool swapsLastTwo(const Op &t) {
  if (t.kind != OpKind::Transpose) return false;
  std::vector<int64_t> perm = t.getInts("perm");
  size_t n = perm.size();
  if (n < 2) return false;
  for (size_t i = 0; i + 2 < n; ++i)
    if (perm[i] != int64_t(i)) return false;
  return perm[n - 2] == int64_t(n - 1) && perm[n - 1] == int64_t(n - 2);
}

class FoldTransposesPass : public Pass {
public:
  explicit FoldTransposesPass(FusionOptions o) : options(o) {}

  llvm::Error run(Module &m) override {
    if (options.policy != FusionPolicy::Aggressive) return llvm::Error::success();
    // Operands: a matmul reads the transpose's operand instead, flag flipped.
    for (auto &op : m.ops) {
      if (op->kind != OpKind::MatMul) continue;
      for (size_t i = 0; i < 2; ++i) {
        const Op *t = op->operands[i]->def;
        if (!t || !swapsLastTwo(*t)) continue;
        const char *flag = i == 0 ? "transpose_a" : "transpose_b";
        op->operands[i] = t->operands[0];
        op->attrs[flag] = !op->getBool(flag);
      }
    }
    // Results: transpose(matmul) with the transpose its only reader.
    std::unordered_map<const Value *, size_t> readers;
    for (const auto &op : m.ops)
      for (const Value *v : op->operands) ++readers[v];
    for (const Output &o : m.outputs) ++readers[o.value];
    for (auto &op : m.ops) {
      if (!swapsLastTwo(*op)) continue;
      Op *mm = op->operands[0]->def;
      if (!mm || mm->kind != OpKind::MatMul || readers[mm->results[0]] != 1) continue;
      const bool ta = mm->getBool("transpose_a"), tb = mm->getBool("transpose_b");
      // The transpose becomes the swapped matmul, keeping its own value; the
      // old matmul is left without readers for canonicalize.
      AttrMap attrs = mm->attrs;
      attrs["transpose_a"] = !tb;
      attrs["transpose_b"] = !ta;
      op->kind = OpKind::MatMul;
      op->operands = {mm->operands[1], mm->operands[0]};
      op->attrs = attrs;
      op->loc = mm->loc;
      op->path = mm->path;
      readers[mm->results[0]] = 0;
    }
    return llvm::Error::success();
  }

private:
  FusionOptions options;
};

} // namespace

std::unique_ptr<Pass> planc::createFoldTransposesPass(const FusionOptions &options) {
  return std::make_unique<FoldTransposesPass>(options);
}
