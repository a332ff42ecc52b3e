//===- ir/ops/Norm.cpp - layernorm, rmsnorm and their gradients -----------===//
//
// Both normalise over the last dim (h) of x [..., h] with weight [h] (and
// bias [h] for layernorm), {eps: f64, default 1e-5}, as torch's LayerNorm
// (biased variance) and RMSNorm. The gradients are single ops, as the fused
// kernels of every framework: layernorm_grad(x, w, b, dy) -> (dx, dw, db),
// rmsnorm_grad(x, w, dy) -> (dx, dw). They recompute the row statistics from
// x instead of saving them, so the forward op has one result.
//
//===----------------------------------------------------------------------===//

#include "ir/ops/DimRule.h"
#include "ir/ops/OpSupport.h"

#include <cmath>

using namespace planc;
using namespace planc::ir;

namespace {

/// x [..., h] and `vectors` further operands of shape [h], all one float
/// dtype; `extra` trailing operands of x's type (dy of the gradients).
std::string checkNormOperands(llvm::ArrayRef<TensorType> ops, size_t vectors, size_t extra) {
  if (auto e = checkArity(ops, 1 + vectors + extra); !e.empty()) return e;
  if (auto e = checkFloat(ops, 0); !e.empty()) return e;
  if (ops[0].rank() == 0) return "operand 0 must have rank 1 or more, got " + toString(ops[0]);
  int64_t h = ops[0].shape.back();
  for (size_t i = 1; i < ops.size(); ++i) {
    if (auto e = checkSameDType(ops, 0, i); !e.empty()) return e;
    Shape want = i <= vectors ? Shape{h} : ops[0].shape;
    if (ops[i].shape != want)
      return "operand " + std::to_string(i) + " must have shape " + toString(want) + ", got " + toString(ops[i].shape);
  }
  return "";
}

std::string checkEps(const AttrMap &attrs) {
  AttrReader at(attrs);
  double eps = at.getFloat("eps", kNormDefaultEps);
  if (!at.ok()) return at.error;
  if (!(eps >= 0)) return "eps must be non-negative";
  return "";
}

std::string inferLayerNorm(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkNormOperands(ops, 2, 0); !e.empty()) return e;
  if (auto e = checkEps(attrs); !e.empty()) return e;
  res = {TensorType(ops[0].shape, ops[0].dtype)};
  return "";
}

std::string inferLayerNormGrad(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkNormOperands(ops, 2, 1); !e.empty()) return e;
  if (auto e = checkEps(attrs); !e.empty()) return e;
  res = {TensorType(ops[0].shape, ops[0].dtype), TensorType(ops[1].shape, ops[1].dtype),
         TensorType(ops[2].shape, ops[2].dtype)};
  return "";
}

std::string inferRmsNorm(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkNormOperands(ops, 1, 0); !e.empty()) return e;
  if (auto e = checkEps(attrs); !e.empty()) return e;
  res = {TensorType(ops[0].shape, ops[0].dtype)};
  return "";
}

std::string inferRmsNormGrad(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkNormOperands(ops, 1, 1); !e.empty()) return e;
  if (auto e = checkEps(attrs); !e.empty()) return e;
  res = {TensorType(ops[0].shape, ops[0].dtype), TensorType(ops[1].shape, ops[1].dtype)};
  return "";
}

/// Row statistics of one row of h values: mean (0 for rmsnorm) and
/// 1 / sqrt(variance + eps), the variance biased (divided by h); for rmsnorm
/// the mean square.
struct RowStats {
  double mean, rstd;
};

