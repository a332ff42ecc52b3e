//===- ir/ops/FlashAttention.cpp - attention as one op, scores never kept -===//
//
// flash_attention(q [.., s, d], k [.., t, d], v [.., t, e])
//     {scale: f64, causal: bool = false, p: f64 = 0, seed, stream: i64}
//   -> (out [.., s, e], lse [.., s] in f32 (f64 for f64 operands))
//
// is softmax(mask(scale q k^T)) v with dropout p on the probabilities, as the
// unfused ops compute it (`matmul`, `scale`, `causal_mask`, `softmax`,
// `dropout`, `matmul`; passes/FuseAttention.cpp rewrites those into this),
// but its s x t scores are a value of no program: the result is the output
// and, per row, the log-sum-exp of the scaled, masked scores — the O(s)
// statistic backward needs (Dao et al. 2022, FlashAttention). The batch dims
// (batch and heads) of q, k and v are equal; nothing broadcasts.
//
// flash_attention_grad(q, k, v, out, lse, dout) {the forward's attributes}
//   -> (dq, dk, dv)
// recomputes each row's probabilities P = exp(scale q k^T - lse) and, with
// Z the dropout mask scaled by 1/(1-p) and D = rowsum(dout * out):
//   dv = (P Z)^T dout,  dS = P (Z (dout v^T) - D),
//   dq = scale dS k,     dk = scale dS^T q.
//
// Dropout draws the mask the unfused `dropout` op would draw on the
// probabilities (same key, and the counter of each element of the [.., s, t]
// probabilities as ir/ops/OpSupport.h's dropoutCounters gives it), so the
// fused and the unfused step are the same step.
//
//===----------------------------------------------------------------------===//

#include "ir/Interpreter.h"
#include "ir/ops/DimRule.h"
#include "ir/ops/OpSupport.h"
#include "numerics/Philox.h"

#include <cmath>
#include <limits>

using namespace planc;
using namespace planc::ir;

namespace {

struct FlashAttrs {
  double scale = 1, p = 0;
  bool causal = false;
};

FlashAttrs readAttrs(const AttrMap &attrs, std::string *error = nullptr) {
  AttrReader at(attrs);
  FlashAttrs a;
  a.scale = at.getFloat("scale");
  a.causal = at.getBool("causal", false);
  a.p = at.getFloat("p", 0.0);
  if (a.p != 0) {
    at.getInt("seed");
    at.getInt("stream");
  }
  if (error) *error = at.error;
  return a;
}

/// The dims of q [.., s, d], k [.., t, d], v [.., t, e]; "" or what is wrong.
struct FlashDims {
  Shape batch;
  int64_t s = 0, t = 0, d = 0, e = 0;
  int64_t rows() const { return product(batch); }
};

std::string flashDims(const TensorType &q, const TensorType &k, const TensorType &v, FlashDims &f) {
  size_t r = q.rank();
  if (r < 2) return "q must have rank 2 or more, got " + toString(q);
  if (k.rank() != r || v.rank() != r)
    return "q, k and v must have one rank, got " + toString(q) + ", " + toString(k) + " and " + toString(v);
  f.batch = Shape(q.shape.begin(), q.shape.end() - 2);
  if (Shape(k.shape.begin(), k.shape.end() - 2) != f.batch || Shape(v.shape.begin(), v.shape.end() - 2) != f.batch)
    return "the batch dims of q, k and v differ: " + toString(q) + ", " + toString(k) + " and " + toString(v);
  f.s = q.shape[r - 2];
  f.d = q.shape[r - 1];
  f.t = k.shape[r - 2];
  f.e = v.shape[r - 1];
  if (k.shape[r - 1] != f.d) return "q and k have head dims " + std::to_string(f.d) + " and " + std::to_string(k.shape[r - 1]);
  if (v.shape[r - 2] != f.t) return "k and v have " + std::to_string(f.t) + " and " + std::to_string(v.shape[r - 2]) + " keys";
  return "";
}

std::string checkAttrs(const AttrMap &attrs) {
  std::string error;
  FlashAttrs a = readAttrs(attrs, &error);
  if (!error.empty()) return error;
  if (!(a.p >= 0 && a.p <= 1)) return "p must be in [0, 1], got " + std::to_string(a.p);
  if (!std::isfinite(a.scale)) return "scale must be finite";
  return "";
}

std::string inferFlash(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 3); !e.empty()) return e;
  for (size_t i = 0; i < 3; ++i)
    if (auto e = checkFloat(ops, i); !e.empty()) return e;
  if (auto e = checkSameDType(ops, 0, 1); !e.empty()) return e;
  if (auto e = checkSameDType(ops, 0, 2); !e.empty()) return e;
  FlashDims f;
  if (auto e = flashDims(ops[0], ops[1], ops[2], f); !e.empty()) return e;
  if (auto e = checkAttrs(attrs); !e.empty()) return e;
  Shape out = f.batch, lse = f.batch;
  out.push_back(f.s);
  out.push_back(f.e);
  lse.push_back(f.s);
  res = {TensorType(out, ops[0].dtype), TensorType(lse, accumulatorDType(ops[0].dtype))};
  return "";
}

