//===- passes/FoldIntoMatMul.cpp - layout changes into the matmuls beside them ===//
//
// Under `fusion = aggressive`, work a GEMM can do itself is folded into the
// matmul, so its intermediate is never written:
//
//   sum_to(matmul(a, b) {transpose_a}) over all batch dims
//       ->  matmul(reshape(a, [B*s, h]), reshape(b, [B*s, v])) {transpose_a}
//   matmul(transpose(a), b)  ->  matmul(a, b) {transpose_a flipped}   (and b alike)
//   transpose(matmul(a, b))  ->  matmul(b, a) {transpose_a = !tb, transpose_b = !ta}
//
// The first is the weight gradient x^T dy of a batched input: autodiff
// computes one [h, v] product per batch row and sums them (the reference
// semantics of broadcasting); one GEMM whose contraction runs over batch and
// sequence gives the same sum without the [B, h, v] products (for GPT-2's
// tied head, 617 MB a step). The reshapes are views. The second and third
// turn transposes of the last two dims into operand flags, as
// (op(a) op(b))^T = op(b)^T op(a)^T when the transpose is the matmul's only
// reader: the tied head's [vocab, hidden] table was transposed every step,
// its gradient computed transposed and transposed back. A value other
// readers still need stays; the final canonicalize removes the ones none
// need.
//
// It runs in the training pipeline after the optimizer, before the last
// canonicalize: forward, backward and update are there, and the
// partitioner then splits the folded matmuls by their own dim labels.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/OpDef.h"
#include "ir/TransposeFacts.h"

#include <algorithm>
#include <map>
#include <unordered_map>

using namespace planc;
using namespace planc::ir;

namespace {

class FoldIntoMatMulPass : public Pass {
public:
  explicit FoldIntoMatMulPass(FusionOptions o) : options(o) {}

  llvm::Error run(Module &m) override {
    if (options.policy != FusionPolicy::Aggressive) return llvm::Error::success();
    foldBatchSums(m);
    // Operands: a matmul reads the transpose's operand instead, flag flipped.
    for (auto &op : m.ops) {
      if (op->kind != OpKind::MatMul) continue;
      for (size_t i = 0; i < 2; ++i) {
        const Op *t = op->operands[i]->def;
        if (!t || !swapsLastTwoDims(*t)) continue;
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
      if (!swapsLastTwoDims(*op)) continue;
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
  /// sum_to(matmul(a, b) {transpose_a}) summing every batch dim away, the
  /// matmul read by nothing else: one matmul of the reshaped operands, in
  /// the sum's place and keeping its value.
  static void foldBatchSums(Module &m) {
    std::unordered_map<const Value *, size_t> readers;
    for (const auto &op : m.ops)
      for (const Value *v : op->operands) ++readers[v];
    for (const Output &o : m.outputs) ++readers[o.value];
    std::map<size_t, std::vector<std::unique_ptr<Op>>> before;
    for (size_t i = 0; i < m.ops.size(); ++i) {
      Op &sum = *m.ops[i];
      if (sum.kind != OpKind::SumTo || readers[sum.operands[0]] != 1) continue;
      const Op *mm = sum.operands[0]->def;
      if (!mm || mm->kind != OpKind::MatMul || !mm->getBool("transpose_a") || mm->getBool("transpose_b")) continue;
      Value *a = mm->operands[0], *b = mm->operands[1];
      const Shape &sa = a->type.shape, &sb = b->type.shape, &out = sum.results[0]->type.shape;
      const size_t r = sa.size();
      if (r < 3 || sb.size() != r || out.size() != 2 || !(a->type.dtype == b->type.dtype)) continue;
      if (!std::equal(sa.begin(), sa.end() - 2, sb.begin()) || sa[r - 2] != sb[r - 2]) continue;
      if (out[0] != sa[r - 1] || out[1] != sb[r - 1]) continue;
      int64_t rows = 1;
      for (size_t d = 0; d + 1 < r; ++d) rows *= sa[d];
      AttrMap notes = mm->attrs;
      notes.erase("transpose_a");
      notes.erase("transpose_b");
      std::vector<Value *> flat;
      for (Value *v : {a, b}) {
        AttrMap attrs = notes;
        Shape shape{rows, v->type.shape.back()};
        attrs["shape"] = std::vector<int64_t>(shape.begin(), shape.end());
        Op *reshape = m.append(OpKind::Reshape, {v}, {TensorType(shape, v->type.dtype)}, attrs, v->name + ".rows");
        reshape->loc = mm->loc;
        reshape->path = mm->path;
        flat.push_back(reshape->results[0]);
        before[i].push_back(std::move(m.ops.back()));
        m.ops.pop_back();
      }
      AttrMap attrs = notes;
      attrs["transpose_a"] = true;
      attrs["transpose_b"] = false;
      sum.kind = OpKind::MatMul;
      sum.operands = flat;
      sum.attrs = attrs;
      sum.loc = mm->loc;
      sum.path = mm->path;
    }
    m.insertBefore(std::move(before));
  }

  FusionOptions options;
};

} // namespace

std::unique_ptr<Pass> planc::createFoldIntoMatMulPass(const FusionOptions &options) {
  return std::make_unique<FoldIntoMatMulPass>(options);
}
