//===- runtime/kernels/cpu/Indexing.h - gather, scatter and block copies ----*- C++ -*-===//
//
// The embedding's gather and scatter_add (of a vocab-split table: the rank's
// rows from its offset on), and the block copies of concat and
// repeat_interleave.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_KERNELS_CPU_INDEXING_H
#define PLANC_RUNTIME_KERNELS_CPU_INDEXING_H

#include "runtime/kernels/cpu/Common.h"

#include <algorithm>
#include <string>
#include <vector>

namespace planc::cpu {

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