std::string inferFlashGrad(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 6); !e.empty()) return e;
  std::vector<TensorType> fwd;
  if (auto e = inferFlash(ops.take_front(3), attrs, fwd); !e.empty()) return e;
  if (ops[3].shape != fwd[0].shape) return "out must be " + toString(fwd[0].shape) + ", got " + toString(ops[3]);
  if (ops[4].shape != fwd[1].shape) return "lse must be " + toString(fwd[1].shape) + ", got " + toString(ops[4]);
  if (ops[5].shape != fwd[0].shape) return "dout must be " + toString(fwd[0].shape) + ", got " + toString(ops[5]);
  for (size_t i : {size_t(3), size_t(4), size_t(5)})
    if (auto e = checkFloat(ops, i); !e.empty()) return e;
  res = {TensorType(ops[0].shape, ops[0].dtype), TensorType(ops[1].shape, ops[1].dtype),
         TensorType(ops[2].shape, ops[2].dtype)};
  return "";
}

/// What the reference kernels share: the dims, the attributes and the
/// dropout mask of the probabilities (keep scale or 0 per element).
struct FlashKernel {
  FlashDims dims;
  FlashAttrs attrs;
  uint64_t key = 0;
  std::vector<int64_t> counter; // per element of the [.., s, t] probabilities; empty without dropout
  double keepScale = 1;

  FlashKernel(EvalContext &ctx, const Op &op) {
    flashDims(op.operands[0]->type, op.operands[1]->type, op.operands[2]->type, dims);
    attrs = readAttrs(op.attrs);
    if (attrs.p > 0) {
      key = dropoutKey(ctx, op.attrs);
      TensorType probs = op.operands[0]->type;
      probs.shape.back() = op.operands[1]->type.shape[probs.rank() - 2];
      counter = dropoutCounters(ctx, op.attrs, probs);
      keepScale = attrs.p < 1 ? 1.0 / (1.0 - attrs.p) : 0.0;
    }
  }
  /// The local dims (a rank's block splits only batch dims).
  void localize(const Tensor &q, const Tensor &k, const Tensor &v) {
    size_t r = q.rank();
    dims.batch = Shape(q.shape.begin(), q.shape.end() - 2);
    dims.s = q.shape[r - 2];
    dims.t = k.shape[r - 2];
    dims.e = v.shape[r - 1];
  }
  bool masked(int64_t i, int64_t j) const { return attrs.causal && j > i; }
  /// Z: the dropout factor of probability (b, i, j).
  double keep(int64_t b, int64_t i, int64_t j) const {
    if (counter.empty()) return 1.0;
    int64_t at = (b * dims.s + i) * dims.t + j;
    return numerics::philoxUniform(key, uint64_t(counter[size_t(at)])) >= attrs.p ? keepScale : 0.0;
  }
  /// scale * q_i . k_j of matrix b.
  double score(const Tensor &q, const Tensor &k, int64_t b, int64_t i, int64_t j) const {
    const double *qi = &q.data[size_t((b * dims.s + i) * dims.d)];
    const double *kj = &k.data[size_t((b * dims.t + j) * dims.d)];
    double dot = 0;
    for (int64_t c = 0; c < dims.d; ++c) dot += qi[c] * kj[c];
    return attrs.scale * dot;
  }
};

