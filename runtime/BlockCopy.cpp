//===- runtime/BlockCopy.cpp - moving the overlap of two blocks of one tensor ===//

#include "runtime/BlockCopy.h"

#include <algorithm>
#include <cstring>

using namespace planc::runtime;

namespace {

/// The overlap's first and end global index in dim d (end <= first: none).
void overlapOf(const Block &a, const Block &b, const std::vector<int64_t> &global, size_t d, int64_t &first,
               int64_t &end) {
  first = std::max(a.offset[d], b.offset[d]);
  end = std::min({a.offset[d] + a.shape[d], b.offset[d] + b.shape[d], global[d]});
}

} // namespace

int64_t planc::runtime::copyOverlap(const uint8_t *src, const Block &from, uint8_t *dst, const Block &to,
                                    const std::vector<int64_t> &global, unsigned elementBytes) {
  const size_t rank = global.size();
  if (from.shape.size() != rank || to.shape.size() != rank || from.offset.size() != rank || to.offset.size() != rank)
    return 0;
  if (rank == 0) {
    std::memcpy(dst, src, elementBytes);
    return 1;
  }
  std::vector<int64_t> first(rank), end(rank);
  for (size_t d = 0; d < rank; ++d) {
    overlapOf(from, to, global, d, first[d], end[d]);
    if (end[d] <= first[d]) return 0;
  }
  // Row-major strides of both layouts; the last dim is copied as one run.
  std::vector<int64_t> srcStride(rank, 1), dstStride(rank, 1);
  for (size_t d = rank - 1; d > 0; --d) {
    srcStride[d - 1] = srcStride[d] * from.shape[d];
    dstStride[d - 1] = dstStride[d] * to.shape[d];
  }
  const int64_t run = end[rank - 1] - first[rank - 1];
  std::vector<int64_t> index(first); // the global index of the run's start
  int64_t copied = 0;
  for (;;) {
    int64_t s = 0, t = 0;
    for (size_t d = 0; d < rank; ++d) {
      s += (index[d] - from.offset[d]) * srcStride[d];
      t += (index[d] - to.offset[d]) * dstStride[d];
    }
    std::memcpy(dst + size_t(t) * elementBytes, src + size_t(s) * elementBytes, size_t(run) * elementBytes);
    copied += run;
    // The next run: count up the dims before the last.
    size_t d = rank - 1;
    while (d > 0) {
      --d;
      if (++index[d] < end[d]) break;
      index[d] = first[d];
      if (d == 0) return copied;
    }
    if (rank == 1) return copied;
  }
}

int64_t planc::runtime::elementsInside(const Block &to, const std::vector<int64_t> &global) {
  int64_t n = 1;
  for (size_t d = 0; d < global.size() && d < to.shape.size(); ++d)
    n *= std::max<int64_t>(0, std::min(to.offset[d] + to.shape[d], global[d]) - to.offset[d]);
  return n;
}
