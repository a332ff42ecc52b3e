//===- runtime/CpuKernels.h - the hand-written kernels of the CPU backend -*- C++ -*-===//
//
// The library class of docs/kernels.md for the CPU: the kernels that are no
// formula, GEMM, gather of bits or row reduction -- masks that depend on the
// position, the embedding's gather and scatter, rotary embeddings, dropout's
// counter-based masks, fused (flash) attention and its gradient,
// cross-entropy and its vocab-parallel pieces, the gradient norm, the
// norms' backward with their weight gradients, the learning-rate schedule,
// SGD, concatenation and repeat_interleave. Generated code (backend/c/
// LibraryKernels.h) calls them through a small wrapper per step that fixes
// the shapes and attributes as constants; where a rank's block of a split
// value is not at a fixed place, the wrapper passes where it lies (a row
// offset, a BlockPlace) from the rank's mesh coordinates.
//
// Each computes as the interpreter's reference kernel (ir/ops/) does: in f64
// from the buffers' elements, rounded once to the result's type, the sums
// in the reference's order where the order changes the rounding (the weight
// gradients, the row statistics) -- except where f64 made the step slow and
// f32 is what every framework computes: cross-entropy and fused attention
// of f32 buffers compute in f32 (overloads below, exp by runtime/FastMath.h,
// row sums in f64), and global_norm sums in parallel in f64, in another
// association. T is the float type of the buffers
// (float, double, or Bf16 and F16 below: 16-bit floats read and rounded
// through runtime/ElementBits.h); index buffers are any integer type. Results are
// written whole (`accumulate` adds them to what the buffer holds, as a step
// that sums micro-batches does).
//
// Errors (an index or target outside its range) are reported through
// kernelError() and the kernel returns; the executable stops after the step
// naming it (runtime/Executable.h).
//
// Header-only: every function is a template or inline, so this file adds no
// code to an executable that does not use it.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_CPUKERNELS_H
#define PLANC_RUNTIME_CPUKERNELS_H

#include "runtime/ElementBits.h"
#include "runtime/FastMath.h"
#include "runtime/Philox.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

// Compiled without OpenMP (the runtime library itself, unit tests), the
// loops run on one thread.
#ifdef _OPENMP
#define PLANC_OMP(directive) _Pragma(#directive)
#else
#define PLANC_OMP(directive)
#endif

