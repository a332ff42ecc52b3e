//===- tests/unit/analysis/CostModelTest.cpp - the pieces of the cost model ----===//
//
// The GEMM efficiency curve, the α-β time of a collective and the link its
// group crosses, and the timed replay of a pipeline schedule with message
// delays.
//
//===----------------------------------------------------------------------===//

#include "analysis/CostModel.h"

#include <gtest/gtest.h>

using namespace planc;
using namespace planc::cost;

namespace {

Hardware twoNodes() {
  Hardware hw;
  hw.nodes = 2;
  hw.devicesPerNode = 8;
  hw.intraNode = {100e9, 2e-6};
  hw.interNode = {10e9, 5e-6};
  hw.calibration.busEfficiency = 1.0;
  return hw;
}

} // namespace

TEST(CostModel, GemmEfficiencyInterpolatesInLogFlopsAndClampsAtTheEnds) {
  Calibration c;
  c.gemm = {{1e8, 0.1}, {1e10, 0.5}};
  EXPECT_DOUBLE_EQ(c.gemmEfficiency(1e6), 0.1);
  EXPECT_DOUBLE_EQ(c.gemmEfficiency(1e12), 0.5);
  EXPECT_NEAR(c.gemmEfficiency(1e9), 0.3, 1e-12); // halfway in log FLOPs
  Calibration none;
  EXPECT_DOUBLE_EQ(none.gemmEfficiency(1e9), 1.0);
}

TEST(CostModel, CollectivesUseTheRingBytesAndOneLatencyPerStep) {
  Hardware hw = twoNodes();
  // All-reduce of 1 GB over 4 ranks of one node: 2(n-1)/n S at 100 GB/s,
  // plus 2(n-1) latencies.
  double t = collectiveSeconds(ir::OpKind::AllReduce, 4, 1, 1000000000ull, hw);
  EXPECT_NEAR(t, 1.5e9 / 100e9 + 6 * 2e-6, 1e-12);
  // The same group 8 ranks apart spans both nodes: the inter-node link.
  double far = collectiveSeconds(ir::OpKind::AllReduce, 2, 8, 1000000000ull, hw);
  EXPECT_NEAR(far, 1e9 / 10e9 + 2 * 5e-6, 1e-12);
  // One rank sends nothing.
  EXPECT_EQ(collectiveSeconds(ir::OpKind::AllGather, 1, 1, 1 << 20, hw), 0.0);
  // One node: every group is inside it, however its ranks are spread.
  hw.nodes = 1;
  EXPECT_NEAR(collectiveSeconds(ir::OpKind::AllGather, 2, 8, 1000000000ull, hw), 0.5e9 / 100e9 + 2e-6, 1e-12);
}

TEST(CostModel, PeakForFallsBackToF32ForADtypeWithoutUnits) {
  Hardware hw;
  hw.peakFlops = {{"f32", 19.5e12}, {"bf16", 312e12}};
  EXPECT_EQ(hw.peakFor("bf16"), 312e12);
  EXPECT_EQ(hw.peakFor("fp8_e4m3"), 19.5e12);
}

TEST(CostModel, TimedReplayChargesComputeAndMessageDelays) {
  using namespace planc::pipeline;
  auto s = buildSchedule({ScheduleStyle::GPipe, 2, 1, 1});
  ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
  // Rank r's forward takes 1 + r, its backward 10; a message takes 0.5.
  auto replay = replayTimed(
      *s,
      [](int r, const Instr &i) { return i.kind == InstrKind::Forward ? 1.0 + r : 10.0; },
      [](int, const Instr &) { return 0.5; });
  ASSERT_TRUE(bool(replay)) << llvm::toString(replay.takeError());
  // F0 (1), message, F1 (2), B1 (10), message, B0 (10).
  EXPECT_DOUBLE_EQ(replay->finish[1], 1 + 0.5 + 2 + 10);
  EXPECT_DOUBLE_EQ(replay->finish[0], 1 + 0.5 + 2 + 10 + 0.5 + 10);
  EXPECT_DOUBLE_EQ(replay->stepTime, replay->finish[0]);
  EXPECT_DOUBLE_EQ(replay->busy[0], 11.0);
  EXPECT_DOUBLE_EQ(replay->busy[1], 12.0);
}

TEST(CostModel, TimedReplayWithUnitCostsMatchesTheTickSimulation) {
  using namespace planc::pipeline;
  for (auto style : {ScheduleStyle::GPipe, ScheduleStyle::OneFOneB, ScheduleStyle::ZeroBubble}) {
    auto s = buildSchedule({style, 4, 8, 1});
    ASSERT_TRUE(bool(s));
    auto ticks = simulate(*s);
    ASSERT_TRUE(bool(ticks));
    auto timed = replayTimed(
        *s, [&](int, const Instr &i) { return double(costInTicks(s->options, i.kind)); },
        [](int, const Instr &) { return 0.0; });
    ASSERT_TRUE(bool(timed));
    EXPECT_DOUBLE_EQ(timed->stepTime, double(ticks->stepTime)) << spelling(style);
  }
}
