//===- tests/unit/compiler/StepTimeTest.cpp - the cost model on compiled plans ---===//
//
// Properties of the predicted step that any correct model has: model FLOPs
// are the op table's forward and backward of the global batch (6 FLOPs per
// parameter and token for the matmuls, and the attention's), recompute adds
// hardware FLOPs and time but no model FLOPs, twice the batch takes about
// twice as long, data parallelism over more devices divides the step, MFU
// lies in (0, 1); and the calibration file round-trips and rejects nonsense.
//
//===----------------------------------------------------------------------===//

#include "compiler/Calibrate.h"
#include "compiler/MemoryCheck.h"
#include "compiler/StepTime.h"
#include "GptPlanText.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <fstream>

using namespace planc;
using planc::testing::GptPlan;

namespace {

std::optional<PlanAnalysis> analyse(const std::string &text, std::vector<std::string> sets = {}) {
  FrontendOptions options;
  options.setOverrides = std::move(sets);
  Compilation c(options);
  if (!c.loadString("t.plan", text) || !c.check()) {
    ADD_FAILURE() << "the plan does not check";
    return std::nullopt;
  }
  auto a = analyzePlan(c, /*verifyEach=*/false);
  if (!a) {
    ADD_FAILURE() << llvm::toString(a.takeError());
    return std::nullopt;
  }
  return std::move(*a);
}

GptPlan base() {
  GptPlan p;
  p.vocab = 1024, p.seq = 128, p.hidden = 256, p.heads = 4, p.layers = 2, p.globalBatch = 8;
  return p;
}

} // namespace

TEST(StepTime, ModelFlopsAreSixPerParameterAndTokenPlusAttention) {
  GptPlan p = base();
  auto a = analyse(gptPlanText(p));
  ASSERT_TRUE(a);
  const double tokens = double(p.globalBatch * p.seq), h = double(p.hidden), L = double(p.layers);
  // Narayanan et al.: 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) for the
  // matmuls (forward and backward); the op table also counts elementwise
  // work, norms and softmax, a few percent more at this size.
  double matmuls = 72.0 * tokens * L * h * h * (1 + double(p.seq) / (6 * h) + double(p.vocab) / (12 * L * h));
  EXPECT_GT(a->time.modelFlops, matmuls);
  EXPECT_LT(a->time.modelFlops, 1.15 * matmuls);
  // Flash attention's backward computes every layer's scaled, masked scores,
  // their softmax and its dropout (std.gpt's p = 0.1) again: hardware FLOPs,
  // not the model's, per score q k^T 2d, scale 1, mask 1, softmax 5,
  // dropout 3 (d = h / heads).
  const double scores = tokens * double(p.heads) * double(p.seq), d = h / double(p.heads);
  const double again = L * scores * (2 * d + 10);
  EXPECT_NEAR(a->time.hardwareFlops - a->time.modelFlops, again, 1e-9 * again);
  // Unfused, nothing is computed twice.
  auto unfused = analyse(gptPlanText(p), {"train.fusion=none"});
  ASSERT_TRUE(unfused);
  EXPECT_EQ(unfused->time.hardwareFlops, unfused->time.modelFlops);
  EXPECT_GT(a->time.mfu(), 0.0);
  EXPECT_LT(a->time.mfu(), 1.0);
  EXPECT_DOUBLE_EQ(a->time.tokens, tokens);
}

TEST(StepTime, RecomputeCostsTimeAndHardwareFlopsButNoModelFlops) {
  auto none = analyse(gptPlanText(base()));
  auto full = analyse(gptPlanText(base()), {"parallel.recompute=full"});
  ASSERT_TRUE(none && full);
  EXPECT_DOUBLE_EQ(full->time.modelFlops, none->time.modelFlops);
  EXPECT_GT(full->time.hardwareFlops, none->time.hardwareFlops);
  EXPECT_GT(full->time.stepTime, none->time.stepTime);
  EXPECT_GT(full->time.stages[0].breakdown.recompute, 0.0);
  EXPECT_LT(full->time.hfu() / full->time.mfu(), 1.5); // at most one more forward
}

TEST(StepTime, TwiceTheBatchTakesAboutTwiceAsLong) {
  GptPlan p = base();
  auto one = analyse(gptPlanText(p));
  p.globalBatch *= 2;
  auto two = analyse(gptPlanText(p));
  ASSERT_TRUE(one && two);
  double ratio = two->time.stepTime / one->time.stepTime;
  EXPECT_GT(ratio, 1.6); // the optimizer does not grow with the batch
  EXPECT_LT(ratio, 2.05);
}

TEST(StepTime, DataParallelDividesTheStep) {
  GptPlan p = base();
  auto one = analyse(gptPlanText(p));
  p.dp = 4;
  auto four = analyse(gptPlanText(p));
  ASSERT_TRUE(one && four);
  EXPECT_EQ(four->time.devices, 4);
  EXPECT_LT(four->time.stepTime, 0.5 * one->time.stepTime);
  EXPECT_GT(four->time.stepTime, 0.25 * one->time.stepTime); // the gradients' all-reduce is not free
}

