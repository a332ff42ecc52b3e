//===- runtime/kernels/cpu/CrossEntropy.h - cross-entropy and its vocab-parallel pieces ----*- C++ -*-===//
//
// cross_entropy and its gradient (in f64, or in f32 for f32 logits), and the
// row statistics and gradient of the vocab-parallel cross-entropy.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_KERNELS_CPU_CROSSENTROPY_H
#define PLANC_RUNTIME_KERNELS_CPU_CROSSENTROPY_H

#include "runtime/FastMath.h"
#include "runtime/kernels/cpu/Common.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace planc::cpu {

/// The log-sum-exp of a row of V logits, in f64.
template <typename T> inline double logSumExp(const T *row, int64_t V) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < V; ++k) mx = std::max(mx, double(row[k]));
  double sum = 0;
  for (int64_t k = 0; k < V; ++k) sum += std::exp(double(row[k]) - mx);
  return mx + std::log(sum);
}

/// The largest of a row of V f32 logits (NaN elements aside: they make
/// every exp below NaN, and so the sum and the result).
inline float rowMax(const float *row, int64_t V) {
  float mx = -std::numeric_limits<float>::infinity();
PLANC_OMP(omp simd reduction(max : mx))
  for (int64_t k = 0; k < V; ++k) mx = row[k] > mx ? row[k] : mx;
  return mx;
}

/// logSumExp of f32 logits, vectorised: the row's max in f32, exp by
/// planc_expf, the sum in f64.
inline double logSumExp(const float *row, int64_t V) {
  const float mx = rowMax(row, V);
  double sum = 0;
PLANC_OMP(omp simd reduction(+ : sum))
  for (int64_t k = 0; k < V; ++k) sum += double(planc_expf(row[k] - mx));
  return double(mx) + std::log(sum);
}

template <typename I>
inline bool checkTargets(const I *targets, int64_t N, int64_t V, const char *op = "cross_entropy") {
  for (int64_t r = 0; r < N; ++r)
    if (int64_t(targets[r]) < 0 || int64_t(targets[r]) >= V) {
      kernelError(std::string(op) + ": target " + std::to_string(int64_t(targets[r])) + " is out of range [0, " +
                  std::to_string(V) + ")");
      return false;
    }
  return true;
}

/// cross_entropy: the sum over N rows of lse(row) - row[target], divided
/// by `denominator` (NaN for 0, as torch's mean of nothing).
template <typename T, typename I, typename R>
void crossEntropy(const T *logits, const I *targets, R *loss, int64_t N, int64_t V, double denominator,
                  bool accumulate) {
  if (!checkTargets(targets, N, V)) return;
  std::vector<double> perRow(static_cast<size_t>(N));
PLANC_OMP(omp parallel for schedule(static))
  for (int64_t r = 0; r < N; ++r)
    perRow[size_t(r)] = logSumExp(logits + r * V, V) - double(logits[r * V + int64_t(targets[r])]);
  double total = 0;
  for (double x : perRow) total += x; // the reference's order
  put(loss, 0, denominator != 0 ? total / denominator : std::numeric_limits<double>::quiet_NaN(), accumulate);
}

/// cross_entropy_grad: (softmax(row) - onehot(target)) * dloss / denominator.
template <typename T, typename I, typename D>
void crossEntropyGrad(const T *logits, const I *targets, const D *dloss, T *dx, int64_t N, int64_t V,
                      double denominator, bool accumulate) {
  if (!checkTargets(targets, N, V)) return;
  const double scale = denominator != 0 ? double(dloss[0]) / denominator : 0.0;
PLANC_OMP(omp parallel for schedule(static))
  for (int64_t r = 0; r < N; ++r) {
    const T *row = logits + r * V;
    const double lse = logSumExp(row, V);
    const int64_t t = int64_t(targets[r]);
    for (int64_t k = 0; k < V; ++k)
      put(dx, r * V + k, std::exp(double(row[k]) - lse) * scale - (k == t ? scale : 0.0), accumulate);
  }
}

