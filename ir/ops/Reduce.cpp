//===- ir/ops/Reduce.cpp - reductions, sum_to and broadcast_to ------------===//
//
// reduce_sum / reduce_mean / reduce_max {dims: [i64], keepdim: bool}: dims may
// be negative (counted from the end); keepdim keeps them as size 1. An empty
// dims list reduces nothing.
// sum_to {shape} sums the dims that broadcasting stretched (the gradient of
// broadcasting); broadcast_to {shape} stretches them (its inverse).
//
//===----------------------------------------------------------------------===//

#include "ir/ops/DimRule.h"
#include "ir/ops/OpSupport.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace planc;
using namespace planc::ir;

namespace {

/// The normalised, sorted dims of a reduction; "" or the error.
std::string reducedDims(const AttrMap &attrs, size_t rank, std::vector<bool> &reduced, bool &keepdim) {
  AttrReader at(attrs);
  std::vector<int64_t> dims = at.getInts("dims");
  keepdim = at.getBool("keepdim", false);
  if (!at.ok()) return at.error;
  reduced.assign(rank, false);
  for (int64_t d : dims) {
    std::optional<int64_t> n = normalizeDim(d, rank);
    if (!n) return "dim " + std::to_string(d) + " is out of range for rank " + std::to_string(rank);
    if (reduced[*n]) return "dim " + std::to_string(d) + " is listed twice";
    reduced[*n] = true;
  }
  return "";
}

/// The shape with reduced dims kept as 1.
Shape keptShape(const Shape &s, const std::vector<bool> &reduced) {
  Shape k = s;
  for (size_t i = 0; i < s.size(); ++i)
    if (reduced[i]) k[i] = 1;
  return k;
}

Shape droppedShape(const Shape &s, const std::vector<bool> &reduced) {
  Shape k;
  for (size_t i = 0; i < s.size(); ++i)
    if (!reduced[i]) k.push_back(s[i]);
  return k;
}

std::string inferReduce(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  if (ops[0].dtype == DType::Bool) return "operand 0 must be numeric, got " + toString(ops[0]);
  std::vector<bool> reduced;
  bool keepdim;
  if (auto e = reducedDims(attrs, ops[0].rank(), reduced, keepdim); !e.empty()) return e;
  const Shape &s = ops[0].shape;
  res = {TensorType(keepdim ? keptShape(s, reduced) : droppedShape(s, reduced), ops[0].dtype)};
  return "";
}

std::string inferReduceMean(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  if (auto e = checkFloat(ops, 0); !e.empty()) return e;
  return inferReduce(ops, attrs, res);
}

enum class Reduction { Sum, Mean, Max };

template <Reduction R>
void evalReduce(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  const Tensor &x = *in[0];
  Tensor &y = out[0];
  std::vector<bool> reduced;
  bool keepdim;
  reducedDims(op.attrs, x.rank(), reduced, keepdim);
  // The result is laid out as the kept shape whether or not keepdim is set:
  // walk the input with the kept shape's strides, 0 along the reduced dims.
  std::vector<int64_t> outStrides = rowMajorStrides(keptShape(x.shape, reduced));
  for (size_t i = 0; i < reduced.size(); ++i)
    if (reduced[i]) outStrides[i] = 0;
  double init = R == Reduction::Max ? -std::numeric_limits<double>::infinity() : 0.0;
  std::fill(y.data.begin(), y.data.end(), init);
  IndexWalker w(x.shape, {outStrides});
  if (w.count() > 0) {
    size_t i = 0;
    do {
      double v = x.data[i++];
      double &acc = y.data[w.offset(0)];
      if (R == Reduction::Max)
        acc = (v > acc || std::isnan(v)) ? v : acc; // NaN wins, as torch.amax
      else
        acc += v;
    } while (w.next());
  }
  if (R == Reduction::Mean && !y.data.empty()) {
    double count = double(x.numel()) / double(y.numel());
    for (double &v : y.data) v /= count;
  }
}

/// dy brought to the operand's rank (reduced dims as 1), then broadcast to it.
Value *broadcastBack(Builder &b, Value *v, const Op &op) {
  const Shape &xs = op.operands[0]->type.shape;
  std::vector<bool> reduced;
  bool keepdim;
  reducedDims(op.attrs, xs.size(), reduced, keepdim);
  Value *kept = b.reshape(v, keptShape(xs, reduced));
  if (kept->type.shape == xs) return kept;
  return b.value(OpKind::BroadcastTo, {kept}, {{"shape", xs}});
}

void gradReduceSum(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0] && isFloat(op.operands[0]->type.dtype)) dx[0] = broadcastBack(b, d[0], op);
}

void gradReduceMean(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (!d[0]) return;
  double count = double(op.operands[0]->type.numel()) / double(op.results[0]->type.numel());
  dx[0] = b.scale(broadcastBack(b, d[0], op), 1.0 / count);
}

