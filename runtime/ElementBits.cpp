//===- runtime/ElementBits.cpp - encode and decode one element -----------===//

#include "runtime/ElementBits.h"

#include "ir/Tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace planc;
using namespace planc::ir;

namespace {

/// A binary float narrower than f32, by its field widths.
struct MiniFloat {
  int exponentBits, mantissaBits, bias;
  bool ieeeSpecials; // all-ones exponent is inf/NaN; false: only S.1111.111 is NaN (e4m3fn)
};

constexpr MiniFloat kF16{5, 10, 15, true};
constexpr MiniFloat kBF16{8, 7, 127, true};
constexpr MiniFloat kE4M3{4, 3, 7, false};
constexpr MiniFloat kE5M2{5, 2, 15, true};

/// `x` must already be a value of the format (ir::roundTo makes it one), so
/// every step here is exact.
uint64_t encodeMiniFloat(const MiniFloat &f, double x) {
  const uint64_t maxExponent = (uint64_t(1) << f.exponentBits) - 1;
  const uint64_t mantissaMask = (uint64_t(1) << f.mantissaBits) - 1;
  uint64_t sign = std::signbit(x) ? uint64_t(1) << (f.exponentBits + f.mantissaBits) : 0;
  if (std::isnan(x))
    return f.ieeeSpecials ? (maxExponent << f.mantissaBits) | (uint64_t(1) << (f.mantissaBits - 1))
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

double decodeMiniFloat(const MiniFloat &f, uint64_t bits) {
  const uint64_t maxExponent = (uint64_t(1) << f.exponentBits) - 1;
  const uint64_t mantissaMask = (uint64_t(1) << f.mantissaBits) - 1;
  bool negative = (bits >> (f.exponentBits + f.mantissaBits)) & 1;
  uint64_t exponent = (bits >> f.mantissaBits) & maxExponent;
  uint64_t mantissa = bits & mantissaMask;
  double v;
  if (f.ieeeSpecials && exponent == maxExponent)
    v = mantissa ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (!f.ieeeSpecials && exponent == maxExponent && mantissa == mantissaMask)
    v = std::numeric_limits<double>::quiet_NaN();
  else if (exponent == 0)
    v = std::ldexp(double(mantissa), 1 - f.bias - f.mantissaBits);
  else
    v = std::ldexp(double(mantissa | (mantissaMask + 1)), int(exponent) - f.bias - f.mantissaBits);
  return negative ? -v : v;
}

// Through an unsigned integer of the same width, so the value's bits land in
// the low bits whatever the host's byte order.
uint64_t bitsOf(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof v);
  return bits;
}
uint64_t bitsOf(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof v);
  return bits;
}
double doubleFromBits(uint64_t bits) {
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
float floatFromBits(uint64_t bits) {
  uint32_t low = uint32_t(bits);
  float v;
  std::memcpy(&v, &low, sizeof v);
  return v;
}

/// Two's complement of an integral double; the out-of-range i64 values (an
/// f64 cannot even hold most of them exactly) saturate.
uint64_t twosComplement(double x) {
  if (x >= 0x1.0p63) return uint64_t(std::numeric_limits<int64_t>::max());
  if (x < -0x1.0p63) return uint64_t(std::numeric_limits<int64_t>::min());
  return uint64_t(int64_t(x));
}

} // namespace

uint64_t runtime::encodeElement(DType dtype, double x) {
  x = roundTo(dtype, x);
  switch (dtype) {
  case DType::F64: return bitsOf(x);
  case DType::F32: return bitsOf(float(x));
  case DType::BF16: return encodeMiniFloat(kBF16, x);
  case DType::F16: return encodeMiniFloat(kF16, x);
  case DType::F8E4M3: return encodeMiniFloat(kE4M3, x);
  case DType::F8E5M2: return encodeMiniFloat(kE5M2, x);
  case DType::I32: return twosComplement(x) & 0xffffffffu;
  case DType::I64: return twosComplement(x);
  case DType::U8: return uint64_t(x) & 0xffu;
  case DType::U16: return uint64_t(x) & 0xffffu;
  case DType::U32: return uint64_t(x) & 0xffffffffu;
  case DType::Bool: return x != 0 ? 1 : 0;
  }
  return 0;
}

double runtime::decodeElement(DType dtype, uint64_t bits) {
  switch (dtype) {
  case DType::F64: return doubleFromBits(bits);
  case DType::F32: return double(floatFromBits(bits));
  case DType::BF16: return decodeMiniFloat(kBF16, bits & 0xffffu);
  case DType::F16: return decodeMiniFloat(kF16, bits & 0xffffu);
  case DType::F8E4M3: return decodeMiniFloat(kE4M3, bits & 0xffu);
  case DType::F8E5M2: return decodeMiniFloat(kE5M2, bits & 0xffu);
  case DType::I32: return double(int32_t(uint32_t(bits)));
  case DType::I64: return double(int64_t(bits));
  case DType::U8: return double(bits & 0xffu);
  case DType::U16: return double(bits & 0xffffu);
  case DType::U32: return double(bits & 0xffffffffu);
  case DType::Bool: return (bits & 0xffu) ? 1.0 : 0.0;
  }
  return 0;
}
