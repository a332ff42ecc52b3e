//===- ir/ops/Shape.cpp - data movement -----------------------------------===//
//
// reshape {shape} (one entry may be -1: inferred), transpose {perm},
// slice {dim, start, end} (0 <= start <= end <= size), pad {dim, before,
// after} (zeros; the gradient of slice), concat {dim} (variadic),
// cast {dtype}, repeat_interleave {repeats, dim} (each element `repeats`
// times in a row, as torch.repeat_interleave), fill {value, shape, dtype}.
// Dims may be negative (counted from the end). None of these computes, so
// their FLOP count is 0.
//
//===----------------------------------------------------------------------===//

#include "ir/ops/DimRule.h"
#include "ir/ops/OpSupport.h"
#include "support/Plural.h"

#include <algorithm>

using namespace planc;
using namespace planc::ir;

namespace {

/// A dim attribute normalised for `rank`; "" or the error.
std::string dimAttr(AttrReader &at, const char *name, size_t rank, int64_t &dim) {
  int64_t d = at.getInt(name);
  if (!at.ok()) return at.error;
  std::optional<int64_t> n = normalizeDim(d, rank);
  if (!n) return "dim " + std::to_string(d) + " is out of range for rank " + std::to_string(rank);
  dim = *n;
  return "";
}

/// The blocks along `dim`: `outer` blocks of `size` x `inner` elements.
struct Blocks {
  int64_t outer, size, inner;
};
Blocks blocksOf(const Shape &s, int64_t dim) { return {product(s, 0, dim), s[dim], product(s, dim + 1)}; }

//===----------------------------------------------------------------------===//
// reshape
//===----------------------------------------------------------------------===//

std::string inferReshape(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  AttrReader at(attrs);
  Shape shape = at.getInts("shape");
  if (!at.ok()) return at.error;
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && inferred < 0) {
      inferred = int64_t(i);
      continue;
    }
    if (shape[i] < 0) return "cannot reshape to " + toString(shape);
    // Shapes may come from untrusted IR text: overflow is an error, not a wrap.
    if (__builtin_mul_overflow(known, shape[i], &known)) return "reshape to " + toString(shape) + " overflows";
  }
  int64_t n = ops[0].numel();
  if (inferred >= 0) {
    if (known == 0 || n % known) return "cannot reshape " + toString(ops[0].shape) + " to " + toString(shape);
    shape[inferred] = n / known;
  } else if (known != n) {
    return "cannot reshape " + toString(ops[0].shape) + " (" + counted(n, "element") + ") to " + toString(shape) +
           " (" + counted(known, "element") + ")";
  }
  res = {TensorType(shape, ops[0].dtype)};
  return "";
}

// Row-major order is unchanged, so a reshape copies.
void evalCopy(EvalContext &, const Op &, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  out[0].data = in[0]->data;
}

void gradReshape(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0] && isFloat(op.operands[0]->type.dtype)) dx[0] = b.reshape(d[0], op.operands[0]->type.shape);
}

// The same elements in the same order: the identity gather.
std::string gatherReshape(const AttrMap &, llvm::ArrayRef<Shape> operands, const Shape &result, Gather &g) {
  if (operands.size() != 1) return "takes one operand";
  g.strides = rowMajorStrides(result);
  return "";
}

//===----------------------------------------------------------------------===//
// transpose
//===----------------------------------------------------------------------===//

/// The normalised permutation; "" or the error.
std::string permOf(const AttrMap &attrs, size_t rank, std::vector<int64_t> &perm) {
  AttrReader at(attrs);
  perm = at.getInts("perm");
  if (!at.ok()) return at.error;
  if (perm.size() != rank)
    return "perm has " + counted(int64_t(perm.size()), "entry") + " for an operand of rank " + std::to_string(rank);
  std::vector<bool> seen(rank, false);
  for (int64_t &p : perm) {
    std::optional<int64_t> n = normalizeDim(p, rank);
    if (!n || seen[*n]) return "perm is not a permutation of the operand's dims";
    seen[*n] = true;
    p = *n;
  }
  return "";
}

std::string inferTranspose(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  std::vector<int64_t> perm;
  if (auto e = permOf(attrs, ops[0].rank(), perm); !e.empty()) return e;
  Shape shape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) shape[i] = ops[0].shape[perm[i]];
  res = {TensorType(shape, ops[0].dtype)};
  return "";
}

