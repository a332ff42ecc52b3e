//===- tests/unit/numerics/FloatFormatTest.cpp - narrow floats against their bit patterns -===//
//
// bf16, f16 and the OCP 8-bit floats (e4m3fn, e5m2) against bit patterns
// read off their definitions: the largest and smallest values, subnormals,
// infinities and NaNs, overflow with and without saturation, and ties to
// even. Then, over every magnitude: the value kept is the nearest one (no
// neighbour is closer, a tie goes to the even code), and the bits decode to
// it.
//
//===----------------------------------------------------------------------===//

#include "numerics/ElementBits.h"
#include "numerics/FloatFormat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace planc::numerics;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

uint64_t bits(ElementType t, double x) { return encodeElement(t, x); }

TEST(FloatFormatTest, LargestValuesFollowTheFieldWidths) {
  EXPECT_EQ(kBF16Format.maxFinite(), 0x1.fep127);
  EXPECT_EQ(kF16Format.maxFinite(), 65504.0);
  EXPECT_EQ(kE4M3Format.maxFinite(), 448.0);
  EXPECT_EQ(kE5M2Format.maxFinite(), 57344.0);
  EXPECT_EQ(kE4M3Format.minExponent(), -6);
  EXPECT_EQ(kE5M2Format.minExponent(), -14);
}

TEST(FloatFormatTest, E4M3BitPatterns) {
  const ElementType t = ElementType::F8E4M3;
  EXPECT_EQ(bits(t, 0.0), 0x00u);
  EXPECT_EQ(bits(t, -0.0), 0x80u);
  EXPECT_EQ(bits(t, 1.0), 0x38u); // S.0111.000
  EXPECT_EQ(bits(t, -2.0), 0xc0u);
  EXPECT_EQ(bits(t, 448.0), 0x7eu); // S.1111.110, the largest finite value
  EXPECT_EQ(bits(t, -448.0), 0xfeu);
  EXPECT_EQ(bits(t, 0x1p-6), 0x08u);  // the smallest normal
  EXPECT_EQ(bits(t, 0x1p-9), 0x01u);  // the smallest subnormal
  EXPECT_EQ(bits(t, 0x7p-9), 0x07u);  // the largest subnormal
  EXPECT_EQ(bits(t, 0x1p-10), 0x00u); // half the smallest subnormal: a tie, to even (zero)
  EXPECT_EQ(bits(t, 0x3p-10), 0x02u); // 1.5 subnormal steps: a tie, to even (2)
  // No infinities: the only NaN codes are S.1111.111; overflow and infinity are NaN.
  EXPECT_EQ(bits(t, kNaN), 0x7fu);
  EXPECT_EQ(bits(t, kInf), 0x7fu);
  EXPECT_EQ(bits(t, -kInf), 0x7fu);
  EXPECT_EQ(bits(t, 464.0), 0x7eu); // halfway to the NaN code's place: to even, 448
  EXPECT_EQ(bits(t, 465.0), 0x7fu);
  EXPECT_EQ(bits(t, 1e6), 0x7fu);
  EXPECT_TRUE(std::isnan(decodeElement(t, 0x7f)));
  EXPECT_TRUE(std::isnan(decodeElement(t, 0xff)));
  // S.1111.000 to S.1111.110 are numbers, not infinities or NaNs.
  EXPECT_EQ(decodeElement(t, 0x78), 256.0);
  EXPECT_EQ(decodeElement(t, 0xf9), -288.0);
  EXPECT_EQ(decodeElement(t, 0x01), 0x1p-9);
}

TEST(FloatFormatTest, E5M2BitPatterns) {
  const ElementType t = ElementType::F8E5M2;
  EXPECT_EQ(bits(t, 1.0), 0x3cu); // S.01111.00
  EXPECT_EQ(bits(t, -1.5), 0xbeu);
  EXPECT_EQ(bits(t, 57344.0), 0x7bu); // S.11110.11, the largest finite value
  EXPECT_EQ(bits(t, 0x1p-14), 0x04u); // the smallest normal
  EXPECT_EQ(bits(t, 0x1p-16), 0x01u); // the smallest subnormal
  EXPECT_EQ(bits(t, 0x3p-16), 0x03u); // the largest subnormal
  EXPECT_EQ(bits(t, 0x1p-17), 0x00u); // a tie, to even (zero)
  // IEEE specials: S.11111.00 is infinity, S.11111.{01,10,11} NaN.
  EXPECT_EQ(bits(t, kInf), 0x7cu);
  EXPECT_EQ(bits(t, -kInf), 0xfcu);
  EXPECT_EQ(bits(t, kNaN), 0x7eu);
  EXPECT_EQ(bits(t, 61440.0), 0x7cu); // halfway to 65536: to even, infinity
  EXPECT_EQ(bits(t, 61439.0), 0x7bu);
  EXPECT_EQ(decodeElement(t, 0x7c), kInf);
  EXPECT_EQ(decodeElement(t, 0xfc), -kInf);
  for (uint64_t nan : {0x7dull, 0x7eull, 0x7full, 0xffull}) EXPECT_TRUE(std::isnan(decodeElement(t, nan))) << nan;
}

