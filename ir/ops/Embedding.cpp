//===- ir/ops/Embedding.cpp - gather and scatter_add ----------------------===//
//
// gather(table [V, ...], indices [...]) -> [..., ...]: row indices[i] of the
// table for every index (the embedding lookup). scatter_add(indices [...],
// dy [..., ...]) {rows: V} -> [V, ...]: the rows of dy summed into the rows
// the indices name (the gradient of gather). Indices have an integer dtype;
// one out of [0, V) is a run-time error of the interpreter.
//
// Vocab-parallel (Megatron's VocabParallelEmbedding): when the table is split
// along its rows, a rank holds rows [offset, offset + V/n) and its gather
// gives zeros for the indices outside them, so the ranks' results are the
// addends of a partial sum over the table's axes; scatter_add with a result
// split along its rows keeps only the rows the rank holds.
//
//===----------------------------------------------------------------------===//

#include "ir/ops/DimRule.h"
#include "ir/ops/OpSupport.h"

using namespace planc;
using namespace planc::ir;

namespace {

std::string checkIndices(const TensorType &t, size_t operand) {
  if (isInteger(t.dtype)) return "";
  return "operand " + std::to_string(operand) + " (indices) must have an integer dtype, got " + toString(t);
}

std::string inferGather(llvm::ArrayRef<TensorType> ops, const AttrMap &, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 2); !e.empty()) return e;
  if (ops[0].rank() < 1) return "operand 0 (table) must have rank 1 or more, got " + toString(ops[0]);
  if (auto e = checkIndices(ops[1], 1); !e.empty()) return e;
  Shape shape = ops[1].shape;
  shape.insert(shape.end(), ops[0].shape.begin() + 1, ops[0].shape.end());
  res = {TensorType(shape, ops[0].dtype)};
  return "";
}

/// The row an index names, or -1 (and the context's error) when out of range.
int64_t rowOf(EvalContext &ctx, double index, int64_t rows) {
  int64_t row = int64_t(index);
  if (row >= 0 && row < rows) return row;
  ctx.fail("index " + std::to_string(row) + " is out of range [0, " + std::to_string(rows) + ")");
  return -1;
}

void evalGather(EvalContext &ctx, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  const Tensor &table = *in[0], &indices = *in[1];
  const TensorType &global = op.operands[0]->type;
  int64_t rows = table.shape[0], width = product(table.shape, 1);
  int64_t first = ctx.blockOffset(global, 0);
  std::fill(out[0].data.begin(), out[0].data.end(), 0.0);
  for (int64_t i = 0; i < indices.numel(); ++i) {
    int64_t row = rowOf(ctx, indices.data[i], global.shape[0]);
    if (row < 0) return;
    if (row < first || row >= first + rows) continue; // another rank's row
    std::copy_n(table.data.begin() + (row - first) * width, width, out[0].data.begin() + i * width);
  }
}

void gradGather(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(2, nullptr);
  if (!d[0] || !isFloat(op.operands[0]->type.dtype)) return;
  dx[0] = b.value(OpKind::ScatterAdd, {op.operands[1], d[0]}, {{"rows", op.operands[0]->type.shape[0]}});
}

std::string inferScatterAdd(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 2); !e.empty()) return e;
  if (auto e = checkIndices(ops[0], 0); !e.empty()) return e;
  AttrReader at(attrs);
  int64_t rows = at.getInt("rows");
  if (!at.ok()) return at.error;
  if (rows < 0) return "rows must be non-negative";
  const Shape &is = ops[0].shape, &ds = ops[1].shape;
  if (ds.size() < is.size() || !std::equal(is.begin(), is.end(), ds.begin()))
    return "operand 1 " + toString(ds) + " must start with the indices' shape " + toString(is);
  Shape shape{rows};
  shape.insert(shape.end(), ds.begin() + is.size(), ds.end());
  res = {TensorType(shape, ops[1].dtype)};
  return "";
}

void evalScatterAdd(EvalContext &ctx, const Op &op, llvm::ArrayRef<const Tensor *> in,
                    llvm::MutableArrayRef<Tensor> out) {
  const Tensor &indices = *in[0], &dy = *in[1];
  Tensor &table = out[0];
  const TensorType &global = op.results[0]->type;
  int64_t rows = table.shape[0], width = product(table.shape, 1);
  int64_t first = ctx.blockOffset(global, 0);
  std::fill(table.data.begin(), table.data.end(), 0.0);
  for (int64_t i = 0; i < indices.numel(); ++i) {
    int64_t row = rowOf(ctx, indices.data[i], global.shape[0]);
    if (row < 0) return;
    if (row < first || row >= first + rows) continue;
    for (int64_t k = 0; k < width; ++k) table.data[(row - first) * width + k] += dy.data[i * width + k];
  }
}

void gradScatterAdd(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(2, nullptr);
  if (d[0] && isFloat(op.operands[1]->type.dtype)) dx[1] = b.value(OpKind::Gather, {d[0], op.operands[0]});
}

double flopsScatterAdd(const Op &op) { return double(op.operands[1]->type.numel()); }


/// (table [V, rest...], indices [...]) -> [..., rest...]
std::optional<DimLabels> labelsGather(const Op &op) {
  DimRule r(op);
  std::vector<int> table = r.freshDims(r.rankOf(0)), idx = r.freshDims(r.rankOf(1));
  r.L.summed[size_t(table[0])] = true; // a vocab-split table: each rank adds its rows
  std::vector<int> res = idx;
  res.insert(res.end(), table.begin() + 1, table.end());
  r.L.operands = {table, idx};
  r.L.results[0] = res;
  r.L.linearIn[0] = true;
  return r.L;
}

/// (indices [...], dy [..., rest...]) -> [rows, rest...]
std::optional<DimLabels> labelsScatterAdd(const Op &op) {
  DimRule r(op);
  size_t ki = r.rankOf(0), kd = r.rankOf(1);
  std::vector<int> dy;
  for (size_t d = 0; d < kd; ++d) dy.push_back(r.fresh(false, d < ki));
  std::vector<int> res{r.fresh()};
  res.insert(res.end(), dy.begin() + long(ki), dy.end());
  r.L.operands = {std::vector<int>(dy.begin(), dy.begin() + long(ki)), dy};
  r.L.results[0] = res;
  r.L.linearIn[1] = true;
  return r.L;
}

} // namespace

void ir::registerEmbeddingOps(OpDef *t) {
  define(t, OpKind::Gather, inferGather, evalGather, gradGather, noFlops);
  define(t, OpKind::ScatterAdd, inferScatterAdd, evalScatterAdd, gradScatterAdd, flopsScatterAdd);
  declare(t, OpKind::Gather, 0, labelsGather);
  declare(t, OpKind::ScatterAdd, 0, labelsScatterAdd);
  entry(t, OpKind::ScatterAdd).rowsAttr = "rows";
  kernel(t, OpKind::Gather, KernelClass::Library, {"gather"});
  kernel(t, OpKind::ScatterAdd, KernelClass::Library, {"scatter_add"});
}