namespace planc::cpu {

/// Records the first error of a kernel in this step (thread-safe); the
/// executable reports it after the step and stops.
void kernelError(const std::string &message);
/// The error recorded since the last call, or "" (and clears it).
std::string takeKernelError();

/// A 16-bit float element: its bits, converted from and to f64 as the
/// interpreter rounds (to nearest even, once).
template <runtime::ElementType E> struct Float16 {
  uint16_t bits;
  Float16() = default;
  Float16(double v) : bits(uint16_t(runtime::encodeElement(E, v))) {}
  operator double() const { return runtime::decodeElement(E, bits); }
};
using Bf16 = Float16<runtime::ElementType::BF16>;
using F16 = Float16<runtime::ElementType::F16>;

/// Stores result v (f64) into element i, or adds it: the result rounded to
/// T first, as the interpreter rounds every op's result before a step that
/// accumulates adds it to the buffer (and rounds again).
template <typename T> inline void put(T *out, int64_t i, double v, bool accumulate) {
  out[i] = accumulate ? T(double(out[i]) + double(T(v))) : T(v);
}

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

/// gather: row indices[i] of a table holding global rows [first, first +
/// rows) of `globalRows`, each `width` wide; zeros for another rank's rows.
template <typename T, typename I>
void gather(const T *table, const I *indices, T *out, int64_t count, int64_t rows, int64_t width, int64_t first,
            int64_t globalRows, bool accumulate) {
  for (int64_t i = 0; i < count; ++i) {
    int64_t row = int64_t(indices[i]);
    if (row < 0 || row >= globalRows) {
      kernelError("gather: index " + std::to_string(row) + " is out of range [0, " + std::to_string(globalRows) + ")");
      return;
    }
  }
PLANC_OMP(omp parallel for schedule(static))
  for (int64_t i = 0; i < count; ++i) {
    int64_t row = int64_t(indices[i]) - first;
    bool here = row >= 0 && row < rows;
    for (int64_t k = 0; k < width; ++k) put(out, i * width + k, here ? double(table[row * width + k]) : 0.0, accumulate);
  }
}

/// scatter_add: the rows of dy summed into the rows the indices name (the
/// table's rows [first, first + rows) of `globalRows`), in index order.
/// Each named row's sum is in f64 and stored once, as the reference does;
/// the rows no index names are zeros (or, accumulating, what they were).
/// The work is the named rows', not the table's: an embedding's gradient
/// names a few hundred of 50k rows.
template <typename T, typename I>
void scatterAdd(const I *indices, const T *dy, T *table, int64_t count, int64_t rows, int64_t width, int64_t first,
                int64_t globalRows, bool accumulate) {
  std::vector<int64_t> order; // the entries here, by row, each row's in index order
  order.reserve(size_t(count));
  for (int64_t i = 0; i < count; ++i) {
    int64_t row = int64_t(indices[i]);
    if (row < 0 || row >= globalRows) {
      kernelError("scatter_add: index " + std::to_string(row) + " is out of range [0, " +
                  std::to_string(globalRows) + ")");
      return;
    }
    if (row - first >= 0 && row - first < rows) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return int64_t(indices[a]) < int64_t(indices[b]); });
  if (!accumulate) {
PLANC_OMP(omp parallel for simd schedule(static))
    for (int64_t e = 0; e < rows * width; ++e) table[e] = T(0.0);
  }
  std::vector<size_t> starts; // where each named row's run of entries begins
  for (size_t k = 0; k < order.size(); ++k)
    if (k == 0 || indices[order[k]] != indices[order[k - 1]]) starts.push_back(k);
  starts.push_back(order.size());
  const int64_t named = int64_t(starts.size()) - 1;
PLANC_OMP(omp parallel)
  {
    std::vector<double> sum(static_cast<size_t>(width));
PLANC_OMP(omp for schedule(dynamic, 8))
    for (int64_t u = 0; u < named; ++u) {
      std::fill(sum.begin(), sum.end(), 0.0);
      for (size_t k = starts[size_t(u)]; k < starts[size_t(u) + 1]; ++k) {
        const T *src = dy + order[k] * width;
        for (int64_t c = 0; c < width; ++c) sum[size_t(c)] += double(src[c]);
      }
      const int64_t row = int64_t(indices[order[starts[size_t(u)]]]) - first;
      for (int64_t c = 0; c < width; ++c) put(table, row * width + c, sum[size_t(c)], accumulate);
    }
  }
}

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

/// Where a rank's block of a value lies in the global value (ir/LocalBlocks.h),
/// per dim: the block's size (it is stored row-major at that size), how
/// many of its rows hold data (the rest is the padding of an uneven split),
/// the global size and the block's first global index. Generated code fills
/// it from the rank's mesh coordinates (backend/c/RankPlace.h).
struct BlockPlace {
  static constexpr int kMaxRank = 8;
  int rank = 0;
  int64_t local[kMaxRank] = {}, data[kMaxRank] = {}, global[kMaxRank] = {}, offset[kMaxRank] = {};

  /// The global row-major index of element i of the block, -1 for padding
  /// (ir::globalIndices).
  int64_t globalIndex(int64_t i) const {
    int64_t g = 0, stride = 1;
    for (int d = rank; d-- > 0;) {
      const int64_t c = i % local[d];
      i /= local[d];
      if (c >= data[d]) return -1;
      g += (c + offset[d]) * stride;
      stride *= global[d];
    }
    return g;
  }
  int64_t globalElements() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= global[d];
    return n;
  }
  int64_t globalRows() const { return rank > 0 ? global[0] : 0; }
};

