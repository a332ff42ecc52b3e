//===- tests/unit/backend/RandomTensors.h - random inputs for kernel tests -*- C++ -*-===//
//
// The inputs the compiled-kernel tests feed both the rendered kernel and
// the interpreter: uniform values rounded to the tensor's dtype, values
// away from zero (a dropped element is told from a kept one), indices in a
// range, scalars. One seeded generator per test file keeps its cases fixed.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_TESTS_UNIT_BACKEND_RANDOMTENSORS_H
#define PLANC_TESTS_UNIT_BACKEND_RANDOMTENSORS_H

#include "backend/interp/TensorAdapters.h"
#include "ir/Tensor.h"
#include "runtime/ElementBits.h"

#include <random>

namespace planc::testing {

class RandomTensors {
public:
  explicit RandomTensors(uint64_t seed) : rng(seed) {}

  /// `shape` of uniform values in [lo, hi), rounded to `t`.
  ir::Tensor uniform(Shape shape, ir::DType t, double lo = -2.0, double hi = 2.0) {
    std::uniform_real_distribution<double> dist(lo, hi);
    ir::Tensor x(std::move(shape), t);
    for (double &v : x.data) v = runtime::roundToElement(interp::toElementType(t), dist(rng));
    return x;
  }

  /// Values with |x| in [0.25, 2]: a dropped element (0) is told from a kept one.
  ir::Tensor awayFromZero(Shape shape, ir::DType t) {
    ir::Tensor x = uniform(std::move(shape), t, 0.25, 2.0);
    std::bernoulli_distribution coin;
    for (double &v : x.data)
      if (coin(rng)) v = -v;
    return x;
  }

  /// Integers in [0, bound).
  ir::Tensor indices(Shape shape, int64_t bound, ir::DType t = ir::DType::I32) {
    std::uniform_int_distribution<int64_t> dist(0, bound - 1);
    ir::Tensor x(std::move(shape), t);
    for (double &v : x.data) v = double(dist(rng));
    return x;
  }

private:
  std::mt19937_64 rng;
};

/// A scalar of `t` holding v rounded to it.
inline ir::Tensor scalarTensor(double v, ir::DType t) {
  ir::Tensor x({}, t);
  x.data = {runtime::roundToElement(interp::toElementType(t), v)};
  return x;
}

} // namespace planc::testing

#endif
