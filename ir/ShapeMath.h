//===- ir/ShapeMath.h - arithmetic on shapes ---------------------*- C++ -*-===//
//
// The shape arithmetic the op table's rules and the code generators share:
// negative dims, NumPy broadcasting, element counts and row-major strides.
// One definition each, so that a kernel the backend renders walks its
// buffers exactly as the reference kernel walks its tensors.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_SHAPEMATH_H
#define PLANC_IR_SHAPEMATH_H

#include "ir/Type.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace planc::ir {

/// `dim` in [-rank, rank) made non-negative; nullopt when out of range.
std::optional<int64_t> normalizeDim(int64_t dim, size_t rank);
/// The NumPy broadcast of `a` and `b`; nullopt when they do not broadcast.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);
/// True if `from` broadcasts to `to` (aligned at the right, each dim equal or 1).
bool broadcastsTo(const Shape &from, const Shape &to);
/// The product of dims [begin, end) of `s` (all of them by default; 1 for none).
int64_t product(const Shape &s, size_t begin = 0, size_t end = ~size_t(0));
/// The row-major strides of `s`, in elements (the last dim's is 1).
std::vector<int64_t> rowMajorStrides(const Shape &s);
/// Strides that read a tensor of shape `from` while walking `to`: 0 along
/// broadcast dims (missing on the left, or 1 where `to` is larger).
std::vector<int64_t> broadcastStrides(const Shape &from, const Shape &to);

} // namespace planc::ir

#endif
