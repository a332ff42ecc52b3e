//===- runtime/kernels/cpu/Position.h - masks and rotations by position ----*- C++ -*-===//
//
// The kernels whose result depends on an element's position: causal_mask
// and its gradient, and rotary embeddings (rope).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_KERNELS_CPU_POSITION_H
#define PLANC_RUNTIME_KERNELS_CPU_POSITION_H

#include "runtime/kernels/cpu/Common.h"

#include <cmath>
#include <vector>

namespace planc::cpu {

/// causal_mask (fill -inf) and causal_mask_grad (fill 0): x copied, `fill`
/// where column > row of the last two dims [rows, cols].
template <typename T>
void causalMask(const T *x, T *y, int64_t matrices, int64_t rows, int64_t cols, double fill, bool accumulate) {
PLANC_OMP(omp parallel for schedule(static))
  for (int64_t m = 0; m < matrices; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        int64_t at = (m * rows + i) * cols + j;
        put(y, at, j > i ? fill : double(x[at]), accumulate);
      }
}

/// rope on x [B, S, N, D]: each pair (i, i + D/2) of a head at position s
/// turned by sign * s * theta^(-2i/D).
template <typename T>
void rope(const T *x, T *y, int64_t B, int64_t S, int64_t N, int64_t D, double theta, bool inverse, bool accumulate) {
  const int64_t half = D / 2;
  const double sign = inverse ? -1.0 : 1.0;
  std::vector<double> freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) freq[size_t(i)] = std::pow(theta, -2.0 * double(i) / double(D));
PLANC_OMP(omp parallel for collapse(2) schedule(static))
  for (int64_t bi = 0; bi < B; ++bi)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t n = 0; n < N; ++n) {
        int64_t base = ((bi * S + s) * N + n) * D;
        for (int64_t i = 0; i < half; ++i) {
          double angle = sign * double(s) * freq[size_t(i)];
          double c = std::cos(angle), sn = std::sin(angle);
          double a = double(x[base + i]), b = double(x[base + i + half]);
          put(y, base + i, a * c - b * sn, accumulate);
          put(y, base + i + half, b * c + a * sn, accumulate);
        }
      }
}

} // namespace planc::cpu

#endif