RowStats rowStats(const double *x, int64_t h, double eps, bool centered) {
  double mean = 0;
  if (centered) {
    for (int64_t i = 0; i < h; ++i) mean += x[i];
    mean /= double(h);
  }
  double var = 0; // two passes: no cancellation for rows with a large mean
  for (int64_t i = 0; i < h; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= double(h);
  return {mean, 1.0 / std::sqrt(var + eps)};
}

template <bool Centered>
void evalNorm(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  double eps = AttrReader(op.attrs).getFloat("eps", kNormDefaultEps);
  const Tensor &x = *in[0];
  const std::vector<double> &w = in[1]->data;
  const double *bias = Centered ? in[2]->data.data() : nullptr;
  int64_t h = x.shape.back(), rows = h ? x.numel() / h : 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double *xr = x.data.data() + r * h;
    double *yr = out[0].data.data() + r * h;
    RowStats s = rowStats(xr, h, eps, Centered);
    for (int64_t i = 0; i < h; ++i) yr[i] = (xr[i] - s.mean) * s.rstd * w[i] + (Centered ? bias[i] : 0.0);
  }
}

// With xhat = (x - mean) rstd and g = dy w (per row):
//   layernorm: dx = rstd (g - mean(g) - xhat mean(g xhat))
//   rmsnorm:   dx = rstd (g - xhat mean(g xhat))
//   dw = sum over rows of dy xhat, db = sum over rows of dy.
template <bool Centered>
void evalNormGrad(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  double eps = AttrReader(op.attrs).getFloat("eps", kNormDefaultEps);
  const Tensor &x = *in[0];
  const std::vector<double> &w = in[1]->data;
  const Tensor &dy = *in[Centered ? 3 : 2];
  std::vector<double> &dx = out[0].data, &dw = out[1].data;
  double *db = Centered ? out[2].data.data() : nullptr;
  int64_t h = x.shape.back(), rows = h ? x.numel() / h : 0;
  std::vector<double> xhat(h), g(h);
  for (int64_t r = 0; r < rows; ++r) {
    const double *xr = x.data.data() + r * h, *dyr = dy.data.data() + r * h;
    RowStats s = rowStats(xr, h, eps, Centered);
    double meanG = 0, meanGX = 0;
    for (int64_t i = 0; i < h; ++i) {
      xhat[i] = (xr[i] - s.mean) * s.rstd;
      g[i] = dyr[i] * w[i];
      meanG += g[i];
      meanGX += g[i] * xhat[i];
      dw[i] += dyr[i] * xhat[i];
      if (Centered) db[i] += dyr[i];
    }
    meanG /= double(h);
    meanGX /= double(h);
    for (int64_t i = 0; i < h; ++i) dx[r * h + i] = s.rstd * (g[i] - (Centered ? meanG : 0.0) - xhat[i] * meanGX);
  }
}

AttrMap epsOf(const Op &op) { return {{"eps", AttrReader(op.attrs).getFloat("eps", kNormDefaultEps)}}; }

void gradLayerNorm(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(3, nullptr);
  if (!d[0]) return;
  Op *g = b.create(OpKind::LayerNormGrad, {op.operands[0], op.operands[1], op.operands[2], d[0]}, epsOf(op));
  dx = {g->results[0], g->results[1], g->results[2]};
}

void gradRmsNorm(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(2, nullptr);
  if (!d[0]) return;
  Op *g = b.create(OpKind::RmsNormGrad, {op.operands[0], op.operands[1], d[0]}, epsOf(op));
  dx = {g->results[0], g->results[1]};
}

// Per element: layernorm ~8 (mean, centre, square-accumulate, scale, affine),
// rmsnorm ~6; the gradients about twice that.
double flopsLayerNorm(const Op &op) { return 8 * operandNumel(op); }
double flopsLayerNormGrad(const Op &op) { return 16 * operandNumel(op); }
double flopsRmsNorm(const Op &op) { return 6 * operandNumel(op); }
double flopsRmsNormGrad(const Op &op) { return 12 * operandNumel(op); }