TEST(FloatFormatTest, SixteenBitPatterns) {
  EXPECT_EQ(bits(ElementType::F16, 1.0), 0x3c00u);
  EXPECT_EQ(bits(ElementType::F16, 65504.0), 0x7bffu);
  EXPECT_EQ(bits(ElementType::F16, 65520.0), 0x7c00u); // halfway past the largest: to even, infinity
  EXPECT_EQ(bits(ElementType::F16, 65519.99), 0x7bffu);
  EXPECT_EQ(bits(ElementType::F16, 0x1p-24), 0x0001u); // the smallest subnormal
  EXPECT_EQ(bits(ElementType::F16, -0x1p-14), 0x8400u);
  EXPECT_EQ(bits(ElementType::F16, kNaN), 0x7e00u);
  EXPECT_EQ(bits(ElementType::F16, -kInf), 0xfc00u);
  EXPECT_EQ(bits(ElementType::BF16, 1.0), 0x3f80u);
  EXPECT_EQ(bits(ElementType::BF16, -2.0), 0xc000u);
  EXPECT_EQ(bits(ElementType::BF16, 0x1.fep127), 0x7f7fu);
  EXPECT_EQ(bits(ElementType::BF16, 0x1.ffp127), 0x7f80u); // a tie past the largest: infinity
  EXPECT_EQ(bits(ElementType::BF16, 0x1p-133), 0x0001u);   // the smallest subnormal
  EXPECT_EQ(bits(ElementType::BF16, 1.0 + 0x1p-8), 0x3f80u); // a tie, to the even 1.0
  EXPECT_EQ(bits(ElementType::BF16, 1.0 + 0x3p-8), 0x3f82u); // a tie, to the even 1 + 2^-6
  EXPECT_EQ(bits(ElementType::BF16, kNaN), 0x7fc0u);
  // Rounded once from f64: 1 + 2^-8 + 2^-30 is above the tie, though its f32
  // rounding (1 + 2^-8) would be a tie that goes down.
  EXPECT_EQ(bits(ElementType::BF16, 1.0 + 0x1p-8 + 0x1p-30), 0x3f81u);
}

TEST(FloatFormatTest, SaturationKeepsTheLargestFiniteValue) {
  const double cases[] = {500.0, 1e6, kInf};
  for (double x : cases) {
    EXPECT_EQ(roundToFormat(kE4M3Format, x, Overflow::Saturate), 448.0) << x;
    EXPECT_EQ(roundToFormat(kE4M3Format, -x, Overflow::Saturate), -448.0) << x;
    EXPECT_EQ(encodeFormat(kE4M3Format, x, Overflow::Saturate), 0x7eu) << x;
    EXPECT_EQ(encodeFormat(kE4M3Format, -x, Overflow::Saturate), 0xfeu) << x;
    EXPECT_EQ(encodeFormat(kE5M2Format, x * 1e3, Overflow::Saturate), 0x7bu) << x;
    EXPECT_EQ(encodeFormat(kE5M2Format, -x * 1e3, Overflow::Saturate), 0xfbu) << x;
  }
  EXPECT_TRUE(std::isnan(roundToFormat(kE4M3Format, kNaN, Overflow::Saturate)));
  EXPECT_EQ(encodeFormat(kE5M2Format, kNaN, Overflow::Saturate), 0x7eu);
  // In range, saturation changes nothing.
  EXPECT_EQ(roundToFormat(kE4M3Format, 300.0, Overflow::Saturate), roundToFormat(kE4M3Format, 300.0));
}

/// The code after `code` in value order among a format's non-negative codes
/// (none past the largest finite value).
struct Neighbours {
  double below, above;
};

