//===- tests/unit/compiler/MainGradStatesTest.cpp - fp32 main gradients under ZeRO -===//
//
// Megatron-LM's accounting with fp32 main gradients (`precision bf16(master =
// f32, grads = f32)`): every parameter holds 2 bytes of bf16 weight and 4 of
// f32 gradient, accumulated over the micro-batches, and 12 of f32 master, m
// and v. Without the distributed optimizer (zero 0) that is 2 + 4 + 12 = 18
// bytes per parameter; the distributed optimizer is ZeRO-1 with whole f32
// gradients: 2 + 4 + 12/d = 6 + 12/d (Megatron's docs/source/distrib_optimizer).
// ZeRO-2 splits the f32 gradient too (2 + 16/d), ZeRO-3 everything (18/d).
// The figures come from the memory planner, which reads them off the
// partitioned IR, so they hold only if the gradient really stays whole and
// f32 until its one reduction per step.
//
// The model is GPT-shaped with every tensor's first dim divisible by 2, 3, 4,
// 6, 8, 12 and 16 (hidden 96, vocab 384, seq 48, 4h = 384, 3h = 288), so each
// split is exact and the figures must be too, to the byte. Two micro-batches
// per rank: accumulation must not add a second gradient buffer.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "compiler/Ledger.h"
#include "frontend/Verify.h"

#include "ir/IR.h"

#include "GptPlanText.h"

#include <gtest/gtest.h>

#include <string>

using namespace planc;
using namespace planc::memory;

namespace {

std::string planText(int dp, int zero, const std::string &precision) {
  planc::testing::GptPlan p;
  p.vocab = 384, p.seq = 48, p.hidden = 96;
  p.dp = dp, p.zero = zero, p.globalBatch = 2 * dp, p.precision = precision;
  return planc::testing::gptPlanText(p);
}

struct Planned {
  uint64_t psi = 0; // trainable parameters
  CategoryBytes states{};
};

Planned plan(int dp, int zero, const std::string &precision = "bf16(master = f32, grads = f32)") {
  Compilation c;
  auto consumer = std::make_unique<CollectingConsumer>();
  CollectingConsumer *diags = consumer.get();
  c.setDiagnosticConsumer(std::move(consumer));
  Planned out;
  if (!c.loadString("t.plan", planText(dp, zero, precision)) || !c.check()) {
    std::string text;
    for (const Diagnostic &d : diags->diagnostics) text += d.message + "\n";
    ADD_FAILURE() << "the frontend rejected the plan:\n" << text;
    return out;
  }
  std::unique_ptr<ir::Module> m = lowerToIR(c);
  for (const ir::Value *p : m->params)
    if (!p->frozen) out.psi += uint64_t(p->type.numel());
  auto memory = planMemoryOf(c);
  if (!memory) {
    ADD_FAILURE() << llvm::toString(memory.takeError());
    return out;
  }
  EXPECT_EQ(memory->stages.size(), 1u);
  out.states = memory->stages[0].modelStates;
  return out;
}

uint64_t at(const CategoryBytes &b, Category c) { return b[size_t(c)]; }
uint64_t total(const CategoryBytes &b) {
  return at(b, Category::Parameters) + at(b, Category::Gradients) + at(b, Category::OptimizerState);
}

const int kDataParallel[] = {2, 3, 4, 6, 8, 16};

TEST(MainGradStatesTest, EighteenBytesWithoutTheDistributedOptimizer) {
  for (int dp : {1, 2, 3, 8}) {
    SCOPED_TRACE("dp = " + std::to_string(dp));
    Planned p = plan(dp, 0);
    ASSERT_EQ(p.psi, 265344u); // 2 x (12 h^2 + 13 h) + vocab h + seq h + 2 h
    EXPECT_EQ(at(p.states, Category::Parameters), 2 * p.psi);
    EXPECT_EQ(at(p.states, Category::Gradients), 4 * p.psi);
    EXPECT_EQ(at(p.states, Category::OptimizerState), 12 * p.psi);
    EXPECT_EQ(total(p.states), 18 * p.psi);
  }
}

TEST(MainGradStatesTest, DistributedOptimizerHoldsSixPlusTwelveOverD) {
  // ZeRO-1 keeps the whole f32 gradient (4 psi), not a 1/d shard of it.
  for (int dp : kDataParallel) {
    SCOPED_TRACE("dp = " + std::to_string(dp));
    Planned p = plan(dp, 1);
    const uint64_t psi = p.psi, d = uint64_t(dp);
    ASSERT_EQ(psi % d, 0u);
    EXPECT_EQ(at(p.states, Category::Parameters), 2 * psi);
    EXPECT_EQ(at(p.states, Category::Gradients), 4 * psi);
    EXPECT_EQ(at(p.states, Category::OptimizerState), 12 * psi / d);
    EXPECT_EQ(total(p.states), 6 * psi + 12 * psi / d);
  }
}

TEST(MainGradStatesTest, ZeroTwoAndThreeSplitTheFloat32Gradient) {
  for (int dp : kDataParallel) {
    SCOPED_TRACE("dp = " + std::to_string(dp));
    const uint64_t d = uint64_t(dp);
    Planned two = plan(dp, 2);
    EXPECT_EQ(at(two.states, Category::Parameters), 2 * two.psi);
    EXPECT_EQ(at(two.states, Category::Gradients), 4 * two.psi / d);
    EXPECT_EQ(total(two.states), 2 * two.psi + 16 * two.psi / d);
    Planned three = plan(dp, 3);
    EXPECT_EQ(total(three.states), 18 * three.psi / d);
  }
}

TEST(MainGradStatesTest, CompactGradientsStayZerosSixteenBytes) {
  // The default (grads in the compute dtype) is unchanged: ZeRO-1's 4 + 12/d.
  for (int dp : {2, 3, 8}) {
    SCOPED_TRACE("dp = " + std::to_string(dp));
    Planned p = plan(dp, 1, "bf16(master = f32)");
    EXPECT_EQ(at(p.states, Category::Gradients), 2 * p.psi);
    EXPECT_EQ(total(p.states), 4 * p.psi + 12 * p.psi / uint64_t(dp));
  }
}

} // namespace