// The gradient goes to the maximal elements, split evenly among ties (as
// torch.amax). There is no comparison op, so the mask comes from relu_grad:
// with diff = max - x >= 0, relu_grad(diff, g) is g where x is below the
// maximum, and g - relu_grad(diff, g) is g where x attains it.
void gradReduceMax(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  Value *x = op.operands[0];
  if (!d[0] || !isFloat(x->type.dtype)) return;
  Value *diff = b.sub(broadcastBack(b, op.results[0], op), x);
  Value *dy = broadcastBack(b, d[0], op);
  Value *atMax = b.sub(dy, b.value(OpKind::ReluGrad, {diff, dy}));
  Value *ones = b.value(OpKind::Fill, {},
                        {{"value", 1.0}, {"shape", x->type.shape}, {"dtype", std::string(spelling(x->type.dtype))}});
  Value *isMax = b.sub(ones, b.value(OpKind::ReluGrad, {diff, ones}));
  AttrMap countAttrs = op.attrs;
  countAttrs["keepdim"] = true;
  Value *count = b.value(OpKind::ReduceSum, {isMax}, countAttrs);
  dx[0] = b.div(atMax, count);
}

double flopsReduce(const Op &op) { return operandNumel(op); }

//===----------------------------------------------------------------------===//
// sum_to, broadcast_to
//===----------------------------------------------------------------------===//

std::string inferSumTo(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  AttrReader at(attrs);
  Shape target = at.getInts("shape");
  if (!at.ok()) return at.error;
  if (!broadcastsTo(target, ops[0].shape))
    return "cannot sum " + toString(ops[0].shape) + " to " + toString(target) + ": " + toString(target) +
           " does not broadcast to it";
  res = {TensorType(target, ops[0].dtype)};
  return "";
}

void evalSumTo(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  const Tensor &x = *in[0];
  Tensor &y = out[0];
  IndexWalker w(x.shape, {broadcastStrides(y.shape, x.shape)});
  if (w.count() == 0) return;
  size_t i = 0;
  do y.data[w.offset(0)] += x.data[i++];
  while (w.next());
}

void gradSumTo(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0] && isFloat(op.operands[0]->type.dtype))
    dx[0] = b.value(OpKind::BroadcastTo, {d[0]}, {{"shape", op.operands[0]->type.shape}});
}

std::string inferBroadcastTo(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  AttrReader at(attrs);
  Shape target = at.getInts("shape");
  if (!at.ok()) return at.error;
  if (!broadcastsTo(ops[0].shape, target))
    return "cannot broadcast " + toString(ops[0].shape) + " to " + toString(target);
  res = {TensorType(target, ops[0].dtype)};
  return "";
}

void evalBroadcastTo(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in,
                     llvm::MutableArrayRef<Tensor> out) {
  const Tensor &x = *in[0];
  Tensor &y = out[0];
  IndexWalker w(y.shape, {broadcastStrides(x.shape, y.shape)});
  if (w.count() == 0) return;
  size_t i = 0;
  do y.data[i++] = x.data[w.offset(0)];
  while (w.next());
}

// Dims the operand lacks (on the left) or has as 1 read its one element:
// stride 0.
std::string gatherBroadcastTo(const AttrMap &, llvm::ArrayRef<Shape> operands, const Shape &result, Gather &g) {
  if (operands.size() != 1) return "takes one operand";
  const Shape &x = operands[0];
  const size_t rank = result.size();
  if (x.size() > rank) return "an operand of higher rank than the result";
  const std::vector<int64_t> own = rowMajorStrides(x);
  const size_t lead = rank - x.size();
  g.strides.assign(rank, 0);
  for (size_t d = lead; d < rank; ++d) g.strides[d] = x[d - lead] == 1 ? 0 : own[d - lead];
  return "";
}

void gradBroadcastTo(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0] && isFloat(op.operands[0]->type.dtype)) dx[0] = b.sumTo(d[0], op.operands[0]->type.shape);
}


/// The reduced dims are summed (max: whole, a max of maxes is not a sum).
std::optional<DimLabels> labelsReduce(const Op &op) {
  DimRule r(op);
  size_t k = r.rank0();
  std::vector<bool> reduced(k, false);
  std::vector<int64_t> dims = op.getInts("dims");
  for (int64_t d : dims)
    if (auto nd = normalizeDim(d, k)) reduced[size_t(*nd)] = true;
  bool keep = op.getBool("keepdim");
  std::vector<int> in, out;
  for (size_t d = 0; d < k; ++d) {
    if (!reduced[d]) {
      in.push_back(r.fresh());
      out.push_back(in.back());
      continue;
    }
    in.push_back(r.fresh(op.kind == OpKind::ReduceMax, op.kind != OpKind::ReduceMax));
    if (keep) out.push_back(DimLabels::kNone);
  }
  r.L.operands[0] = in;
  r.L.results[0] = out;
  r.L.linearIn[0] = op.kind == OpKind::ReduceSum;
  return r.L;
}

std::optional<DimLabels> labelsSumTo(const Op &op) {
  DimRule r(op);
  const Shape &out = op.results[0]->type.shape;
  size_t k = r.rank0(), R = out.size(), offset = k - R;
  std::vector<int> in(k), res(R, DimLabels::kNone);
  for (size_t d = 0; d < k; ++d) {
    bool kept = d >= offset && out[d - offset] == r.dimSize(0, d);
    in[d] = r.fresh(false, !kept);
    if (kept) res[d - offset] = in[d];
  }
  r.L.operands[0] = in;
  r.L.results[0] = res;
  r.L.linearIn[0] = true;
  return r.L;
}