void evalFlash(EvalContext &ctx, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  FlashKernel f(ctx, op);
  const Tensor &q = *in[0], &k = *in[1], &v = *in[2];
  f.localize(q, k, v);
  Tensor &o = out[0], &lse = out[1];
  const int64_t S = f.dims.s, T = f.dims.t, E = f.dims.e;
  std::vector<double> score(static_cast<size_t>(T));
  for (int64_t b = 0; b < f.dims.rows(); ++b)
    for (int64_t i = 0; i < S; ++i) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < T; ++j) {
        score[size_t(j)] = f.masked(i, j) ? -std::numeric_limits<double>::infinity() : f.score(q, k, b, i, j);
        mx = std::max(mx, score[size_t(j)]);
      }
      double sum = 0;
      for (int64_t j = 0; j < T; ++j) sum += std::exp(score[size_t(j)] - mx);
      const double rowLse = mx + std::log(sum);
      lse.data[size_t(b * S + i)] = rowLse;
      double *oi = &o.data[size_t((b * S + i) * E)];
      for (int64_t c = 0; c < E; ++c) oi[c] = 0;
      for (int64_t j = 0; j < T; ++j) {
        double pz = std::exp(score[size_t(j)] - rowLse) * f.keep(b, i, j);
        if (pz == 0) continue;
        const double *vj = &v.data[size_t((b * T + j) * E)];
        for (int64_t c = 0; c < E; ++c) oi[c] += pz * vj[c];
      }
    }
}

void evalFlashGrad(EvalContext &ctx, const Op &op, llvm::ArrayRef<const Tensor *> in,
                   llvm::MutableArrayRef<Tensor> out) {
  FlashKernel f(ctx, op);
  const Tensor &q = *in[0], &k = *in[1], &v = *in[2], &o = *in[3], &lse = *in[4], &dout = *in[5];
  f.localize(q, k, v);
  Tensor &dq = out[0], &dk = out[1], &dv = out[2];
  std::fill(dq.data.begin(), dq.data.end(), 0.0);
  std::fill(dk.data.begin(), dk.data.end(), 0.0);
  std::fill(dv.data.begin(), dv.data.end(), 0.0);
  const int64_t S = f.dims.s, T = f.dims.t, D = f.dims.d, E = f.dims.e;
  for (int64_t b = 0; b < f.dims.rows(); ++b)
    for (int64_t i = 0; i < S; ++i) {
      const double *oi = &o.data[size_t((b * S + i) * E)], *doi = &dout.data[size_t((b * S + i) * E)];
      const double *qi = &q.data[size_t((b * S + i) * D)];
      double *dqi = &dq.data[size_t((b * S + i) * D)];
      double rowDot = 0; // D_i = dout_i . out_i
      for (int64_t c = 0; c < E; ++c) rowDot += doi[c] * oi[c];
      const double rowLse = lse.data[size_t(b * S + i)];
      for (int64_t j = 0; j < T; ++j) {
        if (f.masked(i, j)) continue;
        const double p = std::exp(f.score(q, k, b, i, j) - rowLse), z = f.keep(b, i, j);
        const double *vj = &v.data[size_t((b * T + j) * E)], *kj = &k.data[size_t((b * T + j) * D)];
        double *dvj = &dv.data[size_t((b * T + j) * E)], *dkj = &dk.data[size_t((b * T + j) * D)];
        double dp = 0;
        for (int64_t c = 0; c < E; ++c) {
          dvj[c] += p * z * doi[c];
          dp += doi[c] * vj[c];
        }
        const double ds = p * (z * dp - rowDot) * f.attrs.scale;
        for (int64_t c = 0; c < D; ++c) {
          dqi[c] += ds * kj[c];
          dkj[c] += ds * qi[c];
        }
      }
    }
}

/// lse is a statistic for backward: nothing in forward reads it, so only the
/// output's gradient flows (passes/FuseAttention.cpp makes no other reader).
void gradFlash(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(3, nullptr);
  if (!d[0]) return;
  Op *g = b.create(OpKind::FlashAttentionGrad,
                   {op.operands[0], op.operands[1], op.operands[2], op.results[0], op.results[1], d[0]}, op.attrs);
  dx = {g->results[0], g->results[1], g->results[2]};
}

