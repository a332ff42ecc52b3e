//===- ir/Tensor.cpp - host tensors and rounding to a dtype --------------===//

#include "ir/Tensor.h"

#include "ir/ShapeMath.h"
#include "numerics/ElementBits.h"

using namespace planc;
using namespace planc::ir;

Tensor::Tensor(Shape s, DType d) : shape(std::move(s)), dtype(d) {
  int64_t n = 1;
  for (int64_t dim : shape) n *= dim < 0 ? 0 : dim;
  data.assign(size_t(n), 0.0);
}

std::vector<int64_t> Tensor::strides() const { return rowMajorStrides(shape); }

double ir::roundTo(DType dtype, double x) { return numerics::roundToElement(elementTypeOf(dtype), x); }

void ir::roundToDType(Tensor &t) {
  if (t.dtype == DType::F64) return;
  const numerics::ElementType type = elementTypeOf(t.dtype);
  for (double &x : t.data) x = numerics::roundToElement(type, x);
}
