//===- tests/unit/runtime/FastMathTest.cpp - f32 exp and tanh against libm -===//
//
// runtime/FastMath.h's planc_expf and planc_tanhf, which generated kernels
// and the CPU library use for f32: within 2 ulps of libm's f64 exp and tanh
// rounded, over a sweep of the whole f32 range (every 4099th bit pattern)
// and the edges -- NaN, infinities, overflow to inf, underflow through the
// subnormals to 0, the polynomial's seam of tanh at |x| = 0.625.
//
//===----------------------------------------------------------------------===//

#include "runtime/FastMath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace {

/// |got - want| in units of the last place of want rounded to f32.
double ulpsOff(float got, double want) {
  const float w = float(want);
  if (w == 0) return got == 0 ? 0 : std::fabs(got) / 1.4e-45;
  double ulp = std::ldexp(1.0, std::ilogb(w) - 23);
  if (std::fpclassify(w) == FP_SUBNORMAL) ulp = std::ldexp(1.0, -149);
  return std::fabs(double(got) - want) / ulp;
}

float fromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST(FastMathTest, ExpIsWithinTwoUlpsOverTheRange) {
  double worst = 0;
  for (uint64_t u = 0; u < (1ull << 32); u += 4099) {
    const float x = fromBits(uint32_t(u));
    if (std::isnan(x)) continue;
    const double want = std::exp(double(x));
    if (std::isinf(float(want))) {
      ASSERT_TRUE(std::isinf(planc_expf(x))) << x;
      continue;
    }
    worst = std::max(worst, ulpsOff(planc_expf(x), want));
    ASSERT_LE(worst, 2.0) << "exp(" << x << ")";
  }
  EXPECT_GT(worst, 0.0); // not vacuous: some result was not exact
}

TEST(FastMathTest, TanhIsWithinTwoUlpsOverTheRange) {
  for (uint64_t u = 0; u < (1ull << 32); u += 4099) {
    const float x = fromBits(uint32_t(u));
    if (std::isnan(x)) continue;
    ASSERT_LE(ulpsOff(planc_tanhf(x), std::tanh(double(x))), 2.0) << "tanh(" << x << ")";
  }
  for (float x : {0.625f, std::nextafter(0.625f, 0.0f), -0.625f, 1e-20f, -1e-30f, 9.0f, 44.0f})
    EXPECT_LE(ulpsOff(planc_tanhf(x), std::tanh(double(x))), 2.0) << "tanh(" << x << ")";
}

TEST(FastMathTest, EdgesAreLibms) {
  const float inf = INFINITY;
  EXPECT_EQ(planc_expf(0.0f), 1.0f);
  EXPECT_EQ(planc_expf(-inf), 0.0f);
  EXPECT_EQ(planc_expf(inf), inf);
  EXPECT_EQ(planc_expf(88.8f), inf); // past FLT_MAX
  EXPECT_EQ(planc_expf(-104.0f), 0.0f);
  EXPECT_GT(planc_expf(-100.0f), 0.0f); // a subnormal, not flushed
  EXPECT_LE(ulpsOff(planc_expf(-100.0f), std::exp(-100.0)), 1.0);
  EXPECT_TRUE(std::isnan(planc_expf(NAN)));
  EXPECT_EQ(planc_tanhf(inf), 1.0f);
  EXPECT_EQ(planc_tanhf(-inf), -1.0f);
  EXPECT_EQ(planc_tanhf(0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(planc_tanhf(-0.0f)));
  EXPECT_TRUE(std::isnan(planc_tanhf(NAN)));
}

} // namespace
