//===- tests/unit/numerics/PhiloxTest.cpp - Philox4x32-10 against Random123 -===//

#include "numerics/Philox.h"

#include <gtest/gtest.h>

using namespace planc::numerics;

namespace {

TEST(PhiloxTest, MatchesRandom123) {
  // Random123's known-answer vectors for Philox4x32-10 (kat_vectors).
  using W = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, 0), (W{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, ~uint64_t(0)),
            (W{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, 0x299f31d0a4093822ull),
            (W{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(PhiloxTest, UniformIsTheTop53BitsOfTheFirstTwoWords) {
  EXPECT_EQ(philoxUniform(0, 0), double(((uint64_t(0xe169c58d) << 32) | 0x6627e8d5) >> 11) * 0x1p-53);
  // The counter's high half is counter word 1.
  std::array<uint32_t, 4> w = philox4x32({5, 3, 0, 0}, 0x1234);
  EXPECT_EQ(philoxUniform(0x1234, (uint64_t(3) << 32) | 5), double(((uint64_t(w[1]) << 32) | w[0]) >> 11) * 0x1p-53);
  for (uint64_t c = 0; c < 1000; ++c) {
    double u = philoxUniform(99, c);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

} // namespace
