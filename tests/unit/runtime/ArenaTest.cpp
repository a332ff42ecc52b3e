//===- tests/unit/runtime/ArenaTest.cpp - aligned storage poisoned with NaN -===//

#include "runtime/Arena.h"
#include "runtime/ElementBits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace planc::runtime;

namespace {

TEST(ArenaTest, IsAlignedAndPoisoned) {
  for (uint64_t size : {uint64_t(0), uint64_t(1), uint64_t(63), uint64_t(4096), uint64_t(100000)}) {
    Arena a(size);
    EXPECT_EQ(a.size(), size);
    ASSERT_NE(a.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u) << size;
    for (uint64_t i = 0; i < size; ++i) ASSERT_EQ(a.data()[i], 0xFF) << i;
  }
  Arena a(256);
  std::memset(a.data() + 10, 0, 100);
  a.poison();
  for (uint64_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.data()[i], 0xFF) << i;
}

TEST(ArenaTest, PoisonIsANaNInEveryFloatType) {
  Arena a(8);
  for (ElementType t : {ElementType::F64, ElementType::F32, ElementType::BF16, ElementType::F16, ElementType::F8E4M3,
                        ElementType::F8E5M2}) {
    double v = 0;
    decodeBuffer(t, a.data(), 1, &v);
    EXPECT_TRUE(std::isnan(v)) << spelling(t);
  }
}

} // namespace