/// The Philox counter of element i of a dropout mask over `n` elements in
/// `rows` rows: i itself, but for a micro-batch of a batch cut into
/// `split[1]` micro-batches on `split[0]` row blocks, of which this is number
/// split[2], its index in the whole batch's mask (as the interpreter counts).
/// With a `place`, the elements are a rank's block of that value: i is
/// first mapped to its index in the global value, whose elements and rows
/// the batch_split rule reads (n and rows are not used then).
struct MaskCounter {
  MaskCounter(int64_t n, int64_t rows, const int64_t *split, const BlockPlace *place = nullptr)
      : split(split), place(place) {
    if (place) { // the batch_split rule reads the whole value's rows
      n = place->globalElements();
      rows = place->globalRows();
    }
    width = rows > 0 ? n / rows : 0;
    remap = split && rows > 0 && width > 0 && split[0] > 0 && rows % split[0] == 0;
    perBlock = remap ? rows / split[0] : 1;
  }
  int64_t operator()(int64_t i) const {
    const int64_t g = place ? place->globalIndex(i) : i;
    if (!remap) return g;
    int64_t r = g / width, d = r / perBlock, k = r % perBlock;
    return (d * split[1] * perBlock + split[2] * perBlock + k) * width + g % width;
  }
  const int64_t *split;
  const BlockPlace *place;
  int64_t width = 0;
  bool remap = false;
  int64_t perBlock = 1;
};

/// Dropout's Philox key from its attributes and the step's draw seed.
inline uint64_t dropoutKey(uint64_t attrSeed, uint64_t stream, uint64_t stepSeed) {
  return ((attrSeed << 32) + stream) ^ (stepSeed * 0x9E3779B97F4A7C15ull);
}

/// dropout: element g of the global value kept (and scaled by 1/(1-p))
/// where philoxUniform(key, g) >= p. The n elements here are the whole value
/// of `rows` rows, or with a `place` a rank's block of it, counted as
/// MaskCounter says.
template <typename T>
void dropout(const T *x, T *y, int64_t n, int64_t rows, double p, uint64_t attrSeed, uint64_t stream,
             uint64_t stepSeed, const int64_t *split, bool accumulate, const BlockPlace *place = nullptr) {
  const uint64_t key = dropoutKey(attrSeed, stream, stepSeed);
  const double keepScale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  const MaskCounter counter(n, rows, split, place);
PLANC_OMP(omp parallel for schedule(static))
  for (int64_t i = 0; i < n; ++i) {
    if (p == 0) {
      put(y, i, double(x[i]), accumulate);
      continue;
    }
    put(y, i, runtime::philoxUniform(key, uint64_t(counter(i))) >= p ? double(x[i]) * keepScale : 0.0, accumulate);
  }
}

/// The shape of a fused attention: `matrices` (batch x heads) of q [S, D],
/// k [Tk, D], v [Tk, E]; the dropout mask is over the [matrices, S, Tk]
/// probabilities whose first dim has `rows` rows (the batch), or, with a
/// `place`, over the global probabilities of which these are a rank's block.
struct FlashShape {
  int64_t matrices, S, Tk, D, E, rows;
  double scale;
  bool causal;
  double p;
  uint64_t key;
  const int64_t *split;
  const BlockPlace *place = nullptr;
};

/// Per row of scores: scale q_i . k_j in f64, -inf where masked.
template <typename T>
inline void flashScores(const FlashShape &f, const T *q, const T *k, int64_t b, int64_t i, double *score) {
  const T *qi = q + (b * f.S + i) * f.D;
  for (int64_t j = 0; j < f.Tk; ++j) {
    if (f.causal && j > i) {
      score[j] = -std::numeric_limits<double>::infinity();
      continue;
    }
    const T *kj = k + (b * f.Tk + j) * f.D;
    double dot = 0;
    for (int64_t c = 0; c < f.D; ++c) dot += double(qi[c]) * double(kj[c]);
    score[j] = f.scale * dot;
  }
}

