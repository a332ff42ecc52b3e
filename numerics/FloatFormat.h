//===- numerics/FloatFormat.h - binary floats narrower than f32 -*- C++ -*-===//
//
// bfloat16, IEEE half and the two OCP 8-bit floats (OCP 8-bit Floating Point
// Specification, as PyTorch's float8_e4m3fn and float8_e5m2), each described
// by its field widths. One description gives both the values (roundToFormat:
// what the interpreter and the executables compute a stored value as) and
// the bits (encodeFormat, decodeFormat: what buffers, files and devices hold).
//
// Rounding is to nearest, ties to even, in one step from the f64 value (never
// through f32, which would round twice). Overflow follows the format:
// - IEEE-like formats (bf16, f16, e5m2) have infinities; a value that rounds
//   above the largest finite one becomes an infinity, NaN stays NaN.
// - e4m3 ("fn": finite and NaN) has no infinities: its only NaNs are
//   S.1111.111, so its largest finite value is 448 = S.1111.110; a value that
//   rounds above it, and an infinity, become NaN (the OCP specification's
//   non-saturating conversion, PyTorch's).
// - Overflow::Saturate is the specification's saturating conversion instead
//   (CUDA's __NV_SATFINITE): out-of-range values, infinities included, become
//   the largest finite value of their sign; NaN stays NaN.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_NUMERICS_FLOATFORMAT_H
#define PLANC_NUMERICS_FLOATFORMAT_H

#include <cstdint>

namespace planc::numerics {

/// A binary float of 1 sign bit, `exponentBits` and `mantissaBits` (stored
/// fraction bits) with subnormals.
struct FloatFormat {
  int exponentBits;
  int mantissaBits;
  int bias;
  /// true: IEEE specials (an all-ones exponent is infinity or NaN);
  /// false: no infinities, only the all-ones exponent and mantissa is NaN.
  bool hasInfinity;

  constexpr FloatFormat(int exponentBits, int mantissaBits, int bias, bool hasInfinity)
      : exponentBits(exponentBits), mantissaBits(mantissaBits), bias(bias), hasInfinity(hasInfinity),
        largest(computeMaxFinite()) {}

  /// The exponent of the smallest normal number.
  constexpr int minExponent() const { return 1 - bias; }
  /// The largest finite value (bf16 3.39e38, f16 65504, e4m3 448, e5m2 57344).
  constexpr double maxFinite() const { return largest; }

private:
  double largest; // computed once: rounding compares every value with it

  /// IEEE-like: the exponent below the all-ones one with an all-ones
  /// mantissa; without infinities, the all-ones exponent with the mantissa
  /// below the one NaN's.
  constexpr double computeMaxFinite() const {
    int maxBiased = (1 << exponentBits) - (hasInfinity ? 2 : 1);
    double ulps = hasInfinity ? 1 : 2;
    return (2.0 - ulps * powerOfTwo(-mantissaBits)) * powerOfTwo(maxBiased - bias);
  }
  /// 2^e, exactly, at compile time (std::ldexp is not constexpr).
  static constexpr double powerOfTwo(int e) {
    double p = 1;
    for (; e > 0; --e) p *= 2;
    for (; e < 0; ++e) p /= 2;
    return p;
  }
};

inline constexpr FloatFormat kBF16Format{8, 7, 127, true};
inline constexpr FloatFormat kF16Format{5, 10, 15, true};
inline constexpr FloatFormat kE4M3Format{4, 3, 7, false};
inline constexpr FloatFormat kE5M2Format{5, 2, 15, true};
static_assert(kE4M3Format.maxFinite() == 448.0 && kE5M2Format.maxFinite() == 57344.0, "OCP FP8 maxima");
static_assert(kF16Format.maxFinite() == 65504.0 && kBF16Format.maxFinite() == 0x1.fep127, "16-bit maxima");

/// What a value beyond the largest finite one becomes.
enum class Overflow {
  ToSpecial, // infinity, or NaN where the format has none (PyTorch's conversion)
  Saturate,  // the largest finite value of its sign, infinities included
};

/// The value of `f` nearest `x`, ties to even.
double roundToFormat(const FloatFormat &f, double x, Overflow overflow = Overflow::ToSpecial);

/// The bits of `x` rounded to `f` (as roundToFormat rounds), in the low
/// 1 + exponentBits + mantissaBits bits. NaN is the canonical quiet NaN, of
/// positive sign: 0.11..1.10..0 (IEEE-like), 0.11..1.11..1 (e4m3).
uint64_t encodeFormat(const FloatFormat &f, double x, Overflow overflow = Overflow::ToSpecial);

/// The value of the low 1 + exponentBits + mantissaBits bits of `bits`.
double decodeFormat(const FloatFormat &f, uint64_t bits);

} // namespace planc::numerics

#endif
