//===- ir/ops/Adam8bit.cpp - Adam with block-wise 8-bit moments -----------===//
//
// adam8bit_update(param, grad, m_q, m_scale, v_q, v_scale, lr, step)
//   {beta1, beta2, eps, weight_decay, decoupled (as adam_update), block = 2048}
//   -> (param, m_q, m_scale, v_q, v_scale)
// 8-bit Adam (Dettmers et al. 2022, "8-bit Optimizers via Block-wise
// Quantization"): the moments are stored as one u8 code per element plus one
// scale per block of `block` elements (the parameter flattened row-major,
// ceil(numel / block) blocks). A code indexes the dynamic-exponent map of
// bitsandbytes' create_dynamic_map: signed for m, unsigned for v (whose
// values span many decades, which a linear map would flush to zero); the
// scale is the block's absolute maximum. Each step dequantises, makes the
// Adam update in full precision exactly as adam_update, then requantises to
// the nearest code. Zero codes with zero scales are zero moments, so the
// state starts as all zeros like Adam's.
//
//===----------------------------------------------------------------------===//

#include "ir/ops/OpSupport.h"

#include <algorithm>
#include <array>
#include <cmath>

using namespace planc;
using namespace planc::ir;

namespace {

using CodeMap = std::array<double, 256>;

/// bitsandbytes' create_dynamic_map(signed, max_exponent_bits = 7,
/// total_bits = 8), computed in f64: for exponent i = 0..6, the midpoints of
/// an even split of [0.1, 1] (2^i pieces signed, 2^(i+1) unsigned) scaled by
/// 10^(i-6), mirrored for the signed map; plus 0 and 1; sorted.
CodeMap dynamicMap(bool isSigned) {
  std::vector<double> values;
  for (int i = 0; i < 7; ++i) {
    int pieces = isSigned ? 1 << i : 1 << (i + 1);
    double scale = std::pow(10.0, i - 6);
    for (int k = 0; k < pieces; ++k) {
      double lo = 0.1 + 0.9 * k / pieces, hi = 0.1 + 0.9 * (k + 1) / pieces;
      values.push_back(scale * (lo + hi) / 2);
      if (isSigned) values.push_back(-scale * (lo + hi) / 2);
    }
  }
  values.push_back(0.0);
  values.push_back(1.0);
  std::sort(values.begin(), values.end());
  CodeMap map{};
  std::copy(values.begin(), values.end(), map.begin());
  return map;
}

const CodeMap &signedMap() {
  static const CodeMap map = dynamicMap(true);
  return map;
}
const CodeMap &unsignedMap() {
  static const CodeMap map = dynamicMap(false);
  return map;
}

/// The code whose value is nearest to x (x in [-1, 1]); ties to the lower code.
double nearestCode(const CodeMap &map, double x) {
  auto it = std::lower_bound(map.begin(), map.end(), x);
  if (it == map.begin()) return 0;
  if (it == map.end()) return 255;
  size_t hi = size_t(it - map.begin());
  return x - map[hi - 1] <= map[hi] - x ? double(hi - 1) : double(hi);
}

constexpr int64_t kDefaultBlock = 2048;

std::string inferAdam8bit(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 8); !e.empty()) return e;
  if (auto e = checkFloat(ops, 0); !e.empty()) return e;
  if (auto e = checkFloat(ops, 1); !e.empty()) return e;
  AttrReader at(attrs);
  at.getFloat("beta1", 0.9);
  at.getFloat("beta2", 0.999);
  at.getFloat("eps", 1e-8);
  at.getFloat("weight_decay", 0.0);
  at.getBool("decoupled", false);
  int64_t block = at.getInt("block", kDefaultBlock);
  if (!at.ok()) return at.error;
  if (block < 1) return "block must be positive";
  const Shape &shape = ops[0].shape;
  int64_t blocks = (ops[0].numel() + block - 1) / block;
  if (ops[1].shape != shape) return "the gradient " + toString(ops[1].shape) + " must have the parameter's shape";
  for (size_t q : {2, 4}) {
    if (ops[q].shape != shape || ops[q].dtype != DType::U8)
      return "operand " + std::to_string(q) + " (codes) must be u8" + toString(shape) + ", got " + toString(ops[q]);
    const TensorType &scale = ops[q + 1];
    if (scale.shape != Shape{blocks} || !isFloat(scale.dtype))
      return "operand " + std::to_string(q + 1) + " (scales) must be floating-point [" + std::to_string(blocks) +
             "] (one per block of " + std::to_string(block) + "), got " + toString(scale);
  }
  if (!ops[6].shape.empty() || !isFloat(ops[6].dtype)) return "operand 6 (lr) must be a floating-point scalar";
  if (!ops[7].shape.empty() || ops[7].dtype == DType::Bool) return "operand 7 (step) must be a numeric scalar";
  res = {TensorType(shape, ops[0].dtype), TensorType(shape, DType::U8), TensorType(ops[3].shape, ops[3].dtype),
         TensorType(shape, DType::U8), TensorType(ops[5].shape, ops[5].dtype)};
  return "";
}