// Result dim i is operand dim perm[i]: walk the result reading with the
// operand's stride of dim perm[i].
void evalTranspose(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  std::vector<int64_t> perm;
  permOf(op.attrs, in[0]->rank(), perm);
  std::vector<int64_t> own = in[0]->strides(), strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) strides[i] = own[perm[i]];
  IndexWalker w(out[0].shape, {strides});
  if (w.count() == 0) return;
  size_t i = 0;
  do out[0].data[i++] = in[0]->data[w.offset(0)];
  while (w.next());
}

void gradTranspose(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (!d[0] || !isFloat(op.operands[0]->type.dtype)) return;
  std::vector<int64_t> perm, inverse;
  permOf(op.attrs, op.operands[0]->type.rank(), perm);
  inverse.resize(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = int64_t(i);
  dx[0] = b.value(OpKind::Transpose, {d[0]}, {{"perm", inverse}});
}

// Result dim i reads with the operand's stride of dim perm[i], as evalTranspose.
std::string gatherTranspose(const AttrMap &attrs, llvm::ArrayRef<Shape> operands, const Shape &result, Gather &g) {
  if (operands.size() != 1) return "takes one operand";
  if (operands[0].size() != result.size()) return "a result of another rank";
  std::vector<int64_t> perm;
  if (auto e = permOf(attrs, result.size(), perm); !e.empty()) return e;
  const std::vector<int64_t> own = rowMajorStrides(operands[0]);
  for (int64_t p : perm) g.strides.push_back(own[size_t(p)]);
  return "";
}

//===----------------------------------------------------------------------===//
// slice, pad
//===----------------------------------------------------------------------===//

std::string inferSlice(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  AttrReader at(attrs);
  int64_t dim;
  if (auto e = dimAttr(at, "dim", ops[0].rank(), dim); !e.empty()) return e;
  int64_t start = at.getInt("start"), end = at.getInt("end");
  if (!at.ok()) return at.error;
  int64_t size = ops[0].shape[dim];
  if (start < 0 || start > end || end > size)
    return "slice [" + std::to_string(start) + ", " + std::to_string(end) + ") is not within [0, " +
           std::to_string(size) + ") of dim " + std::to_string(dim);
  Shape shape = ops[0].shape;
  shape[dim] = end - start;
  res = {TensorType(shape, ops[0].dtype)};
  return "";
}

void evalSlice(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  AttrReader at(op.attrs);
  int64_t dim = *normalizeDim(at.getInt("dim"), in[0]->rank());
  int64_t start = at.getInt("start");
  Blocks src = blocksOf(in[0]->shape, dim), dst = blocksOf(out[0].shape, dim);
  for (int64_t o = 0; o < src.outer; ++o)
    std::copy_n(in[0]->data.begin() + (o * src.size + start) * src.inner, dst.size * dst.inner,
                out[0].data.begin() + o * dst.size * dst.inner);
}

void gradSlice(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (!d[0] || !isFloat(op.operands[0]->type.dtype)) return;
  AttrReader at(op.attrs);
  int64_t dim = *normalizeDim(at.getInt("dim"), op.operands[0]->type.rank());
  int64_t start = at.getInt("start"), end = at.getInt("end");
  dx[0] =
      b.value(OpKind::Pad, {d[0]}, {{"dim", dim}, {"before", start}, {"after", op.operands[0]->type.shape[dim] - end}});
}

std::string inferPad(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  AttrReader at(attrs);
  int64_t dim;
  if (auto e = dimAttr(at, "dim", ops[0].rank(), dim); !e.empty()) return e;
  int64_t before = at.getInt("before"), after = at.getInt("after");
  if (!at.ok()) return at.error;
  if (before < 0 || after < 0) return "pad amounts must be non-negative";
  Shape shape = ops[0].shape;
  shape[dim] += before + after;
  res = {TensorType(shape, ops[0].dtype)};
  return "";
}

void evalPad(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  AttrReader at(op.attrs);
  int64_t dim = *normalizeDim(at.getInt("dim"), in[0]->rank());
  int64_t before = at.getInt("before");
  Blocks src = blocksOf(in[0]->shape, dim), dst = blocksOf(out[0].shape, dim);
  for (int64_t o = 0; o < src.outer; ++o) // the result starts as zeros
    std::copy_n(in[0]->data.begin() + o * src.size * src.inner, src.size * src.inner,
                out[0].data.begin() + (o * dst.size + before) * dst.inner);
}

void gradPad(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (!d[0] || !isFloat(op.operands[0]->type.dtype)) return;
  AttrReader at(op.attrs);
  int64_t dim = *normalizeDim(at.getInt("dim"), op.operands[0]->type.rank());
  int64_t before = at.getInt("before");
  dx[0] = b.value(OpKind::Slice, {d[0]},
                  {{"dim", dim}, {"start", before}, {"end", before + op.operands[0]->type.shape[dim]}});
}

/// The operand's dim `dim` of a slice or pad (normalised) and its row-major
/// strides, which the gather reads with; "" or why there is no gather.
std::string gatherAlongDim(AttrReader &at, llvm::ArrayRef<Shape> operands, const Shape &result, int64_t &dim,
                           Gather &g) {
  if (operands.size() != 1) return "takes one operand";
  if (operands[0].size() != result.size()) return "a result of another rank";
  if (auto e = dimAttr(at, "dim", result.size(), dim); !e.empty()) return e;
  g.strides = rowMajorStrides(operands[0]);
  return "";
}

// A slice reads the operand from its element `start` along `dim` on.
std::string gatherSlice(const AttrMap &attrs, llvm::ArrayRef<Shape> operands, const Shape &result, Gather &g) {
  AttrReader at(attrs);
  int64_t dim;
  if (auto e = gatherAlongDim(at, operands, result, dim, g); !e.empty()) return e;
  g.base = at.getInt("start") * g.strides[size_t(dim)];
  return at.error;
}

// A pad reads the operand inside the window [before, before + size) of
// `dim`, shifted back by `before`, and is zeros outside it.
std::string gatherPad(const AttrMap &attrs, llvm::ArrayRef<Shape> operands, const Shape &result, Gather &g) {
  AttrReader at(attrs);
  int64_t dim;
  if (auto e = gatherAlongDim(at, operands, result, dim, g); !e.empty()) return e;
  const int64_t before = at.getInt("before");
  g.window = int(dim);
  g.lo = before;
  g.hi = before + operands[0][size_t(dim)];
  g.base = -before * g.strides[size_t(dim)];
  g.fill = 0;
  return at.error;
}

//===----------------------------------------------------------------------===//
// concat
//===----------------------------------------------------------------------===//

std::string inferConcat(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (ops.empty()) return "expects at least one operand";
  AttrReader at(attrs);
  int64_t dim;
  if (auto e = dimAttr(at, "dim", ops[0].rank(), dim); !e.empty()) return e;
  Shape shape = ops[0].shape;
  for (size_t i = 1; i < ops.size(); ++i) {
    if (auto e = checkSameDType(ops, 0, i); !e.empty()) return e;
    Shape a = ops[0].shape, b = ops[i].shape;
    if (a.size() == b.size()) a[dim] = b[dim] = 0;
    if (a != b)
      return "operand " + std::to_string(i) + " " + toString(ops[i].shape) + " does not match " +
             toString(ops[0].shape) + " outside dim " + std::to_string(dim);
    shape[dim] += ops[i].shape[dim];
  }
  res = {TensorType(shape, ops[0].dtype)};
  return "";
}

void evalConcat(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  int64_t dim = *normalizeDim(AttrReader(op.attrs).getInt("dim"), in[0]->rank());
  Blocks dst = blocksOf(out[0].shape, dim);
  int64_t offset = 0; // along dim
  for (const Tensor *t : in) {
    Blocks src = blocksOf(t->shape, dim);
    for (int64_t o = 0; o < src.outer; ++o)
      std::copy_n(t->data.begin() + o * src.size * src.inner, src.size * src.inner,
                  out[0].data.begin() + (o * dst.size + offset) * dst.inner);
    offset += src.size;
  }
}

void gradConcat(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(op.operands.size(), nullptr);
  if (!d[0] || !isFloat(op.operands[0]->type.dtype)) return;
  int64_t dim = *normalizeDim(AttrReader(op.attrs).getInt("dim"), op.operands[0]->type.rank());
  int64_t offset = 0;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    int64_t size = op.operands[i]->type.shape[dim];
    dx[i] = b.value(OpKind::Slice, {d[0]}, {{"dim", dim}, {"start", offset}, {"end", offset + size}});
    offset += size;
  }
}

