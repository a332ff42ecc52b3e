//===- numerics/FloatFormat.cpp - rounding to and coding narrow floats ----===//

#include "numerics/FloatFormat.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace planc::numerics;

double planc::numerics::roundToFormat(const FloatFormat &f, double x, Overflow overflow) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(x)) return x;
  if (std::isinf(x)) {
    if (overflow == Overflow::Saturate) return std::copysign(f.maxFinite(), x);
    return f.hasInfinity ? x : nan;
  }
  if (x == 0) return x;
  double a = std::fabs(x);
  int exponent;
  std::frexp(a, &exponent);                          // a = m * 2^exponent, m in [0.5, 1)
  int e = std::max(exponent - 1, f.minExponent());   // subnormals share the smallest normal's spacing
  double quantum = std::ldexp(1.0, e - f.mantissaBits);
  // a / quantum is exact (a power-of-two scaling); nearbyint rounds to even.
  double r = std::nearbyint(a / quantum) * quantum;
  if (r > f.maxFinite()) r = overflow == Overflow::Saturate ? f.maxFinite() : f.hasInfinity ? inf : nan;
  return std::copysign(r, x);
}

uint64_t planc::numerics::encodeFormat(const FloatFormat &f, double x, Overflow overflow) {
  x = roundToFormat(f, x, overflow);
  // From here every step is exact: x is a value of the format.
  const uint64_t maxExponent = (uint64_t(1) << f.exponentBits) - 1;
  const uint64_t mantissaMask = (uint64_t(1) << f.mantissaBits) - 1;
  uint64_t sign = std::signbit(x) ? uint64_t(1) << (f.exponentBits + f.mantissaBits) : 0;
  if (std::isnan(x))
    return f.hasInfinity ? (maxExponent << f.mantissaBits) | (uint64_t(1) << (f.mantissaBits - 1))
                         : (maxExponent << f.mantissaBits) | mantissaMask;
  if (std::isinf(x)) return sign | (maxExponent << f.mantissaBits);
  if (x == 0) return sign;
  double a = std::fabs(x);
  int e;
  std::frexp(a, &e); // a = m 2^e, m in [0.5, 1)
  int64_t biased = int64_t(e - 1) + f.bias;
  if (biased <= 0) // subnormal: a = mantissa 2^(1 - bias - mantissaBits)
    return sign | uint64_t(std::nearbyint(std::ldexp(a, f.mantissaBits + f.bias - 1)));
  uint64_t mantissa = uint64_t(std::nearbyint((std::ldexp(a, -(e - 1)) - 1.0) * double(uint64_t(1) << f.mantissaBits)));
  return sign | (uint64_t(biased) << f.mantissaBits) | (mantissa & mantissaMask);
}

double planc::numerics::decodeFormat(const FloatFormat &f, uint64_t bits) {
  const uint64_t maxExponent = (uint64_t(1) << f.exponentBits) - 1;
  const uint64_t mantissaMask = (uint64_t(1) << f.mantissaBits) - 1;
  bool negative = (bits >> (f.exponentBits + f.mantissaBits)) & 1;
  uint64_t exponent = (bits >> f.mantissaBits) & maxExponent;
  uint64_t mantissa = bits & mantissaMask;
  double v;
  if (f.hasInfinity && exponent == maxExponent)
    v = mantissa ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (!f.hasInfinity && exponent == maxExponent && mantissa == mantissaMask)
    v = std::numeric_limits<double>::quiet_NaN();
  else if (exponent == 0)
    v = std::ldexp(double(mantissa), 1 - f.bias - f.mantissaBits);
  else
    v = std::ldexp(double(mantissa | (mantissaMask + 1)), int(exponent) - f.bias - f.mantissaBits);
  return negative ? -v : v;
}