/// flash_attention: per row, the scores, their log-sum-exp and the output
/// softmax(scores) (dropped) v; no s x t value exists beyond one row per
/// thread. As ir/ops/FlashAttention.cpp's reference, in f64.
template <typename T, typename L>
void flashAttention(const T *q, const T *k, const T *v, T *out, L *lse, const FlashShape f, bool accOut, bool accLse) {
  const MaskCounter counter(f.matrices * f.S * f.Tk, f.rows, f.split, f.place);
  const double keepScale = f.p < 1 ? 1.0 / (1.0 - f.p) : 0.0;
PLANC_OMP(omp parallel)
  {
    std::vector<double> score(size_t(std::max<int64_t>(f.Tk, 1))), acc(size_t(std::max<int64_t>(f.E, 1)));
PLANC_OMP(omp for schedule(static) collapse(2))
    for (int64_t b = 0; b < f.matrices; ++b)
      for (int64_t i = 0; i < f.S; ++i) {
        flashScores(f, q, k, b, i, score.data());
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < f.Tk; ++j) mx = std::max(mx, score[size_t(j)]);
        double sum = 0;
        for (int64_t j = 0; j < f.Tk; ++j) sum += std::exp(score[size_t(j)] - mx);
        const double rowLse = mx + std::log(sum);
        put(lse, b * f.S + i, rowLse, accLse);
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < f.Tk; ++j) {
          double pz = std::exp(score[size_t(j)] - rowLse);
          if (f.p > 0) {
            int64_t g = counter((b * f.S + i) * f.Tk + j);
            pz *= runtime::philoxUniform(f.key, uint64_t(g)) >= f.p ? keepScale : 0.0;
          }
          if (pz == 0) continue;
          const T *vj = v + (b * f.Tk + j) * f.E;
          for (int64_t c = 0; c < f.E; ++c) acc[size_t(c)] += pz * double(vj[c]);
        }
        for (int64_t c = 0; c < f.E; ++c) put(out, (b * f.S + i) * f.E + c, acc[size_t(c)], accOut);
      }
  }
}