std::optional<DimLabels> labelsBroadcastTo(const Op &op) {
  DimRule r(op);
  const Shape &out = op.results[0]->type.shape;
  std::vector<int> res = r.freshDims(out.size());
  r.L.operands[0] = r.aligned(0, res, out);
  r.L.results[0] = res;
  r.L.linearIn[0] = true;
  return r.L;
}

// The row kernel (ir/KernelDesc.h) of a reduction over trailing dims,
// which are contiguous rows: one stage, its value per row. Over other dims
// reduce_sum is a sum over broadcast dims (the code generator's sum_to
// kernel); the others have none.
template <Reduction R>
std::string rowsReduce(const AttrMap &attrs, llvm::ArrayRef<Shape> operands, const Shape &result, RowReduction &r) {
  if (auto e = rowsOfLastDim(operands, r); !e.empty()) return e;
  const Shape &x = operands[0];
  auto it = attrs.find("dims");
  if (it == attrs.end() || !std::holds_alternative<std::vector<int64_t>>(it->second)) return "no dims";
  std::vector<int64_t> dims = std::get<std::vector<int64_t>>(it->second);
  for (int64_t &d : dims)
    if (d < 0) d += int64_t(x.size());
  std::sort(dims.begin(), dims.end());
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != int64_t(x.size() - dims.size() + i)) return "a reduction over dims that are not the last ones";
  r.length = product(x, x.size() - dims.size());
  r.rows = r.length ? product(x) / r.length : 0;
  if (product(result) != r.rows) return "a result of another size than the rows";
  FormulaBuilder s;
  r.stages.push_back({R == Reduction::Max ? Combiner::Max : Combiner::Sum, s.done(s.input(0))});
  r.outputPerElement = false;
  FormulaBuilder b;
  int v = b.input(1);
  r.output = b.done(R == Reduction::Mean ? b.div(v, b.constant(double(r.length))) : v);
  return "";
}

// The sum over broadcast dims (ir/KernelDesc.h): sum_to's result aligned
// at the right, reduce_sum's operand with its dims made 1.
std::string sumDimsSumTo(const AttrMap &, const Shape &operand, const Shape &result, Shape &aligned) {
  if (result.size() > operand.size()) return "a result of higher rank than the operand";
  aligned.assign(operand.size() - result.size(), 1);
  aligned.insert(aligned.end(), result.begin(), result.end());
  return "";
}

std::string sumDimsReduceSum(const AttrMap &attrs, const Shape &operand, const Shape &result, Shape &aligned) {
  const size_t rank = operand.size();
  auto it = attrs.find("dims");
  if (it == attrs.end() || !std::holds_alternative<std::vector<int64_t>>(it->second)) return "no dims";
  aligned = operand;
  for (int64_t d : std::get<std::vector<int64_t>>(it->second)) {
    if (d < 0) d += int64_t(rank);
    if (d < 0 || d >= int64_t(rank)) return "a dim out of range";
    aligned[size_t(d)] = 1;
  }
  if (product(aligned) != product(result)) return "a result of another size";
  return "";
}

} // namespace

void ir::registerReduceOps(OpDef *t) {
  define(t, OpKind::ReduceSum, inferReduce, evalReduce<Reduction::Sum>, gradReduceSum, flopsReduce);
  define(t, OpKind::ReduceMean, inferReduceMean, evalReduce<Reduction::Mean>, gradReduceMean, flopsReduce);
  define(t, OpKind::ReduceMax, inferReduce, evalReduce<Reduction::Max>, gradReduceMax, flopsReduce);
  define(t, OpKind::SumTo, inferSumTo, evalSumTo, gradSumTo, flopsReduce);
  define(t, OpKind::BroadcastTo, inferBroadcastTo, evalBroadcastTo, gradBroadcastTo, noFlops);
  for (OpKind k : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax}) declare(t, k, 0, labelsReduce);
  declare(t, OpKind::SumTo, 0, labelsSumTo);
  declare(t, OpKind::BroadcastTo, 0, labelsBroadcastTo);
  entry(t, OpKind::SumTo).shapeAttr = "shape";
  entry(t, OpKind::BroadcastTo).shapeAttr = "shape";
  rowKernel(t, OpKind::ReduceSum, rowsReduce<Reduction::Sum>);
  rowKernel(t, OpKind::ReduceMean, rowsReduce<Reduction::Mean>);
  rowKernel(t, OpKind::ReduceMax, rowsReduce<Reduction::Max>);
  kernel(t, OpKind::SumTo, KernelClass::Reduction); // a sum over broadcast dims, not rows
  entry(t, OpKind::SumTo).kernel.sumDims = sumDimsSumTo;
  entry(t, OpKind::ReduceSum).kernel.sumDims = sumDimsReduceSum;
  gatherKernel(t, OpKind::BroadcastTo, gatherBroadcastTo);
}
