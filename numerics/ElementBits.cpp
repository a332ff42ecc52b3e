//===- numerics/ElementBits.cpp - rounding, encoding and decoding elements ===//

#include "numerics/ElementBits.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace planc::numerics;

namespace {

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

const FloatFormat *planc::numerics::floatFormatOf(ElementType type) {
  switch (type) {
  case ElementType::BF16: return &kBF16Format;
  case ElementType::F16: return &kF16Format;
  case ElementType::F8E4M3: return &kE4M3Format;
  case ElementType::F8E5M2: return &kE5M2Format;
  default: return nullptr;
  }
}

double planc::numerics::roundToElement(ElementType type, double x) {
  switch (type) {
  case ElementType::F64: return x;
  case ElementType::F32: return double(float(x)); // the conversion rounds to nearest even
  case ElementType::BF16: return roundToFormat(kBF16Format, x);
  case ElementType::F16: return roundToFormat(kF16Format, x);
  case ElementType::F8E4M3: return roundToFormat(kE4M3Format, x);
  case ElementType::F8E5M2: return roundToFormat(kE5M2Format, x);
  case ElementType::I32: return truncateToInteger(x, 32, true);
  case ElementType::I64: return truncateToInteger(x, 64, true);
  case ElementType::U8: return truncateToInteger(x, 8, false);
  case ElementType::U16: return truncateToInteger(x, 16, false);
  case ElementType::U32: return truncateToInteger(x, 32, false);
  case ElementType::Bool: return x != 0 ? 1.0 : 0.0;
  }
  return x;
}

uint64_t planc::numerics::encodeElement(ElementType type, double x) {
  if (const FloatFormat *f = floatFormatOf(type)) return encodeFormat(*f, x);
  x = roundToElement(type, x);
  switch (type) {
  case ElementType::F64: return bitsOf(x);
  case ElementType::F32: return bitsOf(float(x));
  case ElementType::I32: return twosComplement(x) & 0xffffffffu;
  case ElementType::I64: return twosComplement(x);
  case ElementType::U8: return uint64_t(x) & 0xffu;
  case ElementType::U16: return uint64_t(x) & 0xffffu;
  case ElementType::U32: return uint64_t(x) & 0xffffffffu;
  case ElementType::Bool: return x != 0 ? 1 : 0;
  default: return 0; // the narrow floats are above
  }
}

double planc::numerics::decodeElement(ElementType type, uint64_t bits) {
  if (const FloatFormat *f = floatFormatOf(type))
    return decodeFormat(*f, bits & ((uint64_t(1) << (8 * byteSize(type))) - 1));
  switch (type) {
  case ElementType::F64: return doubleFromBits(bits);
  case ElementType::F32: return double(floatFromBits(bits));
  case ElementType::I32: return double(int32_t(uint32_t(bits)));
  case ElementType::I64: return double(int64_t(bits));
  case ElementType::U8: return double(bits & 0xffu);
  case ElementType::U16: return double(bits & 0xffffu);
  case ElementType::U32: return double(bits & 0xffffffffu);
  case ElementType::Bool: return (bits & 0xffu) ? 1.0 : 0.0;
  default: return 0; // the narrow floats are above
  }
}

void planc::numerics::encodeBuffer(ElementType type, const double *in, size_t n, void *out) {
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

void planc::numerics::decodeBuffer(ElementType type, const void *in, size_t n, double *out) {
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