/// flash_attention_grad: each matrix on one thread (dk and dv sum over its
/// rows): the probabilities recomputed from lse, then dv, dP, dS, dq, dk as
/// ir/ops/FlashAttention.cpp's reference, in f64.
template <typename T, typename L>
void flashAttentionGrad(const T *q, const T *k, const T *v, const T *out, const L *lse, const T *dout, T *dq, T *dk,
                        T *dv, const FlashShape f, bool accQ, bool accK, bool accV) {
  const MaskCounter counter(f.matrices * f.S * f.Tk, f.rows, f.split, f.place);
  const double keepScale = f.p < 1 ? 1.0 / (1.0 - f.p) : 0.0;
PLANC_OMP(omp parallel)
  {
    std::vector<double> score(size_t(std::max<int64_t>(f.Tk, 1))), dqRow(size_t(std::max<int64_t>(f.D, 1)));
    std::vector<double> dkAcc(size_t(f.Tk * f.D)), dvAcc(size_t(f.Tk * f.E));
PLANC_OMP(omp for schedule(static))
    for (int64_t b = 0; b < f.matrices; ++b) {
      std::fill(dkAcc.begin(), dkAcc.end(), 0.0);
      std::fill(dvAcc.begin(), dvAcc.end(), 0.0);
      for (int64_t i = 0; i < f.S; ++i) {
        const T *oi = out + (b * f.S + i) * f.E, *doi = dout + (b * f.S + i) * f.E, *qi = q + (b * f.S + i) * f.D;
        double rowDot = 0;
        for (int64_t c = 0; c < f.E; ++c) rowDot += double(doi[c]) * double(oi[c]);
        const double rowLse = double(lse[b * f.S + i]);
        flashScores(f, q, k, b, i, score.data());
        std::fill(dqRow.begin(), dqRow.end(), 0.0);
        for (int64_t j = 0; j < f.Tk; ++j) {
          if (f.causal && j > i) continue;
          const double pr = std::exp(score[size_t(j)] - rowLse);
          double z = 1.0;
          if (f.p > 0) {
            int64_t g = counter((b * f.S + i) * f.Tk + j);
            z = runtime::philoxUniform(f.key, uint64_t(g)) >= f.p ? keepScale : 0.0;
          }
          const T *vj = v + (b * f.Tk + j) * f.E, *kj = k + (b * f.Tk + j) * f.D;
          double *dvj = &dvAcc[size_t(j * f.E)], *dkj = &dkAcc[size_t(j * f.D)];
          double dp = 0;
          for (int64_t c = 0; c < f.E; ++c) {
            dvj[c] += pr * z * double(doi[c]);
            dp += double(doi[c]) * double(vj[c]);
          }
          const double ds = pr * (z * dp - rowDot) * f.scale;
          for (int64_t c = 0; c < f.D; ++c) {
            dqRow[size_t(c)] += ds * double(kj[c]);
            dkj[c] += ds * double(qi[c]);
          }
        }
        for (int64_t c = 0; c < f.D; ++c) put(dq, (b * f.S + i) * f.D + c, dqRow[size_t(c)], accQ);
      }
      for (int64_t x = 0; x < f.Tk * f.D; ++x) put(dk, b * f.Tk * f.D + x, dkAcc[size_t(x)], accK);
      for (int64_t x = 0; x < f.Tk * f.E; ++x) put(dv, b * f.Tk * f.E + x, dvAcc[size_t(x)], accV);
    }
  }
}

/// The f32 path of fused attention (forward and gradient): the same steps
/// in f32 over one matrix at a time, written so that every inner loop runs
/// along contiguous memory and vectorises -- k and v are transposed once
/// per matrix into per-thread buffers (so a row of scores is a sum of rows
/// of k^T), exp is planc_expf, the 64-odd-term dot products are summed in
/// f32 and the row statistics in f64. Within 1e-5 relative of the f64
/// reference (tests/unit/backend/LibraryKernelsTest.cpp).
struct FlashF32Matrix {
  std::vector<float> kT, vT, score, prob, keep;
  void transpose(const float *x, int64_t rows, int64_t cols, std::vector<float> &xT) {
    xT.resize(size_t(rows * cols));
    for (int64_t j = 0; j < rows; ++j)
      for (int64_t c = 0; c < cols; ++c) xT[size_t(c * rows + j)] = x[j * cols + c];
  }
  /// score[j] = scale q_i . k_j for j < end (k^T in kT, Tk columns).
  void scores(const FlashShape &f, const float *qi, int64_t end) {
    float *s = score.data();
    const float *kt = kT.data();
    for (int64_t j = 0; j < end; ++j) s[j] = 0;
    for (int64_t c = 0; c < f.D; ++c) {
      const float qc = qi[c];
      const float *row = kt + c * f.Tk;
PLANC_OMP(omp simd)
      for (int64_t j = 0; j < end; ++j) s[j] += qc * row[j];
    }
    const float scale = float(f.scale);
PLANC_OMP(omp simd)
    for (int64_t j = 0; j < end; ++j) s[j] *= scale;
  }
  /// keep[j]: dropout's factor of score (b, i, j) (0 or 1 / (1 - p)).
  void dropMask(const FlashShape &f, const MaskCounter &counter, int64_t b, int64_t i, int64_t end) {
    const float keepScale = f.p < 1 ? float(1.0 / (1.0 - f.p)) : 0.0f;
    for (int64_t j = 0; j < end; ++j)
      keep[size_t(j)] =
          runtime::philoxUniform(f.key, uint64_t(counter((b * f.S + i) * f.Tk + j))) >= f.p ? keepScale : 0.0f;
  }
  void size(const FlashShape &f) {
    score.resize(size_t(std::max<int64_t>(f.Tk, 1)));
    prob.resize(score.size());
    keep.resize(score.size());
  }
};

