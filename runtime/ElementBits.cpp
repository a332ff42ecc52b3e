//===- runtime/ElementBits.cpp - rounding, encoding and decoding elements -===//

#include "runtime/ElementBits.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace planc::runtime;

namespace {

//===----------------------------------------------------------------------===//
// Rounding (the same arithmetic as ir/Tensor.cpp's roundTo)
//===----------------------------------------------------------------------===//

/// A binary floating-point format narrower than f32, by its values.
struct FloatFormat {
  int mantissaBits; // stored fraction bits
  int minExponent;  // exponent of the smallest normal number (1 - bias)
  double maxFinite;
  bool hasInfinity; // false: overflow and infinities become NaN (fp8 e4m3 "fn")
};

constexpr FloatFormat kRoundBF16{7, -126, 3.38953138925153547590e38, true};
constexpr FloatFormat kRoundF16{10, -14, 65504.0, true};
constexpr FloatFormat kRoundE4M3{3, -6, 448.0, false};
constexpr FloatFormat kRoundE5M2{2, -14, 57344.0, true};

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

//===----------------------------------------------------------------------===//
// Bits
//===----------------------------------------------------------------------===//

/// A binary float narrower than f32, by its field widths.
struct MiniFloat {
  int exponentBits, mantissaBits, bias;
  bool ieeeSpecials; // all-ones exponent is inf/NaN; false: only S.1111.111 is NaN (e4m3fn)
};

constexpr MiniFloat kF16{5, 10, 15, true};
constexpr MiniFloat kBF16{8, 7, 127, true};
constexpr MiniFloat kE4M3{4, 3, 7, false};
constexpr MiniFloat kE5M2{5, 2, 15, true};

/// `x` must already be a value of the format (roundToElement makes it one),
/// so every step here is exact.
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

double planc::runtime::roundToElement(ElementType type, double x) {
  switch (type) {
  case ElementType::F64: return x;
  case ElementType::F32: return double(float(x)); // the conversion rounds to nearest even
  case ElementType::BF16: return roundToFormat(kRoundBF16, x);
  case ElementType::F16: return roundToFormat(kRoundF16, x);
  case ElementType::F8E4M3: return roundToFormat(kRoundE4M3, x);
  case ElementType::F8E5M2: return roundToFormat(kRoundE5M2, x);
  case ElementType::I32: return truncateToInteger(x, 32, true);
  case ElementType::I64: return truncateToInteger(x, 64, true);
  case ElementType::U8: return truncateToInteger(x, 8, false);
  case ElementType::U16: return truncateToInteger(x, 16, false);
  case ElementType::U32: return truncateToInteger(x, 32, false);
  case ElementType::Bool: return x != 0 ? 1.0 : 0.0;
  }
  return x;
}

uint64_t planc::runtime::encodeElement(ElementType type, double x) {
  x = roundToElement(type, x);
  switch (type) {
  case ElementType::F64: return bitsOf(x);
  case ElementType::F32: return bitsOf(float(x));
  case ElementType::BF16: return encodeMiniFloat(kBF16, x);
  case ElementType::F16: return encodeMiniFloat(kF16, x);
  case ElementType::F8E4M3: return encodeMiniFloat(kE4M3, x);
  case ElementType::F8E5M2: return encodeMiniFloat(kE5M2, x);
  case ElementType::I32: return twosComplement(x) & 0xffffffffu;
  case ElementType::I64: return twosComplement(x);
  case ElementType::U8: return uint64_t(x) & 0xffu;
  case ElementType::U16: return uint64_t(x) & 0xffffu;
  case ElementType::U32: return uint64_t(x) & 0xffffffffu;
  case ElementType::Bool: return x != 0 ? 1 : 0;
  }
  return 0;
}

double planc::runtime::decodeElement(ElementType type, uint64_t bits) {
  switch (type) {
  case ElementType::F64: return doubleFromBits(bits);
  case ElementType::F32: return double(floatFromBits(bits));
  case ElementType::BF16: return decodeMiniFloat(kBF16, bits & 0xffffu);
  case ElementType::F16: return decodeMiniFloat(kF16, bits & 0xffffu);
  case ElementType::F8E4M3: return decodeMiniFloat(kE4M3, bits & 0xffu);
  case ElementType::F8E5M2: return decodeMiniFloat(kE5M2, bits & 0xffu);
  case ElementType::I32: return double(int32_t(uint32_t(bits)));
  case ElementType::I64: return double(int64_t(bits));
  case ElementType::U8: return double(bits & 0xffu);
  case ElementType::U16: return double(bits & 0xffffu);
  case ElementType::U32: return double(bits & 0xffffffffu);
  case ElementType::Bool: return (bits & 0xffu) ? 1.0 : 0.0;
  }
  return 0;
}

void planc::runtime::encodeBuffer(ElementType type, const double *in, size_t n, void *out) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  // f32 and f64 as the host stores them: a conversion per element (which
  // rounds to nearest even, as roundToElement does), not a bit at a time.
  if (type == ElementType::F32) {
    auto *f = static_cast<unsigned char *>(out);
    for (size_t i = 0; i < n; ++i) {
      float v = float(in[i]);
      std::memcpy(f + 4 * i, &v, 4);
    }
    return;
  }
  if (type == ElementType::F64) {
    std::memcpy(out, in, n * 8);
    return;
  }
#endif
  unsigned width = byteSize(type);
  auto *p = static_cast<unsigned char *>(out);
  for (size_t i = 0; i < n; ++i, p += width) {
    uint64_t bits = encodeElement(type, in[i]);
    for (unsigned b = 0; b < width; ++b) p[b] = (unsigned char)((bits >> (8 * b)) & 0xff);
  }
}

void planc::runtime::decodeBuffer(ElementType type, const void *in, size_t n, double *out) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (type == ElementType::F32) {
    const auto *f = static_cast<const unsigned char *>(in);
    for (size_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, f + 4 * i, 4);
      out[i] = v;
    }
    return;
  }
  if (type == ElementType::F64) {
    std::memcpy(out, in, n * 8);
    return;
  }
#endif
  unsigned width = byteSize(type);
  const auto *p = static_cast<const unsigned char *>(in);
  for (size_t i = 0; i < n; ++i, p += width) {
    uint64_t bits = 0;
    for (unsigned b = 0; b < width; ++b) bits |= uint64_t(p[b]) << (8 * b);
    out[i] = decodeElement(type, bits);
  }
}
