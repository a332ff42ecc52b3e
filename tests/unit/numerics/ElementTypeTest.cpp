//===- tests/unit/numerics/ElementTypeTest.cpp - the element type table ---===//
//
// The one table of element types: the runtime's element types are its enum,
// the IR's dtypes are it by value and read their names and sizes from it.
//
//===----------------------------------------------------------------------===//

#include "numerics/ElementType.h"

#include "ir/Type.h"
#include "runtime/ElementType.h"

#include <gtest/gtest.h>

#include <type_traits>

using namespace planc;
using namespace planc::numerics;

namespace {

static_assert(std::is_same_v<runtime::ElementType, ElementType>, "the runtime's element types are numerics'");

TEST(ElementTypeTest, NamesSizesAndKinds) {
  struct Row {
    ElementType type;
    const char *name;
    unsigned bytes;
    bool isFloat, isInteger;
  };
  const Row rows[] = {
      {ElementType::F64, "f64", 8, true, false},       {ElementType::F32, "f32", 4, true, false},
      {ElementType::BF16, "bf16", 2, true, false},     {ElementType::F16, "f16", 2, true, false},
      {ElementType::F8E4M3, "fp8_e4m3", 1, true, false}, {ElementType::F8E5M2, "fp8_e5m2", 1, true, false},
      {ElementType::I32, "i32", 4, false, true},       {ElementType::I64, "i64", 8, false, true},
      {ElementType::U8, "u8", 1, false, true},         {ElementType::U16, "u16", 2, false, true},
      {ElementType::U32, "u32", 4, false, true},       {ElementType::Bool, "bool", 1, false, false},
  };
  ASSERT_EQ(std::size(rows), size_t(kNumElementTypes));
  for (const Row &r : rows) {
    EXPECT_STREQ(spelling(r.type), r.name);
    EXPECT_EQ(byteSize(r.type), r.bytes) << r.name;
    EXPECT_EQ(isFloat(r.type), r.isFloat) << r.name;
    EXPECT_EQ(isInteger(r.type), r.isInteger) << r.name;
    EXPECT_EQ(parseElementType(r.name), r.type) << r.name;
    const auto d = ir::DType(unsigned(r.type));
    EXPECT_EQ(ir::parseDType(r.name), d) << r.name;
    EXPECT_STREQ(ir::spelling(d), r.name);
    EXPECT_EQ(ir::byteSize(d), r.bytes) << r.name;
    EXPECT_EQ(ir::isFloat(d), r.isFloat) << r.name;
    EXPECT_EQ(ir::isInteger(d), r.isInteger) << r.name;
  }
  EXPECT_EQ(parseElementType("float32"), std::nullopt);
  EXPECT_EQ(parseElementType(""), std::nullopt);
  // Out of the enum: no name, no size.
  EXPECT_STREQ(spelling(ElementType(200)), "?");
  EXPECT_EQ(byteSize(ElementType(200)), 0u);
}

} // namespace
