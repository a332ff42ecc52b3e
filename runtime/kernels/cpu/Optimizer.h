//===- runtime/kernels/cpu/Optimizer.h - learning rate, SGD and loss scaling ----*- C++ -*-===//
//
// lr_schedule, sgd_update, and loss scaling's all_finite and
// loss_scale_update.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_KERNELS_CPU_OPTIMIZER_H
#define PLANC_RUNTIME_KERNELS_CPU_OPTIMIZER_H

#include "runtime/kernels/cpu/Common.h"

#include <algorithm>
#include <cmath>

namespace planc::cpu {

enum class Decay { Constant, Linear, Cosine };

/// lr_schedule at a 1-based step: linear warmup, then constant, linear or
/// cosine decay to minLr at decaySteps.
inline double learningRate(double step, double lr, int64_t warmup, Decay decay, int64_t decaySteps, double minLr) {
  if (warmup > 0 && step <= double(warmup)) return lr * step / double(warmup);
  if (decay == Decay::Constant) return lr;
  double p = std::min(1.0, (step - double(warmup)) / double(decaySteps - warmup));
  double frac = decay == Decay::Cosine ? 0.5 * (1.0 + std::cos(M_PI * p)) : 1.0 - p;
  return minLr + (lr - minLr) * frac;
}

/// sgd_update: d = g + wd p; with momentum buf' = m buf + d and d = buf'
/// (nesterov: d + m buf'); p' = p - lr d. Outputs may be the inputs' bytes.
template <typename T, typename L>
void sgdUpdate(const T *p, const T *g, const T *buf, const L *lr, T *pOut, T *bufOut, int64_t n, double momentum,
               double weightDecay, bool nesterov) {
  const double rate = double(lr[0]);
PLANC_OMP(omp parallel for simd schedule(static))
  for (int64_t i = 0; i < n; ++i) {
    double d = double(g[i]) + weightDecay * double(p[i]);
    double b = double(buf[i]);
    if (momentum != 0) {
      b = momentum * b + d;
      d = nesterov ? d + momentum * b : b;
    }
    bufOut[i] = T(b);
    pOut[i] = T(double(p[i]) - rate * d);
  }
}

/// all_finite's addend: whether every one of n elements is finite.
template <typename T> inline bool allFinite(const T *x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(double(x[i]))) return false;
  return true;
}

/// loss_scale_update: after a step with non-finite gradients the scale
/// backs off and the count of good steps restarts; after `window` good
/// steps in a row it grows. The outputs may be the inputs' bytes.
template <typename S, typename G, typename F>
void lossScaleUpdate(const S *scale, const G *good, const F *finite, S *scaleOut, G *goodOut, double growth,
                     double backoff, int64_t window) {
  double s = double(scale[0]), g = double(good[0]);
  if (double(finite[0]) == 0) {
    s *= backoff;
    g = 0;
  } else if (g + 1 >= double(window)) {
    s *= growth;
    g = 0;
  } else {
    g += 1;
  }
  scaleOut[0] = S(s);
  goodOut[0] = G(g);
}

} // namespace planc::cpu

#endif