//===----------------------------------------------------------------------===//
// cast
//===----------------------------------------------------------------------===//

std::string inferCast(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  AttrReader at(attrs);
  DType to = at.getDType("dtype");
  if (!at.ok()) return at.error;
  res = {TensorType(ops[0].shape, to)};
  return "";
}

// The interpreter rounds the copy to the result's dtype: that is the cast.
// Between floating types the gradient is cast back; to or from an integer
// type there is none.
void gradCast(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  DType from = op.operands[0]->type.dtype;
  if (!d[0] || !isFloat(from) || !isFloat(op.results[0]->type.dtype)) return;
  dx[0] = d[0]->type.dtype == from ? d[0] : b.value(OpKind::Cast, {d[0]}, {{"dtype", std::string(spelling(from))}});
}

//===----------------------------------------------------------------------===//
// repeat_interleave
//===----------------------------------------------------------------------===//

std::string inferRepeatInterleave(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  AttrReader at(attrs);
  int64_t dim;
  if (auto e = dimAttr(at, "dim", ops[0].rank(), dim); !e.empty()) return e;
  int64_t repeats = at.getInt("repeats");
  if (!at.ok()) return at.error;
  if (repeats < 1) return "repeats must be at least 1, got " + std::to_string(repeats);
  Shape shape = ops[0].shape;
  if (__builtin_mul_overflow(shape[dim], repeats, &shape[dim])) return "repeat_interleave overflows dimension " + std::to_string(dim);
  res = {TensorType(shape, ops[0].dtype)};
  return "";
}

