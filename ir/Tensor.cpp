//===- ir/Tensor.cpp - host tensors and rounding to a dtype --------------===//

#include "ir/Tensor.h"

#include "numerics/ElementBits.h"

using namespace planc;
using namespace planc::ir;

Tensor::Tensor(Shape s, DType d) : shape(std::move(s)), dtype(d) {
  int64_t n = 1;
  for (int64_t dim : shape) n *= dim < 0 ? 0 : dim;
  data.assign(size_t(n), 0.0);
}

std::vector<int64_t> Tensor::strides() const {
  std::vector<int64_t> result(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    result[i] = stride;
    stride *= shape[i];
  }
  return result;
}

// The dtypes are numerics' element types by value (ir/Type.cpp checks it).
double ir::roundTo(DType dtype, double x) { return numerics::roundToElement(numerics::ElementType(unsigned(dtype)), x); }

void ir::roundToDType(Tensor &t) {
  if (t.dtype == DType::F64) return;
  const auto type = numerics::ElementType(unsigned(t.dtype));
  for (double &x : t.data) x = numerics::roundToElement(type, x);
}
