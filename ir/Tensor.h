//===- ir/Tensor.h - host tensors of the reference interpreter --*- C++ -*-===//
//
// Row-major, f64 storage whatever the dtype: the interpreter computes in f64
// and rounds each result to its dtype (f32, bf16, f16, fp8), so one kernel
// serves every precision and stays obviously right.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_TENSOR_H
#define PLANC_IR_TENSOR_H

#include "ir/Type.h"

#include <vector>

namespace planc::ir {

struct Tensor {
  Shape shape;
  DType dtype = DType::F64;
  std::vector<double> data;

  Tensor() = default;
  Tensor(Shape s, DType d);
  int64_t numel() const { return int64_t(data.size()); }
  size_t rank() const { return shape.size(); }
  /// Row-major strides in elements.
  std::vector<int64_t> strides() const;
};

/// The nearest value `dtype` can represent (round to nearest even; integers truncate).
double roundTo(DType dtype, double x);
void roundToDType(Tensor &t);

} // namespace planc::ir

#endif
