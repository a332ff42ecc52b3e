//===- ir/ops/Attention.cpp - softmax, masks, rotary positions, dropout ---===//
//
// softmax / log_softmax {dim}: along one dim (negative counts from the end).
// softmax_grad(y, dy) {dim}: dx = y (dy - sum(dy y)), from the result y.
// causal_mask(x): -inf where column > row in the last two dims (top-left
// aligned, as torch's is_causal); causal_mask_grad(dy) zeroes the same places.
// rope(x [b, s, n, d]) {theta = 10000, inverse = false}: rotary position
// embedding (Su et al. 2021) in the half-split layout of GPT-NeoX and Hugging
// Face Llama: element i < d/2 pairs with i + d/2, rotated by the angle
// s * theta^(-2i/d), s the position along dim 1. `inverse` rotates back; as
// the rotation is orthogonal, that is also its gradient.
// dropout {p, seed, stream}: keeps x / (1 - p) where the Philox uniform of
// element i is >= p, else 0. The key is seed * 2^32 + stream, the counter the
// element's row-major index in the value, so every rank and every
// recomputation draws the same mask, and the gradient (dropout with the same
// attributes) applies it again.
//
//===----------------------------------------------------------------------===//

#include "ir/ops/DimRule.h"
#include "ir/ops/OpSupport.h"
#include "numerics/Philox.h"

#include <cmath>
#include <limits>

using namespace planc;
using namespace planc::ir;

namespace {

//===----------------------------------------------------------------------===//
// softmax, log_softmax, softmax_grad
//===----------------------------------------------------------------------===//

/// The dim of a softmax-like op whose operand has `rank`; "" or the error.
std::string softmaxDim(const AttrMap &attrs, size_t rank, int64_t &dim) {
  AttrReader at(attrs);
  int64_t d = at.getInt("dim");
  if (!at.ok()) return at.error;
  std::optional<int64_t> n = normalizeDim(d, rank);
  if (!n) return "dim " + std::to_string(d) + " is out of range for rank " + std::to_string(rank);
  dim = *n;
  return "";
}

std::string inferSoftmax(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  if (auto e = checkFloat(ops, 0); !e.empty()) return e;
  int64_t dim;
  if (auto e = softmaxDim(attrs, ops[0].rank(), dim); !e.empty()) return e;
  res = {TensorType(ops[0].shape, ops[0].dtype)};
  return "";
}

std::string inferSoftmaxGrad(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 2); !e.empty()) return e;
  if (auto e = checkFloat(ops, 0); !e.empty()) return e;
  if (auto e = checkSameDType(ops, 0, 1); !e.empty()) return e;
  if (ops[0].shape != ops[1].shape)
    return "operand shapes " + toString(ops[0].shape) + " and " + toString(ops[1].shape) + " differ";
  int64_t dim;
  if (auto e = softmaxDim(attrs, ops[0].rank(), dim); !e.empty()) return e;
  res = {TensorType(ops[0].shape, ops[0].dtype)};
  return "";
}

/// The rows of a tensor along `dim`: `outer` x `inner` rows of `n` elements
/// each, element k of row (o, i) at o * n * inner + k * inner + i.
struct Rows {
  int64_t outer, n, inner;
  int64_t at(int64_t o, int64_t i, int64_t k) const { return (o * n + k) * inner + i; }
};

Rows rowsOf(const Tensor &t, const Op &op) {
  int64_t dim;
  softmaxDim(op.attrs, t.rank(), dim);
  return {product(t.shape, 0, dim), t.shape[dim], product(t.shape, dim + 1)};
}

template <bool Log>
void evalSoftmax(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  const std::vector<double> &x = in[0]->data;
  std::vector<double> &y = out[0].data;
  Rows r = rowsOf(*in[0], op);
  for (int64_t o = 0; o < r.outer; ++o)
    for (int64_t i = 0; i < r.inner; ++i) {
      // Shifted by the row maximum so exp never overflows.
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < r.n; ++k) mx = std::max(mx, x[r.at(o, i, k)]);
      double sum = 0;
      for (int64_t k = 0; k < r.n; ++k) sum += std::exp(x[r.at(o, i, k)] - mx);
      for (int64_t k = 0; k < r.n; ++k) {
        double z = x[r.at(o, i, k)] - mx;
        y[r.at(o, i, k)] = Log ? z - std::log(sum) : std::exp(z) / sum;
      }
    }
}