TEST(StepTime, APipelineReplaysItsScheduleWithABubble) {
  GptPlan p = base();
  p.pp = 2, p.globalBatch = 4;
  auto a = analyse(gptPlanText(p));
  ASSERT_TRUE(a);
  ASSERT_EQ(a->time.stages.size(), 2u);
  // 1F1B over 2 stages and 4 micro-batches: a bubble near (p-1)/(m+p-1).
  EXPECT_GT(a->time.bubbleFraction, 0.1);
  EXPECT_LT(a->time.bubbleFraction, 0.4);
  for (const cost::StageCost &s : a->time.stages) EXPECT_LE(s.total, a->time.stepTime * (1 + 1e-12));
}

TEST(StepTime, CalibrationFilesRoundTripAndNamesTheirErrors) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("planc-calibration", dir));
  std::string good = (dir + "/good.json").str(), bad = (dir + "/bad.json").str();
  cost::Calibration c;
  c.source = "measured";
  c.gemm = {{1e6, 0.2}, {1e9, 0.7}};
  c.memoryEfficiency = 0.6;
  c.kernelLaunch = 2e-6;
  ASSERT_FALSE(bool(writeCalibration(c, "cpu", good)));
  auto read = readCalibration(good);
  ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(read->gemm, c.gemm);
  EXPECT_DOUBLE_EQ(read->memoryEfficiency, 0.6);
  EXPECT_NEAR(read->kernelLaunch, 2e-6, 1e-15);
  EXPECT_EQ(read->source, good);

  auto expectError = [&](const std::string &text, const std::string &what) {
    std::ofstream(bad, std::ios::trunc) << text;
    auto r = readCalibration(bad);
    ASSERT_FALSE(bool(r)) << text;
    std::string message = llvm::toString(r.takeError());
    EXPECT_NE(message.find(bad), std::string::npos) << message;
    EXPECT_NE(message.find(what), std::string::npos) << message;
  };
  expectError("{", "not a JSON object");
  expectError("{\"memory_efficiency\": 0.5}", "no 'gemm' curve");
  expectError("{\"gemm\": [[1e9, 1.5]]}", "0 < efficiency <= 1");
  expectError("{\"gemm\": [[1e9, 0.5], [1e8, 0.6]]}", "increasing flops");
  expectError("{\"gemm\": [[1e9, 0.5]], \"bus_efficiency\": 2}", "'bus_efficiency' is 2");
  auto missing = readCalibration((dir + "/none.json").str());
  EXPECT_FALSE(bool(missing));
  llvm::consumeError(missing.takeError());
  llvm::sys::fs::remove_directories(dir);
}

TEST(StepTime, MeasurementsBecomeACalibrationThatReplacesTheDatasheet) {
  nlohmann::json measured = {{"gemm", {{1e6, 2e10}, {1e9, 1e11}, {1e8, 5e10}}},
                             {"peak_flops", {{"f32", 1e11}, {"f64", 5e10}}},
                             {"memory_bandwidth", 2e10},
                             {"kernel_launch_us", 0.5},
                             {"ranks", 2},
                             {"allreduce", {{4096, 1e-5}, {1 << 20, 2e-4}}}};
  auto c = calibrationFromMeasurements(measured);
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  // Points in order of FLOPs, as fractions of the peak; one out of order dropped.
  ASSERT_EQ(c->gemm.size(), 2u);
  EXPECT_DOUBLE_EQ(c->gemm[0].second, 0.2);
  EXPECT_DOUBLE_EQ(c->gemm[1].second, 1.0);
  EXPECT_EQ(c->peakFlops.at("bf16"), 1e11); // computed in f32 on the CPU
  EXPECT_DOUBLE_EQ(c->kernelLaunch, 0.5e-6);
  ASSERT_TRUE(c->intraNode.has_value());
  // Bus bandwidth 2(n-1)/n S / t at the largest; latency from the smallest.
  EXPECT_DOUBLE_EQ(c->intraNode->bandwidth, double(1 << 20) / 2e-4);
  EXPECT_DOUBLE_EQ(c->intraNode->latency, 1e-5 / 2);

  DeviceSpec cpu;
  cpu.name = "cpu";
  cpu.peakFlops = {{"f32", 3.84e11}};
  cpu.memoryBandwidth = 25e9;
  ClusterConfig cluster;
  cluster.device = cpu;
  cost::Hardware hw = hardwareOf(cluster, &*c);
  EXPECT_EQ(hw.peakFor("f32"), 1e11);
  EXPECT_EQ(hw.memoryBandwidth, 2e10);
  EXPECT_EQ(hw.intraNode.bandwidth, c->intraNode->bandwidth);

  EXPECT_FALSE(bool(calibrationFromMeasurements(nlohmann::json::object())));
  llvm::consumeError(calibrationFromMeasurements(nlohmann::json::object()).takeError());
}
