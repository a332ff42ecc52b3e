//===- tests/unit/backend/TensorAdaptersTest.cpp - ir::Tensor and runtime::HostTensor -===//
//
// The interpreter's tensors (f64 values) and the runtime's (typed bytes)
// converted both ways, and the dtypes and element types converted by value.
// The element types' table, their rounding and Philox are the numerics
// leaf's on both sides (tests/unit/numerics).
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