FlashDims dimsOf(const Op &op) {
  FlashDims f;
  flashDims(op.operands[0]->type, op.operands[1]->type, op.operands[2]->type, f);
  return f;
}

// The FLOPs of the chain the op replaces, so that fusing attention leaves
// the model's FLOPs (and MFU) as they were: every score is computed (masked
// ones too, as the unfused matmuls count them: the FLOPs of the model, not of
// a kernel that skips the masked half), 2 FLOPs a multiply-add. Per score,
// forward: q k^T (2d), the scale (1, when not 1) and the mask (1) as the
// elementwise ops count them, softmax (5), the dropout (3, when p > 0) and
// P v (2e).
double chainFlopsPerScore(const Op &op) {
  FlashAttrs a = readAttrs(op.attrs);
  return (a.scale != 1 ? 1.0 : 0.0) + (a.causal ? 1.0 : 0.0) + (a.p > 0 ? 3.0 : 0.0);
}

double scoresOf(const FlashDims &f) { return double(f.rows()) * double(f.s) * double(f.t); }

double flopsFlash(const Op &op) {
  FlashDims f = dimsOf(op);
  return scoresOf(f) * (2.0 * double(f.d) + 2.0 * double(f.e) + 5.0 + chainFlopsPerScore(op));
}

// Backward recomputes the forward up to the probabilities (q k^T, scale,
// mask, softmax, dropout), then computes what the unfused backward does:
// dv and dP (2e each), softmax's gradient (4), the gradients of the dropout,
// mask and scale, dq and dk (2d each).
double recomputedFlopsFlashGrad(const Op &op) {
  FlashDims f = dimsOf(op);
  return scoresOf(f) * (2.0 * double(f.d) + 5.0 + chainFlopsPerScore(op));
}

double flopsFlashGrad(const Op &op) {
  FlashDims f = dimsOf(op);
  double gradients = 4.0 * double(f.e) + 4.0 + chainFlopsPerScore(op) + 4.0 * double(f.d);
  return scoresOf(f) * gradients + recomputedFlopsFlashGrad(op);
}

/// Batch dims are one label across every operand and result (heads split
/// over tp keep whole heads on a rank); the positions (s, t) and the head
/// dims (d, e) stay whole: softmax runs along t, and d is contracted.
std::optional<DimLabels> labelsFlash(const Op &op) {
  DimRule r(op);
  size_t k = r.rank0();
  if (k < 2) return std::nullopt;
  std::vector<int> batch = r.freshDims(k - 2);
  int s = r.fresh(true), t = r.fresh(true), d = r.fresh(true), e = r.fresh(true);
  auto dims = [&](int a, int b) {
    std::vector<int> v = batch;
    v.push_back(a);
    if (b >= 0) v.push_back(b);
    return v;
  };
  std::vector<int> q = dims(s, d), kk = dims(t, d), v = dims(t, e), out = dims(s, e), lse = dims(s, -1);
  r.L.operands[0] = q;
  r.L.operands[1] = kk;
  r.L.operands[2] = v;
  if (op.kind == OpKind::FlashAttention) {
    r.L.results = {out, lse};
  } else {
    r.L.operands[3] = out;
    r.L.operands[4] = lse;
    r.L.operands[5] = out;
    r.L.results = {q, kk, v};
    r.L.linearIn[5] = true; // dq, dk, dv are linear in dout (D = rowsum(dout * out) too)
  }
  return r.L;
}

} // namespace

void ir::registerFlashAttentionOps(OpDef *t) {
  define(t, OpKind::FlashAttention, inferFlash, evalFlash, gradFlash, flopsFlash);
  define(t, OpKind::FlashAttentionGrad, inferFlashGrad, evalFlashGrad, nullptr, flopsFlashGrad);
  t[unsigned(OpKind::FlashAttentionGrad)].recomputedFlops = recomputedFlopsFlashGrad;
  declare(t, OpKind::FlashAttention, 0, labelsFlash);
  declare(t, OpKind::FlashAttentionGrad, 0, labelsFlash);
  kernel(t, OpKind::FlashAttention, KernelClass::Library, {"flash_attention", /*the gradient*/ false});
  kernel(t, OpKind::FlashAttentionGrad, KernelClass::Library, {"flash_attention", /*the gradient*/ true});
}