template <typename L>
void flashAttention(const float *q, const float *k, const float *v, float *out, L *lse, const FlashShape f,
                    bool accOut, bool accLse) {
  const MaskCounter counter(f.matrices * f.S * f.Tk, f.rows, f.split, f.place);
PLANC_OMP(omp parallel)
  {
    FlashF32Matrix m;
    m.size(f);
    std::vector<float> acc(size_t(std::max<int64_t>(f.E, 1)));
PLANC_OMP(omp for schedule(static))
    for (int64_t b = 0; b < f.matrices; ++b) {
      m.transpose(k + b * f.Tk * f.D, f.Tk, f.D, m.kT);
      for (int64_t i = 0; i < f.S; ++i) {
        const int64_t end = f.causal ? std::min(i + 1, f.Tk) : f.Tk;
        m.scores(f, q + (b * f.S + i) * f.D, end);
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < end; ++j) mx = std::max(mx, m.score[size_t(j)]);
        float *p = m.prob.data();
        const float *s = m.score.data();
        double sum = 0;
PLANC_OMP(omp simd reduction(+ : sum))
        for (int64_t j = 0; j < end; ++j) {
          p[j] = planc_expf(s[j] - mx);
          sum += double(p[j]);
        }
        const double rowLse = double(mx) + std::log(sum);
        put(lse, b * f.S + i, rowLse, accLse);
        const float inv = float(1.0 / sum);
        if (f.p > 0) {
          m.dropMask(f, counter, b, i, end);
          for (int64_t j = 0; j < end; ++j) p[j] *= m.keep[size_t(j)];
        }
        std::fill(acc.begin(), acc.end(), 0.0f);
        float *a = acc.data();
        for (int64_t j = 0; j < end; ++j) {
          const float pj = p[j] * inv;
          const float *vj = v + (b * f.Tk + j) * f.E;
PLANC_OMP(omp simd)
          for (int64_t c = 0; c < f.E; ++c) a[c] += pj * vj[c];
        }
        float *o = out + (b * f.S + i) * f.E;
        if (accOut) {
PLANC_OMP(omp simd)
          for (int64_t c = 0; c < f.E; ++c) o[c] += a[c];
        } else {
PLANC_OMP(omp simd)
          for (int64_t c = 0; c < f.E; ++c) o[c] = a[c];
        }
      }
    }
  }
}

