//===- tests/unit/backend/TensorAdaptersTest.cpp - the interpreter's numbers and the runtime's agree -===//
//
// runtime/ keeps its own copies of what the IR's interpreter computes with
// (the element types' names and sizes, the rounding to each type, Philox),
// because it may not include ir/. These tests hold the copies to the
// originals: every dtype's spelling, size and kind, roundToElement against
// ir::roundTo on many values of every magnitude, Philox on many keys, and
// tensors converted both ways.
//
//===----------------------------------------------------------------------===//

#include "backend/interp/TensorAdapters.h"

#include "ir/Interpreter.h"
#include "ir/Tensor.h"
#include "runtime/ElementBits.h"
#include "runtime/ParamInit.h"
#include "runtime/Philox.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace planc;
using namespace planc::interp;

namespace {

const ir::DType kAll[] = {ir::DType::F64,    ir::DType::F32,    ir::DType::BF16, ir::DType::F16,
                          ir::DType::F8E4M3, ir::DType::F8E5M2, ir::DType::I32,  ir::DType::I64,
                          ir::DType::U8,     ir::DType::U16,    ir::DType::U32,  ir::DType::Bool};

uint64_t bitsOf(double x) {
  uint64_t b;
  std::memcpy(&b, &x, 8);
  return b;
}

/// Equal as values of a result: both NaN, or the same bits (so -0 is not 0).
bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || bitsOf(a) == bitsOf(b); }

TEST(TensorAdaptersTest, ElementTypesAreTheDTypes) {
  ASSERT_EQ(std::size(kAll), size_t(runtime::kNumElementTypes));
  for (ir::DType d : kAll) {
    runtime::ElementType t = toElementType(d);
    EXPECT_EQ(toDType(t), d);
    EXPECT_STREQ(runtime::spelling(t), ir::spelling(d));
    EXPECT_EQ(runtime::byteSize(t), ir::byteSize(d)) << ir::spelling(d);
    EXPECT_EQ(runtime::isFloat(t), ir::isFloat(d)) << ir::spelling(d);
    EXPECT_EQ(runtime::parseElementType(ir::spelling(d)), t) << ir::spelling(d);
  }
  EXPECT_EQ(runtime::parseElementType("float32"), std::nullopt);
  EXPECT_EQ(runtime::parseElementType(""), std::nullopt);
}

TEST(TensorAdaptersTest, RoundingAgreesWithTheInterpretersOnEveryType) {
  std::vector<double> values = {0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.5, 255.5, 256.0, -129.7,
                                65504.0, 65519.99, 65520.0, 448.0, 464.0, 480.0, 57344.0, 61440.0,
                                3.38953138925153547590e38, 3.4e38, 1e39, 1e300, -1e300,
                                std::ldexp(1.0, -24), std::ldexp(1.0, -25), std::ldexp(1.5, -25), std::ldexp(1.0, -133),
                                std::ldexp(1.0, -149), std::ldexp(1.0, -150), std::ldexp(1.0, -1074),
                                std::ldexp(1.0, -9), std::ldexp(1.0, -10), std::ldexp(1.0, -16), std::ldexp(1.0, -17),
                                2147483647.0, 2147483648.0, -2147483648.0, -2147483649.0, 4294967295.0, 4294967296.0,
                                0x1.0p63, -0x1.0p63, 0x1.0p64, 1e19, -1e19,
                                std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::max(),
                                std::numeric_limits<double>::denorm_min()};
  // Every magnitude from 2^-160 to 2^160, with random mantissas and signs,
  // values halfway between neighbours of each narrow type, and integers.
  std::mt19937_64 random(20240601);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  for (int e = -160; e <= 160; ++e)
    for (int k = 0; k < 40; ++k) {
      double v = std::ldexp(mantissa(random), e);
      values.push_back(k % 2 ? -v : v);
    }
  for (int e = -30; e <= 20; ++e)
    for (int m : {1, 3, 5, 7, 9, 17, 33, 129, 1025}) values.push_back(std::ldexp(double(m), e)); // ties of every width
  std::uniform_int_distribution<int64_t> integers(-(int64_t(1) << 40), int64_t(1) << 40);
  for (int k = 0; k < 2000; ++k) values.push_back(double(integers(random)) + (k % 3) * 0.5);

  size_t checked = 0;
  for (ir::DType d : kAll)
    for (double x : values) {
      double expect = ir::roundTo(d, x), got = runtime::roundToElement(toElementType(d), x);
      ASSERT_TRUE(same(expect, got)) << ir::spelling(d) << " of " << x << ": ir " << expect << ", runtime " << got;
      ++checked;
    }
  EXPECT_GT(checked, size_t(12 * 15000));
}