/// The same for f32 logits, vectorised: each row's exp(row - max) by
/// planc_expf (written to dx and summed in f64 in one pass), then times
/// dloss / (denominator sum) in f32; the target's element, where f32 would
/// lose the difference of two near-equal terms, in f64.
template <typename I, typename D>
void crossEntropyGrad(const float *logits, const I *targets, const D *dloss, float *dx, int64_t N, int64_t V,
                      double denominator, bool accumulate) {
  if (!checkTargets(targets, N, V)) return;
  const double scale = denominator != 0 ? double(dloss[0]) / denominator : 0.0;
PLANC_OMP(omp parallel for schedule(static))
  for (int64_t r = 0; r < N; ++r) {
    const float *row = logits + r * V;
    float *out = dx + r * V;
    const float mx = rowMax(row, V);
    const int64_t t = int64_t(targets[r]);
    const float before = out[t];
    double sum = 0;
    if (accumulate) {
PLANC_OMP(omp simd reduction(+ : sum))
      for (int64_t k = 0; k < V; ++k) sum += double(planc_expf(row[k] - mx));
      const float c = float(scale / sum);
PLANC_OMP(omp simd)
      for (int64_t k = 0; k < V; ++k) out[k] += planc_expf(row[k] - mx) * c;
    } else {
PLANC_OMP(omp simd reduction(+ : sum))
      for (int64_t k = 0; k < V; ++k) {
        const float e = planc_expf(row[k] - mx);
        out[k] = e;
        sum += double(e);
      }
      const float c = float(scale / sum);
PLANC_OMP(omp simd)
      for (int64_t k = 0; k < V; ++k) out[k] *= c;
    }
    const double lse = double(mx) + std::log(sum);
    const double target = std::exp(double(row[t]) - lse) * scale - scale;
    out[t] = accumulate ? float(double(before) + double(float(target))) : float(target);
  }
}

/// vocab_ce_stats on a rank's columns [first, first + V) of logits whose
/// vocabulary has globalV columns (Megatron's vocab-parallel cross-entropy):
/// per row, the sum over the columns here of exp(logit - rowMax) and the
/// target's logit where this rank holds its column (0 elsewhere), each an
/// addend of a sum over the vocab axis.
template <typename T, typename I, typename M, typename R>
void vocabCeStats(const T *logits, const I *targets, const M *rowMax, R *sumExp, R *targetLogit, int64_t N, int64_t V,
                  int64_t first, int64_t globalV, bool accSum, bool accTarget) {
  if (!checkTargets(targets, N, globalV, "vocab_ce_stats")) return;
PLANC_OMP(omp parallel for schedule(static))
  for (int64_t r = 0; r < N; ++r) {
    const T *row = logits + r * V;
    const double mx = double(rowMax[r]);
    double sum = 0;
    for (int64_t k = 0; k < V; ++k) sum += std::exp(double(row[k]) - mx);
    const int64_t c = int64_t(targets[r]) - first;
    put(sumExp, r, sum, accSum);
    put(targetLogit, r, c >= 0 && c < V ? double(row[c]) : 0.0, accTarget);
  }
}

/// vocab_ce_grad on the same columns: (softmax - onehot(target)) dloss /
/// denominator, the softmax from the global row max and sum of exp.
template <typename T, typename I, typename M, typename S, typename D>
void vocabCeGrad(const T *logits, const I *targets, const M *rowMax, const S *sumExp, const D *dloss, T *dx, int64_t N,
                 int64_t V, int64_t first, int64_t globalV, double denominator, bool accumulate) {
  if (!checkTargets(targets, N, globalV, "vocab_ce_grad")) return;
  const double scale = denominator != 0 ? double(dloss[0]) / denominator : 0.0;
PLANC_OMP(omp parallel for schedule(static))
  for (int64_t r = 0; r < N; ++r) {
    const T *row = logits + r * V;
    const double mx = double(rowMax[r]), sum = double(sumExp[r]);
    const int64_t c = int64_t(targets[r]) - first;
    for (int64_t k = 0; k < V; ++k) {
      double v = std::exp(double(row[k]) - mx) / sum * scale;
      if (k == c) v -= scale; // the target's column, in f64 before the one rounding
      put(dx, r * V + k, v, accumulate);
    }
  }
}

} // namespace planc::cpu

#endif