void evalAdam8bit(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  AttrReader at(op.attrs);
  double b1 = at.getFloat("beta1", 0.9), b2 = at.getFloat("beta2", 0.999), eps = at.getFloat("eps", 1e-8);
  double wd = at.getFloat("weight_decay", 0.0);
  bool decoupled = at.getBool("decoupled", false);
  int64_t block = at.getInt("block", kDefaultBlock);
  const std::vector<double> &p = in[0]->data, &g = in[1]->data;
  const std::vector<double> &mq = in[2]->data, &ms = in[3]->data, &vq = in[4]->data, &vs = in[5]->data;
  double lr = in[6]->data[0], step = in[7]->data[0];
  double stepSize = lr / (1.0 - std::pow(b1, step));
  double bc2Sqrt = std::sqrt(1.0 - std::pow(b2, step));
  const CodeMap &sMap = signedMap(), &uMap = unsignedMap();

  int64_t n = int64_t(p.size());
  std::vector<double> m(std::min(n, block)), v(m.size());
  for (int64_t start = 0, blk = 0; start < n; start += block, ++blk) {
    int64_t len = std::min(block, n - start);
    double mMax = 0, vMax = 0;
    for (int64_t k = 0; k < len; ++k) {
      int64_t i = start + k;
      double param = p[i], grad = g[i];
      if (decoupled)
        param *= 1.0 - lr * wd;
      else
        grad += wd * param;
      double m0 = sMap[size_t(mq[i])] * ms[blk], v0 = uMap[size_t(vq[i])] * vs[blk];
      m[k] = m0 + (grad - m0) * (1.0 - b1);
      v[k] = v0 * b2 + (1.0 - b2) * grad * grad;
      out[0].data[i] = param - stepSize * m[k] / (std::sqrt(v[k]) / bc2Sqrt + eps);
      mMax = std::max(mMax, std::fabs(m[k]));
      vMax = std::max(vMax, v[k]);
    }
    // Quantise against the scale as it will be stored.
    mMax = roundTo(out[2].dtype, mMax);
    vMax = roundTo(out[4].dtype, vMax);
    out[2].data[blk] = mMax;
    out[4].data[blk] = vMax;
    for (int64_t k = 0; k < len; ++k) {
      out[1].data[start + k] = mMax > 0 ? nearestCode(sMap, m[k] / mMax) : 0.0;
      out[3].data[start + k] = vMax > 0 ? nearestCode(uMap, v[k] / vMax) : 0.0;
    }
  }
}

// Adam's work plus dequantising and requantising (a search of 8 steps each).
double flopsAdam8bit(const Op &op) { return 40 * operandNumel(op); }


} // namespace

void ir::registerAdam8bitOps(OpDef *t) {
  define(t, OpKind::Adam8bitUpdate, inferAdam8bit, evalAdam8bit, nullptr, flopsAdam8bit);
  // Block-quantised states keep the parameter's layout less any ZeRO split:
  // the update runs on the whole parameter.
  using R = OperandRole;
  declare(t, OpKind::Adam8bitUpdate, kInPlace, nullptr);
  entry(t, OpKind::Adam8bitUpdate).operandRoles = {R::Parameter,  R::Gradient,   R::BlockState,     R::BlockState,
                                                   R::BlockState, R::BlockState, R::HyperParameter, R::HyperParameter};
  entry(t, OpKind::Adam8bitUpdate).inPlaceOf = {0, 2, 3, 4, 5};
  noKernel(t, OpKind::Adam8bitUpdate, KernelClass::Library, "no hand-written kernel");
}