void evalRepeatInterleave(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in,
                          llvm::MutableArrayRef<Tensor> out) {
  AttrReader at(op.attrs);
  int64_t dim = *normalizeDim(at.getInt("dim"), in[0]->rank());
  int64_t repeats = at.getInt("repeats");
  Blocks src = blocksOf(in[0]->shape, dim);
  auto dst = out[0].data.begin();
  for (int64_t o = 0; o < src.outer; ++o)
    for (int64_t k = 0; k < src.size; ++k)
      for (int64_t r = 0; r < repeats; ++r)
        dst = std::copy_n(in[0]->data.begin() + (o * src.size + k) * src.inner, src.inner, dst);
}

// Result dim `dim` is (size, repeats) flattened: view it so, sum the repeats.
void gradRepeatInterleave(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (!d[0] || !isFloat(op.operands[0]->type.dtype)) return;
  AttrReader at(op.attrs);
  const Shape &xs = op.operands[0]->type.shape;
  int64_t dim = *normalizeDim(at.getInt("dim"), xs.size());
  Shape split = xs;
  split.insert(split.begin() + dim + 1, at.getInt("repeats"));
  Value *grouped = b.reshape(d[0], split);
  dx[0] = b.value(OpKind::ReduceSum, {grouped}, {{"dims", std::vector<int64_t>{dim + 1}}, {"keepdim", false}});
}

//===----------------------------------------------------------------------===//
// fill
//===----------------------------------------------------------------------===//

std::string inferFill(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 0); !e.empty()) return e;
  AttrReader at(attrs);
  at.getFloat("value");
  Shape shape = at.getInts("shape");
  DType dtype = at.getDType("dtype");
  if (!at.ok()) return at.error;
  for (int64_t d : shape)
    if (d < 0) return "shape " + toString(shape) + " has a negative dim";
  res = {TensorType(shape, dtype)};
  return "";
}

void evalFill(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *>, llvm::MutableArrayRef<Tensor> out) {
  std::fill(out[0].data.begin(), out[0].data.end(), AttrReader(op.attrs).getFloat("value"));
}

// Fill reads nothing: every element is its value.
std::string gatherFill(const AttrMap &attrs, llvm::ArrayRef<Shape>, const Shape &, Gather &g) {
  AttrReader at(attrs);
  g.readsOperand = false;
  g.fill = at.getFloat("value", 0.0);
  return at.error;
}


std::optional<DimLabels> labelsTranspose(const Op &op) {
  DimRule r(op);
  std::vector<int> in = r.freshDims(r.rank0());
  std::vector<int64_t> perm = op.getInts("perm");
  if (perm.size() != in.size()) return std::nullopt;
  std::vector<int> res;
  for (int64_t p : perm) res.push_back(in[size_t(p)]);
  r.L.operands[0] = in;
  r.L.results[0] = res;
  r.L.linearIn[0] = true;
  return r.L;
}