void evalSoftmaxGrad(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in,
                     llvm::MutableArrayRef<Tensor> out) {
  const std::vector<double> &y = in[0]->data, &dy = in[1]->data;
  std::vector<double> &dx = out[0].data;
  Rows r = rowsOf(*in[0], op);
  for (int64_t o = 0; o < r.outer; ++o)
    for (int64_t i = 0; i < r.inner; ++i) {
      double dot = 0;
      for (int64_t k = 0; k < r.n; ++k) dot += dy[r.at(o, i, k)] * y[r.at(o, i, k)];
      for (int64_t k = 0; k < r.n; ++k) dx[r.at(o, i, k)] = y[r.at(o, i, k)] * (dy[r.at(o, i, k)] - dot);
    }
}

AttrMap dimOf(const Op &op) { return {{"dim", AttrReader(op.attrs).getInt("dim")}}; }

void gradSoftmax(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0]) dx[0] = b.value(OpKind::SoftmaxGrad, {op.results[0], d[0]}, dimOf(op));
}

// y = x - logsumexp(x): dx = dy - softmax(x) sum(dy) = dy - exp(y) sum(dy).
void gradLogSoftmax(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (!d[0]) return;
  Value *sum = b.value(OpKind::ReduceSum, {d[0]},
                       {{"dims", std::vector<int64_t>{AttrReader(op.attrs).getInt("dim")}}, {"keepdim", true}});
  dx[0] = b.sub(d[0], b.mul(b.value(OpKind::Exp, {op.results[0]}), sum));
}

// max, subtract, exp, sum, divide.
double flopsSoftmax(const Op &op) { return 5 * resultNumel(op); }
double flopsSoftmaxGrad(const Op &op) { return 4 * resultNumel(op); }

//===----------------------------------------------------------------------===//
// causal_mask, causal_mask_grad
//===----------------------------------------------------------------------===//

std::string inferCausalMask(llvm::ArrayRef<TensorType> ops, const AttrMap &, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  if (auto e = checkFloat(ops, 0); !e.empty()) return e;
  if (ops[0].rank() < 2) return "operand 0 must have rank 2 or more, got " + toString(ops[0]);
  res = {TensorType(ops[0].shape, ops[0].dtype)};
  return "";
}

/// Copies x, writing `fill` where column > row of the last two dims.
void maskAboveDiagonal(const Tensor &x, Tensor &y, double fill) {
  int64_t rows = x.shape[x.rank() - 2], cols = x.shape.back();
  int64_t matrices = rows * cols != 0 ? x.numel() / (rows * cols) : 0;
  for (int64_t m = 0; m < matrices; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        int64_t at = (m * rows + i) * cols + j;
        y.data[at] = j > i ? fill : x.data[at];
      }
}

void evalCausalMask(EvalContext &, const Op &, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  maskAboveDiagonal(*in[0], out[0], -std::numeric_limits<double>::infinity());
}

void evalMaskGrad(EvalContext &, const Op &, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  maskAboveDiagonal(*in[0], out[0], 0.0);
}

// The masked places do not depend on x; the others pass dy through.
// causal_mask_grad is linear and its own gradient.
void gradCausalMask(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0]) dx[0] = b.value(OpKind::MaskGrad, {d[0]});
}

//===----------------------------------------------------------------------===//
// rope
//===----------------------------------------------------------------------===//

constexpr double kDefaultTheta = 10000.0;

std::string inferRope(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  if (auto e = checkFloat(ops, 0); !e.empty()) return e;
  if (ops[0].rank() != 4) return "operand 0 must be [b, s, n, d], got " + toString(ops[0]);
  if (ops[0].shape[3] % 2) return "the head dim must be even, got " + std::to_string(ops[0].shape[3]);
  AttrReader at(attrs);
  double theta = at.getFloat("theta", kDefaultTheta);
  at.getBool("inverse", false);
  if (!at.ok()) return at.error;
  if (!(theta > 0)) return "theta must be positive";
  res = {TensorType(ops[0].shape, ops[0].dtype)};
  return "";
}

void evalRope(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  AttrReader at(op.attrs);
  double theta = at.getFloat("theta", kDefaultTheta);
  double sign = at.getBool("inverse", false) ? -1.0 : 1.0;
  const Tensor &x = *in[0];
  Tensor &y = out[0];
  int64_t B = x.shape[0], S = x.shape[1], N = x.shape[2], D = x.shape[3], half = D / 2;
  std::vector<double> freq(half);
  for (int64_t i = 0; i < half; ++i) freq[i] = std::pow(theta, -2.0 * double(i) / double(D));
  for (int64_t bi = 0; bi < B; ++bi)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t n = 0; n < N; ++n) {
        int64_t base = ((bi * S + s) * N + n) * D;
        for (int64_t i = 0; i < half; ++i) {
          double angle = sign * double(s) * freq[i];
          double c = std::cos(angle), sn = std::sin(angle);
          double a = x.data[base + i], b = x.data[base + i + half];
          y.data[base + i] = a * c - b * sn;
          y.data[base + i + half] = b * c + a * sn;
        }
      }
}