TEST(TensorAdaptersTest, PhiloxAgreesWithTheInterpreters) {
  std::mt19937_64 random(7);
  for (int k = 0; k < 5000; ++k) {
    uint64_t key = random(), counter = k < 100 ? uint64_t(k) : random();
    ASSERT_EQ(runtime::philoxUniform(key, counter), ir::EvalContext::philoxUniform(key, counter)) << key << " " << counter;
    std::array<uint32_t, 4> c{uint32_t(random()), uint32_t(random()), uint32_t(random()), uint32_t(random())};
    ASSERT_EQ(runtime::philox4x32(c, key), ir::EvalContext::philox4x32(c, key));
  }
  // The published known-answer test of Philox4x32-10 (Random123, kat_vectors):
  // counter 0, key 0 gives 6627e8d5 e169c58d bc57ac4c 9b00dbd8.
  std::array<uint32_t, 4> zero = runtime::philox4x32({0, 0, 0, 0}, 0);
  EXPECT_EQ(zero, (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
}

TEST(TensorAdaptersTest, TensorsConvertBothWays) {
  ir::Tensor t({2, 3}, ir::DType::BF16);
  t.data = {1.0, -2.5, 3.140625, 0.0, 1e-3, 70000.0};
  runtime::HostTensor h = toHostTensor(t);
  EXPECT_EQ(h.type, runtime::ElementType::BF16);
  EXPECT_EQ(h.shape, t.shape);
  ASSERT_EQ(h.bytes.size(), 12u);
  EXPECT_EQ(h.bytes[0], 0x80); // bf16 1.0 is 0x3F80, low byte first
  EXPECT_EQ(h.bytes[1], 0x3F);
  ir::Tensor back = toTensor(h);
  EXPECT_EQ(back.shape, t.shape);
  EXPECT_EQ(back.dtype, t.dtype);
  for (size_t i = 0; i < t.data.size(); ++i) EXPECT_EQ(back.data[i], ir::roundTo(t.dtype, t.data[i])) << i;

  ir::TensorMap map = {{"a", t}, {"b", ir::Tensor({}, ir::DType::I64)}};
  map["b"].data[0] = -5;
  ir::TensorMap again = toTensors(toHostTensors(map));
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again.at("b").data[0], -5);
  EXPECT_EQ(again.at("b").dtype, ir::DType::I64);
  EXPECT_EQ(again.at("a").data, back.data);
}

} // namespace

// A compiled plan's parameters start from the interpreter's numbers
// (runtime/ParamInit.h copies ir::initialParams' draws).
TEST(TensorAdaptersTest, InitialValuesAgreeWithTheInterpreters) {
  ir::Module m;
  ir::Value *w = m.addParam("w", ir::TensorType({7, 5}, ir::DType::F32));
  w->path = "blocks.0.attention.w_qkv";
  w->initStd = 0.02;
  ir::Value *bare = m.addParam("b", ir::TensorType({3}, ir::DType::F64)); // keyed by its name
  bare->initStd = 1.5;
  for (uint64_t seed : {0ull, 1234ull, ~0ull}) {
    ir::TensorMap init = ir::initialParams(m, seed);
    for (const ir::Value *p : {(const ir::Value *)w, (const ir::Value *)bare}) {
      const std::string key = p->path.empty() ? p->name : p->path;
      const ir::Tensor &t = init.at(p->name);
      for (size_t i = 0; i < t.data.size(); ++i) {
        double mine = runtime::roundToElement(toElementType(p->type.dtype),
                                              p->initStd * runtime::initialNormal(runtime::initKey(key, seed), i));
        ASSERT_EQ(mine, t.data[i]) << key << "[" << i << "] with seed " << seed;
      }
    }
  }
}