/// The normalised (last) dim stays whole; the gradients sum the rows into
/// the weight gradients.
std::optional<DimLabels> labelsNorm(const Op &op) {
  DimRule r(op);
  size_t k = r.rank0();
  if (k == 0) return std::nullopt;
  std::vector<int> x;
  bool grad = op.kind == OpKind::LayerNormGrad || op.kind == OpKind::RmsNormGrad;
  for (size_t d = 0; d + 1 < k; ++d) x.push_back(r.fresh(false, grad)); // summed into the weight gradients
  x.push_back(r.fresh(true));
  std::vector<int> h{x.back()};
  for (size_t i = 0; i < op.operands.size(); ++i) r.L.operands[i] = r.rankOf(i) == k ? x : h;
  r.L.results[0] = x;
  for (size_t i = 1; i < op.results.size(); ++i) r.L.results[i] = h;
  return r.L;
}

// The row kernel (ir/KernelDesc.h): layer norm as the row's sum, then its
// sum of squared deviations, then each element (x - mean) rstd w + b; RMS
// norm as the sum of squares, then x rstd w. The weight and bias are read
// per column.
template <bool Centered>
std::string rowsNorm(const AttrMap &attrs, llvm::ArrayRef<Shape> operands, const Shape &, RowReduction &r) {
  if (auto e = rowsOfLastDim(operands, r); !e.empty()) return e;
  if (operands.size() != (Centered ? 3u : 2u)) return "the wrong number of operands";
  for (size_t i = 1; i < operands.size(); ++i) {
    if (operands[i] != Shape{r.length}) return "a weight or bias of another length than the row";
    r.perColumn[i] = true;
  }
  const double eps = floatOr(attrs, "eps", kNormDefaultEps), L = double(r.length);
  const int stat = int(operands.size()); // the first stage value
  FormulaBuilder b;
  if (Centered) {
    FormulaBuilder s0;
    r.stages.push_back({Combiner::Sum, s0.done(s0.input(0))});
    FormulaBuilder s1; // (x - mean)^2
    int dev = s1.sub(s1.input(0), s1.div(s1.input(stat), s1.constant(L)));
    r.stages.push_back({Combiner::Sum, s1.done(s1.mul(dev, dev))});
    int xhat = b.sub(b.input(0), b.div(b.input(stat), b.constant(L)));
    int rstd = b.div(b.constant(1.0),
                     b.unary(FormulaOp::Sqrt, b.add(b.div(b.input(stat + 1), b.constant(L)), b.constant(eps))));
    r.output = b.done(b.add(b.mul(b.mul(xhat, rstd), b.input(1)), b.input(2)));
  } else {
    FormulaBuilder s0;
    r.stages.push_back({Combiner::Sum, s0.done(s0.mul(s0.input(0), s0.input(0)))});
    int rstd = b.div(b.constant(1.0),
                     b.unary(FormulaOp::Sqrt, b.add(b.div(b.input(stat), b.constant(L)), b.constant(eps))));
    r.output = b.done(b.mul(b.mul(b.input(0), rstd), b.input(1)));
  }
  return "";
}

} // namespace

void ir::registerNormOps(OpDef *t) {
  define(t, OpKind::LayerNorm, inferLayerNorm, evalNorm<true>, gradLayerNorm, flopsLayerNorm);
  define(t, OpKind::LayerNormGrad, inferLayerNormGrad, evalNormGrad<true>, nullptr, flopsLayerNormGrad);
  define(t, OpKind::RmsNorm, inferRmsNorm, evalNorm<false>, gradRmsNorm, flopsRmsNorm);
  define(t, OpKind::RmsNormGrad, inferRmsNormGrad, evalNormGrad<false>, nullptr, flopsRmsNormGrad);
  for (OpKind k : {OpKind::LayerNorm, OpKind::LayerNormGrad, OpKind::RmsNorm, OpKind::RmsNormGrad})
    declare(t, k, 0, labelsNorm);
  rowKernel(t, OpKind::LayerNorm, rowsNorm<true>);
  rowKernel(t, OpKind::RmsNorm, rowsNorm<false>);
  // The weight's and bias's gradients sum over rows: by hand.
  kernel(t, OpKind::LayerNormGrad, KernelClass::Reduction, {"norm_grad", /*centred*/ true});
  kernel(t, OpKind::RmsNormGrad, KernelClass::Reduction, {"norm_grad", /*centred*/ false});
}