template <typename L>
void flashAttentionGrad(const float *q, const float *k, const float *v, const float *out, const L *lse,
                        const float *dout, float *dq, float *dk, float *dv, const FlashShape f, bool accQ, bool accK,
                        bool accV) {
  const MaskCounter counter(f.matrices * f.S * f.Tk, f.rows, f.split, f.place);
  const float scale = float(f.scale);
PLANC_OMP(omp parallel)
  {
    FlashF32Matrix m;
    m.size(f);
    std::vector<float> dp(m.score.size()), ds(m.score.size()), dqRow(size_t(std::max<int64_t>(f.D, 1)));
    std::vector<float> dkAcc(size_t(f.Tk * f.D)), dvAcc(size_t(f.Tk * f.E));
PLANC_OMP(omp for schedule(static))
    for (int64_t b = 0; b < f.matrices; ++b) {
      m.transpose(k + b * f.Tk * f.D, f.Tk, f.D, m.kT);
      m.transpose(v + b * f.Tk * f.E, f.Tk, f.E, m.vT);
      std::fill(dkAcc.begin(), dkAcc.end(), 0.0f);
      std::fill(dvAcc.begin(), dvAcc.end(), 0.0f);
      for (int64_t i = 0; i < f.S; ++i) {
        const int64_t end = f.causal ? std::min(i + 1, f.Tk) : f.Tk;
        const float *oi = out + (b * f.S + i) * f.E, *doi = dout + (b * f.S + i) * f.E,
                    *qi = q + (b * f.S + i) * f.D;
        float rowDot = 0;
PLANC_OMP(omp simd reduction(+ : rowDot))
        for (int64_t c = 0; c < f.E; ++c) rowDot += doi[c] * oi[c];
        m.scores(f, qi, end);
        const float rowLse = float(lse[b * f.S + i]);
        float *p = m.prob.data(), *dpj = dp.data(), *dsj = ds.data();
        const float *s = m.score.data();
PLANC_OMP(omp simd)
        for (int64_t j = 0; j < end; ++j) {
          p[j] = planc_expf(s[j] - rowLse);
          dpj[j] = 0;
        }
        // dP[j] = dout_i . v_j, as a sum of rows of v^T.
        for (int64_t c = 0; c < f.E; ++c) {
          const float dc = doi[c];
          const float *row = m.vT.data() + c * f.Tk;
PLANC_OMP(omp simd)
          for (int64_t j = 0; j < end; ++j) dpj[j] += dc * row[j];
        }
        if (f.p > 0) {
          m.dropMask(f, counter, b, i, end);
          for (int64_t j = 0; j < end; ++j) {
            dsj[j] = p[j] * (m.keep[size_t(j)] * dpj[j] - rowDot) * scale;
            p[j] *= m.keep[size_t(j)]; // dv's weight: the kept probability
          }
        } else {
PLANC_OMP(omp simd)
          for (int64_t j = 0; j < end; ++j) dsj[j] = p[j] * (dpj[j] - rowDot) * scale;
        }
        std::fill(dqRow.begin(), dqRow.end(), 0.0f);
        float *dqr = dqRow.data();
        for (int64_t j = 0; j < end; ++j) {
          const float pj = p[j], sj = dsj[j];
          const float *kj = k + (b * f.Tk + j) * f.D;
          float *dvj = dvAcc.data() + j * f.E, *dkj = dkAcc.data() + j * f.D;
PLANC_OMP(omp simd)
          for (int64_t c = 0; c < f.E; ++c) dvj[c] += pj * doi[c];
PLANC_OMP(omp simd)
          for (int64_t c = 0; c < f.D; ++c) {
            dqr[c] += sj * kj[c];
            dkj[c] += sj * qi[c];
          }
        }
        for (int64_t c = 0; c < f.D; ++c) put(dq, (b * f.S + i) * f.D + c, double(dqr[c]), accQ);
      }
      for (int64_t x = 0; x < f.Tk * f.D; ++x) put(dk, b * f.Tk * f.D + x, double(dkAcc[size_t(x)]), accK);
      for (int64_t x = 0; x < f.Tk * f.E; ++x) put(dv, b * f.Tk * f.E + x, double(dvAcc[size_t(x)]), accV);
    }
  }
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

/// Copies `outer` blocks of `block` elements of `src` into `dst`, whose
/// blocks are `dstStride` apart, starting at `dstOffset` (concat's operands
/// and repeat_interleave's copies are such blocks).
template <typename T>
void copyBlocks(const T *src, T *dst, int64_t outer, int64_t block, int64_t dstStride, int64_t dstOffset,
                int64_t repeats, bool accumulate) {
PLANC_OMP(omp parallel for schedule(static))
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < repeats; ++r)
      for (int64_t k = 0; k < block; ++k)
        put(dst, o * dstStride + dstOffset + r * block + k, double(src[o * block + k]), accumulate);
}

} // namespace planc::cpu

#endif
