//===- runtime/kernels/cpu/Dropout.h - counter-based dropout masks ----*- C++ -*-===//
//
// Dropout's masks from Philox (numerics/Philox.h, the interpreter's
// generator) counted by the elements' global indices, so every rank, every
// recomputation and the interpreter draw the same mask; BlockPlace says
// where a rank's block lies in the global value.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_KERNELS_CPU_DROPOUT_H
#define PLANC_RUNTIME_KERNELS_CPU_DROPOUT_H

#include "runtime/Philox.h"
#include "runtime/kernels/cpu/Common.h"

#include <cstdint>

namespace planc::cpu {

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

} // namespace planc::cpu

#endif
