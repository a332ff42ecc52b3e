//===- tests/unit/ir/ConvertFloatsTest.cpp - one float dtype for a module ----===//
//
// Every float value and float dtype attribute changes, integers stay, and the
// module still verifies and runs.
//
//===----------------------------------------------------------------------===//

#include "ir/Builder.h"
#include "ir/ConvertFloats.h"
#include "ir/Interpreter.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

using namespace planc;
using namespace planc::ir;

namespace {

TEST(ConvertFloatsTest, EveryFloatBecomesF64) {
  Module m;
  m.name = "mixed";
  Value *w = m.addParam("w", TensorType({4, 3}, DType::F32));
  Value *ids = m.addInput("ids", TensorType({2}, DType::I32));
  Builder b(m);
  Value *rows = b.value(OpKind::Gather, {w, ids});
  Value *half = b.value(OpKind::Cast, {rows}, {{"dtype", std::string("bf16")}});
  Value *one = b.value(OpKind::Fill, {}, {{"value", 1.0}, {"shape", Shape{2, 3}}, {"dtype", std::string("bf16")}});
  Value *sum = b.add(half, one);
  Value *count = b.value(OpKind::Cast, {ids}, {{"dtype", std::string("i64")}});
  m.outputs = {{"sum", sum}, {"count", count}};
  ASSERT_FALSE(bool(verify(m)));

  convertFloatTypes(m, DType::F64);
  EXPECT_FALSE(bool(verify(m)));
  EXPECT_EQ(w->type.dtype, DType::F64);
  EXPECT_EQ(sum->type.dtype, DType::F64);
  EXPECT_EQ(half->def->getString("dtype"), "f64");
  EXPECT_EQ(one->def->getString("dtype"), "f64");
  EXPECT_EQ(ids->type.dtype, DType::I32) << "integers stay";
  EXPECT_EQ(count->def->getString("dtype"), "i64");

  // 0.1 + 1 keeps f64's precision: no value passed through bf16 or f32.
  Tensor wv({4, 3}, DType::F64);
  wv.data.assign(12, 0.1);
  Tensor iv({2}, DType::I32);
  auto out = interpret(m, {{"w", wv}, {"ids", iv}});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  EXPECT_EQ(out->at("sum").data[0], 0.1 + 1.0);
}

} // namespace
