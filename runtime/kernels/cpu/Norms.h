//===- runtime/kernels/cpu/Norms.h - the gradient norm and the norms' backward ----*- C++ -*-===//
//
// global_norm's sum of squares, and layer_norm_grad / rms_norm_grad with
// their weight (and bias) gradients.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_KERNELS_CPU_NORMS_H
#define PLANC_RUNTIME_KERNELS_CPU_NORMS_H

#include "runtime/kernels/cpu/Common.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace planc::cpu {

/// `sum` plus the squares of n elements, in f64: global_norm's running sum
/// over all its operands. The elements are summed in parallel (a fixed
/// association for a fixed thread count, so a run repeats bit for bit); the
/// reference adds them in order, so the f64 sums differ in their last bits.
template <typename T> inline double addSquares(double sum, const T *x, int64_t n) {
  double part = 0;
PLANC_OMP(omp parallel for simd reduction(+ : part) schedule(static) if (n > 32768))
  for (int64_t i = 0; i < n; ++i) part += double(x[i]) * double(x[i]);
  return sum + part;
}

/// layernorm_grad (centered) and rmsnorm_grad: dx per row; dw (and db) the
/// sums over rows of dy * xhat (and dy), each column's in row order.
template <typename T>
void normGrad(const T *x, const T *w, const T *dy, T *dx, T *dw, T *db, int64_t rows, int64_t h, double eps,
              bool centered, bool accDx, bool accDw, bool accDb) {
  std::vector<double> mean(static_cast<size_t>(rows), 0.0), rstd(static_cast<size_t>(rows));
PLANC_OMP(omp parallel for schedule(static))
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * h, *dyr = dy + r * h;
    double mu = 0;
    if (centered) {
      for (int64_t i = 0; i < h; ++i) mu += double(xr[i]);
      mu /= double(h);
    }
    double var = 0;
    for (int64_t i = 0; i < h; ++i) var += (double(xr[i]) - mu) * (double(xr[i]) - mu);
    var /= double(h);
    const double rs = 1.0 / std::sqrt(var + eps);
    mean[size_t(r)] = mu;
    rstd[size_t(r)] = rs;
    double meanG = 0, meanGX = 0;
    for (int64_t i = 0; i < h; ++i) {
      double g = double(dyr[i]) * double(w[i]), xhat = (double(xr[i]) - mu) * rs;
      meanG += g;
      meanGX += g * xhat;
    }
    meanG /= double(h);
    meanGX /= double(h);
    for (int64_t i = 0; i < h; ++i) {
      double g = double(dyr[i]) * double(w[i]), xhat = (double(xr[i]) - mu) * rs;
      put(dx, r * h + i, rs * (g - (centered ? meanG : 0.0) - xhat * meanGX), accDx);
    }
  }
PLANC_OMP(omp parallel for schedule(static))
  for (int64_t i = 0; i < h; ++i) {
    double sw = 0, sb = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double d = double(dy[r * h + i]);
      sw += d * ((double(x[r * h + i]) - mean[size_t(r)]) * rstd[size_t(r)]);
      sb += d;
    }
    put(dw, i, sw, accDw);
    if (centered) put(db, i, sb, accDb);
  }
}

} // namespace planc::cpu

#endif