/// Slice, pad and repeat_interleave keep every dim. A repeat keeps blocks
/// aligned (a rank's kv heads repeat into its query heads), so only slice
/// and pad need their dim whole.
std::optional<DimLabels> labelsAlongDim(const Op &op) {
  DimRule r(op);
  std::vector<int> dims = r.freshDims(r.rank0());
  auto d = dimAttr(op, "dim", r.rank0());
  if (!d) return std::nullopt;
  if (op.kind != OpKind::RepeatInterleave) r.makeWhole(dims[size_t(*d)]);
  r.L.operands[0] = r.L.results[0] = dims;
  r.L.linearIn[0] = true;
  return r.L;
}

std::optional<DimLabels> labelsConcat(const Op &op) {
  DimRule r(op);
  std::vector<int> dims = r.freshDims(op.results[0]->type.rank());
  auto d = dimAttr(op, "dim", dims.size());
  if (!d) return std::nullopt;
  r.makeWhole(dims[size_t(*d)]);
  for (auto &o : r.L.operands) o = dims;
  r.L.results[0] = dims;
  r.L.jointlyLinear = true;
  return r.L;
}

std::optional<DimLabels> labelsCast(const Op &op) {
  DimLabels L = DimRule(op).elementwise();
  L.linearIn[0] = true;
  // A partial sum is reduced before a cast that widens it: the collective
  // then moves the narrow bytes (bf16 gradients are reduced in bf16 before
  // the optimizer widens them, as DeepSpeed does). A gradient widened into
  // its f32 accumulator (`main_grad`, Megatron-LM's fp32 main gradients)
  // stays partial through the cast: it is reduced in f32, after it.
  if (op.operands.size() == 1 && !op.results.empty() && !op.getBool("main_grad") &&
      byteSize(op.results[0]->type.dtype) > byteSize(op.operands[0]->type.dtype))
    L.linearIn[0] = false;
  return L;
}

std::optional<DimLabels> labelsFill(const Op &op) {
  DimRule r(op);
  r.L.results[0] = r.freshDims(op.results[0]->type.rank());
  return r.L;
}

} // namespace

void ir::registerShapeOps(OpDef *t) {
  define(t, OpKind::Reshape, inferReshape, evalCopy, gradReshape, noFlops);
  define(t, OpKind::Transpose, inferTranspose, evalTranspose, gradTranspose, noFlops);
  define(t, OpKind::Slice, inferSlice, evalSlice, gradSlice, noFlops);
  define(t, OpKind::Pad, inferPad, evalPad, gradPad, noFlops);
  define(t, OpKind::Concat, inferConcat, evalConcat, gradConcat, noFlops);
  define(t, OpKind::Cast, inferCast, evalCopy, gradCast, noFlops);
  define(t, OpKind::RepeatInterleave, inferRepeatInterleave, evalRepeatInterleave, gradRepeatInterleave, noFlops);
  define(t, OpKind::Fill, inferFill, evalFill, nullptr, noFlops);
  // Reshape merges and splits dims: no einsum labels; the partitioner moves
  // a split with the major dim of a merged or split group.
  declare(t, OpKind::Reshape, kView, nullptr);
  declare(t, OpKind::Transpose, kKeepsPaddingZero, labelsTranspose);
  for (OpKind k : {OpKind::Slice, OpKind::Pad, OpKind::RepeatInterleave}) declare(t, k, 0, labelsAlongDim);
  declare(t, OpKind::Concat, 0, labelsConcat);
  declare(t, OpKind::Cast, kElementwise | kKeepsPaddingZero, labelsCast);
  declare(t, OpKind::Fill, 0, labelsFill);
  entry(t, OpKind::Reshape).shapeAttr = "shape";
  entry(t, OpKind::Fill).shapeAttr = "shape";
  gatherKernel(t, OpKind::Reshape, gatherReshape);
  gatherKernel(t, OpKind::Transpose, gatherTranspose);
  gatherKernel(t, OpKind::Slice, gatherSlice);
  gatherKernel(t, OpKind::Pad, gatherPad);
  gatherKernel(t, OpKind::Fill, gatherFill);
  kernel(t, OpKind::Concat, KernelClass::Library, {"copy_blocks", /*repeats*/ false});
  kernel(t, OpKind::RepeatInterleave, KernelClass::Library, {"copy_blocks", /*repeats*/ true});
  conversionKernel(t, OpKind::Cast); // a rounding load and store, no formula
}
