//===- ir/ShapeMath.cpp - arithmetic on shapes ----------------------------===//

#include "ir/ShapeMath.h"

#include <algorithm>

using namespace planc;
using namespace planc::ir;

std::optional<int64_t> ir::normalizeDim(int64_t dim, size_t rank) {
  int64_t r = int64_t(rank);
  if (dim < -r || dim >= r) return std::nullopt;
  return dim < 0 ? dim + r : dim;
}

std::optional<Shape> ir::broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Aligned at the right: dim i of the result is dim i - (rank - size) of each operand.
    int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool ir::broadcastsTo(const Shape &from, const Shape &to) {
  if (from.size() > to.size()) return false;
  size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  return true;
}

int64_t ir::product(const Shape &s, size_t begin, size_t end) {
  end = std::min(end, s.size());
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= s[i];
  return n;
}

std::vector<int64_t> ir::rowMajorStrides(const Shape &s) {
  std::vector<int64_t> strides(s.size());
  int64_t stride = 1;
  for (size_t i = s.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= s[i];
  }
  return strides;
}

std::vector<int64_t> ir::broadcastStrides(const Shape &from, const Shape &to) {
  std::vector<int64_t> own = rowMajorStrides(from);
  std::vector<int64_t> strides(to.size(), 0);
  size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) strides[lead + i] = from[i] == 1 && to[lead + i] != 1 ? 0 : own[i];
  return strides;
}
