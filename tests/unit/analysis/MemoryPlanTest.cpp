//===- tests/unit/analysis/MemoryPlanTest.cpp - liveness over the schedule ---------===//
//
// The memory planner on a step small enough to count by hand: one layer
// (matmul, tanh) and its backward. tanh's output is read by backward, so it
// is an activation kept from each micro-batch's forward to its backward; the
// matmul's output only feeds tanh, a temporary. Which micro-batches are in
// flight at once is the schedule's: GPipe runs every forward first, 1F1B on
// one stage alternates, so GPipe holds all m activations before its first
// backward and 1F1B one.
//
//===----------------------------------------------------------------------===//

#include "analysis/MemoryPlan.h"

#include "ir/Parser.h"

#include <gtest/gtest.h>

using namespace planc;
using namespace planc::ir;
using namespace planc::memory;

namespace {

const char *kStep = R"(module @t {
  param %w : f32[16, 16] init normal(0.02)
  input %x : f32[4, 16]
  %h = matmul(%x, %w) {transpose_a = false, transpose_b = false} : f32[4, 16]
  %a = tanh(%h) : f32[4, 16]
  %l = reduce_sum(%a) {dims = [0, 1], keepdim = false} : f32[]
  %g = fill() {dtype = "f32", phase = "backward", shape = [4, 16], value = 1.0} : f32[4, 16]
  %da = tanh_grad(%a, %g) {phase = "backward"} : f32[4, 16]
  %dw = matmul(%x, %da) {phase = "backward", transpose_a = true, transpose_b = false} : f32[16, 16]
  %w.new, %w.buf = sgd_update(%w, %dw, %w, %l) {momentum = 0.0, nesterov = false, phase = "optimizer", weight_decay = 0.0} : f32[16, 16], f32[16, 16]
  return %l as "loss", %dw as "grad.w"
}
)";

MemoryPlan plan(pipeline::ScheduleStyle style, int microBatches) {
  auto m = parseIR(kStep);
  EXPECT_TRUE(bool(m)) << llvm::toString(m.takeError());
  pipeline::ScheduleOptions so;
  so.style = style;
  so.microBatches = microBatches;
  (*m)->schedule = so;
  auto p = planMemory(**m);
  EXPECT_TRUE(bool(p)) << llvm::toString(p.takeError());
  return std::move(*p);
}

constexpr uint64_t kActivation = 4 * 16 * 4; // one micro-batch's %a, f32
constexpr uint64_t kWeight = 16 * 16 * 4;

TEST(MemoryPlanTest, GPipeKeepsEveryMicroBatchsActivation) {
  MemoryPlan p = plan(pipeline::ScheduleStyle::GPipe, 3);
  ASSERT_EQ(p.stages.size(), 1u);
  const StagePlan &s = p.stages[0];
  // The peak is in the second backward: the weight gradient (one buffer for
  // all micro-batches, made by the first backward) is resident, the first
  // micro-batch's activation is released, the second's and third's are held
  // while tanh_grad makes its result.
  EXPECT_EQ(s.atPeak[size_t(Category::Activations)], 2 * kActivation);
  EXPECT_EQ(s.atPeak[size_t(Category::Gradients)], kWeight);
  EXPECT_EQ(s.peakOp, "tanh_grad %da");
  EXPECT_EQ(s.peakMicroBatch, 1);
  EXPECT_EQ(s.peakWork, "backward");
  EXPECT_EQ(s.ranks, (std::vector<int64_t>{0}));
}

TEST(MemoryPlanTest, OneFOneBOnOneStageKeepsOne) {
  MemoryPlan p = plan(pipeline::ScheduleStyle::OneFOneB, 3);
  const StagePlan &s = p.stages[0];
  EXPECT_LE(s.atPeak[size_t(Category::Activations)], kActivation);
  EXPECT_LT(s.peak, plan(pipeline::ScheduleStyle::GPipe, 3).stages[0].peak);
}

TEST(MemoryPlanTest, ResidentStateAndArena) {
  MemoryPlan p = plan(pipeline::ScheduleStyle::GPipe, 2);
  const StagePlan &s = p.stages[0];
  // %w is both the parameter and (as its own momentum buffer here) the
  // update's state operand: counted once, as optimizer state.
  EXPECT_EQ(s.atPeak[size_t(Category::OptimizerState)], kWeight);
  EXPECT_EQ(s.atPeak[size_t(Category::Parameters)], 0u);
  // The gradient is summed over the micro-batches into one buffer read by
  // the update.
  EXPECT_LE(s.atPeak[size_t(Category::Gradients)], kWeight);
  uint64_t sum = 0;
  for (uint64_t b : s.atPeak) sum += b;
  EXPECT_EQ(sum, s.peak);
  EXPECT_GE(s.arena, s.peak);
  EXPECT_FALSE(s.timeline.empty());
  EXPECT_EQ(*std::max_element(s.timeline.begin(), s.timeline.end()), s.peak);
}

TEST(MemoryPlanTest, RejectsAnUnrolledStep) {
  auto m = parseIR(kStep);
  ASSERT_TRUE(bool(m));
  (*m)->ops[0]->attrs["micro_batch"] = int64_t(0);
  auto p = planMemory(**m);
  ASSERT_FALSE(bool(p));
  EXPECT_NE(llvm::toString(p.takeError()).find("not an unrolled one"), std::string::npos);
}

} // namespace
