//===- tests/unit/ir/DropoutStepTest.cpp - dropout masks across runs --------===//
//
// A trainer passes the interpreter one draw seed per step: the mask must be the
// same within a run (forward, backward and recomputation read the same op
// attributes) and differ between steps.
//
//===----------------------------------------------------------------------===//

#include "ir/Builder.h"
#include "ir/Interpreter.h"

#include <gtest/gtest.h>

using namespace planc;
using namespace planc::ir;

namespace {

std::vector<double> mask(uint64_t runSeed) {
  Module m;
  m.name = "d";
  Value *x = m.addInput("x", TensorType({64}, DType::F64));
  Builder b(m);
  AttrMap attrs{{"p", 0.5}, {"seed", int64_t(7)}, {"stream", int64_t(3)}};
  Value *first = b.value(OpKind::Dropout, {x}, attrs);
  Value *again = b.value(OpKind::Dropout, {x}, attrs); // a recomputation of the same site
  m.outputs = {{"first", first}, {"again", again}};
  Tensor ones({64}, DType::F64);
  ones.data.assign(64, 1.0);
  auto out = interpret(m, {{"x", ones}}, runSeed);
  EXPECT_TRUE(bool(out));
  if (!out) {
    llvm::consumeError(out.takeError());
    return {};
  }
  EXPECT_EQ(out->at("first").data, out->at("again").data) << "one run, one mask";
  return out->at("first").data;
}

TEST(DropoutStepTest, SameWithinARunDifferentAcrossSteps) {
  std::vector<double> step1 = mask(1), step1Again = mask(1), step2 = mask(2);
  EXPECT_EQ(step1, step1Again);
  EXPECT_NE(step1, step2);
  int kept = 0;
  for (double v : step2) kept += v != 0;
  EXPECT_GT(kept, 16);
  EXPECT_LT(kept, 48);
}

} // namespace