Neighbours neighboursOf(const FloatFormat &f, uint64_t code) {
  double below = code == 0 ? 0.0 : decodeFormat(f, code - 1);
  double above = decodeFormat(f, code + 1);
  if (!std::isfinite(above) || std::fabs(above) > f.maxFinite()) above = kInf;
  return {below, above};
}

TEST(FloatFormatTest, TheValueKeptIsTheNearestAndTiesGoToEven) {
  std::mt19937_64 random(31);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  const ElementType narrow[] = {ElementType::BF16, ElementType::F16, ElementType::F8E4M3, ElementType::F8E5M2};
  size_t checked = 0;
  for (ElementType t : narrow) {
    const FloatFormat &f = *floatFormatOf(t);
    std::vector<double> values;
    for (int e = -140; e <= 130; ++e)
      for (int k = 0; k < 30; ++k) values.push_back(std::ldexp(mantissa(random), e));
    // The midpoints between neighbouring codes: the ties.
    for (uint64_t code = 0; code + 1 < (uint64_t(1) << (f.exponentBits + f.mantissaBits)); code += 7) {
      double a = decodeFormat(f, code), b = decodeFormat(f, code + 1);
      if (std::isfinite(a) && std::isfinite(b) && b <= f.maxFinite()) values.push_back((a + b) / 2);
    }
    for (double x : values) {
      double r = roundToElement(t, x);
      uint64_t code = encodeElement(t, x);
      if (!std::isfinite(r)) {
        EXPECT_GT(x, f.maxFinite()) << spelling(t) << " " << x;
        continue;
      }
      ASSERT_EQ(decodeElement(t, code), r) << spelling(t) << " " << x;
      ASSERT_EQ(roundToElement(t, r), r) << spelling(t) << " rounds " << x << " twice differently";
      Neighbours n = neighboursOf(f, code);
      double d = std::fabs(x - r);
      ASSERT_LE(d, std::fabs(x - n.below)) << spelling(t) << " " << x;
      ASSERT_LE(d, std::fabs(x - n.above)) << spelling(t) << " " << x;
      if (d == std::fabs(x - n.below) || d == std::fabs(x - n.above))
        ASSERT_EQ(code & 1, 0u) << spelling(t) << " tie " << x << " went to an odd code";
      ++checked;
    }
  }
  EXPECT_GT(checked, size_t(20000));
}

#ifdef __FLT16_MAX__
// The compiler's own half precision, converted from f64 in one step, is an
// independent f16.
TEST(FloatFormatTest, HalfAgreesWithTheCompilersFloat16) {
  std::mt19937_64 random(16);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  for (int e = -30; e <= 17; ++e)
    for (int k = 0; k < 200; ++k) {
      double x = std::ldexp(mantissa(random), e) * (k % 2 ? -1 : 1);
      _Float16 h = _Float16(x);
      uint16_t expect;
      std::memcpy(&expect, &h, 2);
      ASSERT_EQ(encodeElement(ElementType::F16, x), expect) << x;
      ASSERT_EQ(roundToElement(ElementType::F16, x), double(h)) << x;
    }
}
#endif

TEST(FloatFormatTest, IntegersTruncateAndWrap) {
  EXPECT_EQ(roundToElement(ElementType::I32, -2.7), -2);
  EXPECT_EQ(roundToElement(ElementType::U8, 256), 0);
  EXPECT_EQ(roundToElement(ElementType::I32, 2147483648.0), -2147483648.0);
  EXPECT_EQ(encodeElement(ElementType::I32, -1), 0xffffffffu);
  EXPECT_EQ(encodeElement(ElementType::I64, 1e300), uint64_t(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(decodeElement(ElementType::I32, 0xffffffffu), -1);
  EXPECT_EQ(roundToElement(ElementType::Bool, 0.5), 1);
}

TEST(FloatFormatTest, BuffersAreLittleEndian) {
  const double in[] = {1.0, -2.0};
  unsigned char out[4];
  encodeBuffer(ElementType::BF16, in, 2, out);
  EXPECT_EQ(out[0], 0x80);
  EXPECT_EQ(out[1], 0x3f);
  EXPECT_EQ(out[2], 0x00);
  EXPECT_EQ(out[3], 0xc0);
  double back[2];
  decodeBuffer(ElementType::BF16, out, 2, back);
  EXPECT_EQ(back[0], 1.0);
  EXPECT_EQ(back[1], -2.0);
}

} // namespace
