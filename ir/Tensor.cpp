//===- ir/Tensor.cpp - host tensors and rounding to a dtype --------------===//

#include "ir/Tensor.h"

#include <cmath>
#include <cstdint>
#include <limits>

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

namespace {

/// A binary floating-point format narrower than f64.
struct FloatFormat {
  int mantissaBits; // stored fraction bits
  int minExponent;  // exponent of the smallest normal number (1 - bias)
  double maxFinite;
  bool hasInfinity; // false: overflow and infinities become NaN (fp8 e4m3 "fn")
};

// f16 and bf16 are IEEE-like. fp8 follows the OCP 8-bit formats as PyTorch's
// float8_e4m3fn and float8_e5m2: e4m3 has no infinities (its top code is NaN,
// so the largest finite value is 448 and anything that rounds above it is
// NaN); e5m2 is IEEE-like with a largest finite value of 57344.
constexpr FloatFormat kBF16{7, -126, 3.38953138925153547590e38, true};
constexpr FloatFormat kF16{10, -14, 65504.0, true};
constexpr FloatFormat kE4M3{3, -6, 448.0, false};
constexpr FloatFormat kE5M2{2, -14, 57344.0, true};

/// Rounds `x` to the nearest value of `f`, ties to even, in one step from the
/// f64 value (no double rounding through f32).
double roundToFormat(const FloatFormat &f, double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return f.hasInfinity ? x : std::numeric_limits<double>::quiet_NaN();
  if (x == 0) return x;
  double a = std::fabs(x);
  int exponent;
  std::frexp(a, &exponent);                      // a = m * 2^exponent, m in [0.5, 1)
  int e = std::max(exponent - 1, f.minExponent); // subnormals share the smallest normal's spacing
  double quantum = std::ldexp(1.0, e - f.mantissaBits);
  // a / quantum is exact (a power-of-two scaling); nearbyint rounds to even.
  double r = std::nearbyint(a / quantum) * quantum;
  if (r > f.maxFinite)
    r = f.hasInfinity ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  return std::copysign(r, x);
}

/// Truncates toward zero and wraps modulo 2^bits, as a C conversion through
/// a wide integer would.
double truncateToInteger(double x, unsigned bits, bool isSigned) {
  if (!std::isfinite(x)) return 0;
  double t = std::trunc(x);
  if (bits >= 64) return t;
  double modulus = std::ldexp(1.0, int(bits));
  double wrapped = std::fmod(t, modulus);
  if (wrapped < 0) wrapped += modulus;
  if (isSigned && wrapped >= modulus / 2) wrapped -= modulus;
  return wrapped;
}

} // namespace

double ir::roundTo(DType dtype, double x) {
  switch (dtype) {
  case DType::F64:
    return x;
  case DType::F32:
    return double(float(x)); // the conversion rounds to nearest even
  case DType::BF16:
    return roundToFormat(kBF16, x);
  case DType::F16:
    return roundToFormat(kF16, x);
  case DType::F8E4M3:
    return roundToFormat(kE4M3, x);
  case DType::F8E5M2:
    return roundToFormat(kE5M2, x);
  case DType::I32:
    return truncateToInteger(x, 32, true);
  case DType::I64:
    return truncateToInteger(x, 64, true);
  case DType::U8:
    return truncateToInteger(x, 8, false);
  case DType::U16:
    return truncateToInteger(x, 16, false);
  case DType::U32:
    return truncateToInteger(x, 32, false);
  case DType::Bool:
    return x != 0 ? 1.0 : 0.0;
  }
  return x;
}

void ir::roundToDType(Tensor &t) {
  if (t.dtype == DType::F64) return;
  for (double &x : t.data) x = roundTo(t.dtype, x);
}