void gradRope(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (!d[0]) return;
  AttrReader at(op.attrs);
  dx[0] = b.value(OpKind::Rope, {d[0]},
                  {{"theta", at.getFloat("theta", kDefaultTheta)}, {"inverse", !at.getBool("inverse", false)}});
}

// Per pair: 4 multiplies, 2 adds (the angles are a table).
double flopsRope(const Op &op) { return 3 * resultNumel(op); }

//===----------------------------------------------------------------------===//
// dropout
//===----------------------------------------------------------------------===//

std::string inferDropout(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  if (auto e = checkFloat(ops, 0); !e.empty()) return e;
  AttrReader at(attrs);
  double p = at.getFloat("p");
  at.getInt("seed");
  at.getInt("stream");
  if (!at.ok()) return at.error;
  if (!(p >= 0 && p <= 1)) return "p must be in [0, 1], got " + std::to_string(p);
  res = {TensorType(ops[0].shape, ops[0].dtype)};
  return "";
}

void evalDropout(EvalContext &ctx, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  double p = AttrReader(op.attrs).getFloat("p");
  const std::vector<double> &x = in[0]->data;
  std::vector<double> &y = out[0].data;
  if (p == 0) {
    y = x;
    return;
  }
  double keepScale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  uint64_t key = dropoutKey(ctx, op.attrs);
  std::vector<int64_t> counter = dropoutCounters(ctx, op.attrs, op.operands[0]->type);
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = numerics::philoxUniform(key, uint64_t(counter[i])) >= p ? x[i] * keepScale : 0.0;
}

// The same attributes draw the same mask: dx = mask * dy / (1 - p).
void gradDropout(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0]) dx[0] = b.value(OpKind::Dropout, {d[0]}, op.attrs);
}

// One draw, one compare, one multiply.
double flopsDropout(const Op &op) { return 3 * resultNumel(op); }
double flopsOne(const Op &op) { return resultNumel(op); }


/// Softmax and its gradient: the softmax'd dim stays whole.
std::optional<DimLabels> labelsSoftmax(const Op &op) {
  DimRule r(op);
  DimLabels L = r.elementwise();
  if (auto d = dimAttr(op, "dim", r.rank0())) L.whole[size_t(L.results[0][size_t(*d)])] = true;
  return L;
}

/// The masks: the last two dims (the positions compared) stay whole; the
/// gradient's mask is linear in dy.
std::optional<DimLabels> labelsMask(const Op &op) {
  DimRule r(op);
  DimLabels L = r.elementwise();
  size_t k = r.rank0();
  for (size_t d = k >= 2 ? k - 2 : 0; d < k; ++d) L.whole[size_t(L.results[0][d])] = true;
  L.linearIn[0] = op.kind == OpKind::MaskGrad;
  return L;
}

/// [b, s, heads, d]: positions and pairs of the head dim are whole.
std::optional<DimLabels> labelsRope(const Op &op) {
  DimRule r(op);
  DimLabels L = r.elementwise();
  size_t k = r.rank0();
  if (k >= 3) L.whole[size_t(L.results[0][k - 3])] = true;
  if (k >= 1) L.whole[size_t(L.results[0][k - 1])] = true;
  L.linearIn[0] = true;
  return L;
}

/// The same mask on every rank: linear, each rank its own blocks.
std::optional<DimLabels> labelsDropout(const Op &op) {
  DimLabels L = DimRule(op).elementwise();
  L.linearIn[0] = true;
  return L;
}

// The row kernels (ir/KernelDesc.h): softmax and log_softmax as max, then
// the sum of exp(x - max), then each element; softmax_grad (y, dy) as
// dx = y (dy - sum dy y).
template <bool Log>
std::string rowsSoftmax(const AttrMap &attrs, llvm::ArrayRef<Shape> operands, const Shape &, RowReduction &r) {
  if (auto e = rowsOfLastDim(operands, r); !e.empty()) return e;
  if (!alongLastDim(attrs, operands[0].size())) return "a softmax along another dim than the last";
  FormulaBuilder m;
  r.stages.push_back({Combiner::Max, m.done(m.input(0))});
  FormulaBuilder e; // exp(x - max)
  r.stages.push_back({Combiner::Sum, e.done(e.exp(e.sub(e.input(0), e.input(1))))});
  FormulaBuilder b;
  int z = b.sub(b.input(0), b.input(1));
  r.output = Log ? b.done(b.sub(z, b.unary(FormulaOp::Log, b.input(2)))) : b.done(b.div(b.exp(z), b.input(2)));
  return "";
}

std::string rowsSoftmaxGrad(const AttrMap &attrs, llvm::ArrayRef<Shape> operands, const Shape &, RowReduction &r) {
  if (auto e = rowsOfLastDim(operands, r); !e.empty()) return e;
  if (operands.size() != 2 || operands[1] != operands[0]) return "operands of different shapes";
  if (!alongLastDim(attrs, operands[0].size())) return "a softmax along another dim than the last";
  FormulaBuilder d;
  r.stages.push_back({Combiner::Sum, d.done(d.mul(d.input(1), d.input(0)))});
  FormulaBuilder b;
  r.output = b.done(b.mul(b.input(0), b.sub(b.input(1), b.input(2))));
  return "";
}

} // namespace

uint64_t ir::dropoutKey(const EvalContext &ctx, const AttrMap &attrs) {
  AttrReader at(attrs);
  // The run's seed (the trainer passes one per step) changes the mask from
  // step to step; within a step, forward, backward and any recomputation, on
  // every rank, draw the same one. Seed 0 leaves the key as the attributes say.
  return ((uint64_t(at.getInt("seed")) << 32) + uint64_t(at.getInt("stream"))) ^ (ctx.seed * 0x9E3779B97F4A7C15ull);
}

std::vector<int64_t> ir::dropoutCounters(const EvalContext &ctx, const AttrMap &attrs, const TensorType &t) {
  // Counted by the element's index in the global value, so a rank holding a
  // block draws exactly the global mask's block.
  std::vector<int64_t> index = ctx.globalIndices(t);
  // One micro-batch of a batch cut into m (the pipeline pass's clones) draws
  // the rows of the whole batch's mask it holds: {batch_split = [d, m, j]}
  // says its rows are micro-batch j of d row blocks (dp ranks), each block
  // holding its m micro-batches one after the other.
  auto it = attrs.find("batch_split");
  if (it != attrs.end() && t.rank() > 0) {
    const auto *split = std::get_if<std::vector<int64_t>>(&it->second);
    int64_t rows = t.shape[0], width = rows ? t.numel() / rows : 0;
    if (split && split->size() == 3 && (*split)[0] > 0 && rows % (*split)[0] == 0 && width > 0) {
      int64_t perBlock = rows / (*split)[0];
      for (int64_t &g : index) {
        int64_t r = g / width, d = r / perBlock, i = r % perBlock;
        g = (d * (*split)[1] * perBlock + (*split)[2] * perBlock + i) * width + g % width;
      }
    }
  }
  return index;
}

void ir::registerAttentionOps(OpDef *t) {
  define(t, OpKind::Softmax, inferSoftmax, evalSoftmax<false>, gradSoftmax, flopsSoftmax);
  define(t, OpKind::LogSoftmax, inferSoftmax, evalSoftmax<true>, gradLogSoftmax, flopsSoftmax);
  define(t, OpKind::SoftmaxGrad, inferSoftmaxGrad, evalSoftmaxGrad, nullptr, flopsSoftmaxGrad);
  define(t, OpKind::CausalMask, inferCausalMask, evalCausalMask, gradCausalMask, flopsOne);
  define(t, OpKind::MaskGrad, inferCausalMask, evalMaskGrad, gradCausalMask, flopsOne);
  define(t, OpKind::Rope, inferRope, evalRope, gradRope, flopsRope);
  define(t, OpKind::Dropout, inferDropout, evalDropout, gradDropout, flopsDropout);

  for (OpKind k : {OpKind::Softmax, OpKind::LogSoftmax, OpKind::SoftmaxGrad}) declare(t, k, 0, labelsSoftmax);
  declare(t, OpKind::CausalMask, 0, labelsMask);
  declare(t, OpKind::MaskGrad, 0, labelsMask);
  declare(t, OpKind::Rope, 0, labelsRope);
  declare(t, OpKind::Dropout, 0, labelsDropout);

  rowKernel(t, OpKind::Softmax, rowsSoftmax<false>);
  rowKernel(t, OpKind::LogSoftmax, rowsSoftmax<true>);
  rowKernel(t, OpKind::SoftmaxGrad, rowsSoftmaxGrad);
  kernel(t, OpKind::CausalMask, KernelClass::Library, {"causal_mask", /*fills -inf*/ true});
  kernel(t, OpKind::MaskGrad, KernelClass::Library, {"causal_mask", /*fills 0*/ false});
  kernel(t, OpKind::Rope, KernelClass::Library, {"rope"});
  kernel(t, OpKind::Dropout, KernelClass::Library, {"dropout"});
}
