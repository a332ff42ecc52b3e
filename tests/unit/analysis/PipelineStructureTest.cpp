//===- tests/unit/analysis/PipelineStructureTest.cpp - the structural check, rule by rule ---===//
//
// A hand-written, unrolled two-stage step (one micro-batch): a model-level
// embedding, one layer per stage, a model-level head, their backward, and
// one optimizer-phase exchange of a tied parameter's gradient. It is right
// as written; each test breaks one rule of analysis/PipelineStructure.h and
// expects exactly the violation that names it.
//
//===----------------------------------------------------------------------===//

#include "analysis/PipelineStructure.h"

#include "OpTestHelpers.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace planc;
using namespace planc::ir;

namespace {

const char *kStep = R"(module @two mesh(pp = 2) {
  param %table : f32[4] init normal(0.02) path "emb.table"
  param %w0 : f32[4] init normal(0.02) path "blocks.0.w"
  param %w1 : f32[4] init normal(0.02) path "blocks.1.w"
  input %x : f32[4]
  %e = mul(%x, %table) {micro_batch = 0, pipeline_stage = 0, work = "forward"} : f32[4] path "emb"
  %h0 = mul(%e, %w0) {micro_batch = 0, pipeline_stage = 0, work = "forward"} : f32[4] path "blocks.0"
  send(%h0) {axis = "pp", micro_batch = 0, peer_offset = 1, pipeline_stage = 0, tag = 1, work = "forward"} path "blocks.0"
  %r0 = recv() {axis = "pp", dtype = "f32", micro_batch = 0, peer_offset = -1, pipeline_stage = 1, shape = [4], tag = 1, work = "forward"} : f32[4] path "blocks.1"
  %h1 = mul(%r0, %w1) {micro_batch = 0, pipeline_stage = 1, work = "forward"} : f32[4] path "blocks.1"
  %y = mul(%h1, %table) {micro_batch = 0, pipeline_stage = 1, work = "forward"} : f32[4] path "head"
  %gy = neg(%y) {micro_batch = 0, phase = "backward", pipeline_stage = 1, work = "backward"} : f32[4] path "head"
  %gt1 = mul(%gy, %h1) {micro_batch = 0, phase = "backward", pipeline_stage = 1, work = "backward"} : f32[4] path "head"
  %g1 = mul(%gy, %w1) {micro_batch = 0, phase = "backward", pipeline_stage = 1, work = "backward"} : f32[4] path "blocks.1"
  send(%g1) {axis = "pp", micro_batch = 0, peer_offset = -1, phase = "backward", pipeline_stage = 1, tag = 2, work = "backward"} path "blocks.1"
  %rg = recv() {axis = "pp", dtype = "f32", micro_batch = 0, peer_offset = 1, phase = "backward", pipeline_stage = 0, shape = [4], tag = 2, work = "backward"} : f32[4] path "blocks.0"
  %g0 = mul(%rg, %w0) {micro_batch = 0, phase = "backward", pipeline_stage = 0, work = "backward"} : f32[4] path "blocks.0"
  %gt0 = mul(%g0, %x) {micro_batch = 0, phase = "backward", pipeline_stage = 0, work = "backward"} : f32[4] path "emb"
  send(%gt1) {axis = "pp", peer_offset = -1, phase = "optimizer", pipeline_stage = 1, tag = 3} path "emb"
  %rt = recv() {axis = "pp", dtype = "f32", peer_offset = 1, phase = "optimizer", pipeline_stage = 0, shape = [4], tag = 3} : f32[4] path "emb"
  %grad.emb.table = add(%gt0, %rt) {phase = "optimizer", pipeline_stage = 0} : f32[4] path "emb"
  return %grad.emb.table as "grad.emb.table"
}
)";

pipeline::ScheduleOptions twoStages() {
  pipeline::ScheduleOptions so;
  so.stages = 2;
  so.microBatches = 1;
  return so;
}

/// The violations of kStep with `from` replaced by `to` (once).
std::vector<std::string> violationsWith(const std::string &from, const std::string &to) {
  std::string text = kStep;
  if (!from.empty()) {
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
  }
  auto m = ir::testing::parse(text);
  if (!m) return {"(no module)"};
  return checkPipelineStructure(stepViewOf(*m), twoStages());
}

TEST(PipelineStructureTest, TheRightStepHasNoViolation) {
  EXPECT_EQ(violationsWith("", ""), std::vector<std::string>{});
}

TEST(PipelineStructureTest, OneStageIsNeverChecked) {
  auto m = ir::testing::parse(kStep);
  ASSERT_TRUE(m);
  pipeline::ScheduleOptions so;
  EXPECT_TRUE(checkPipelineStructure(stepViewOf(*m), so).empty());
}

TEST(PipelineStructureTest, ALayerOpOnAnotherStage) {
  auto v = violationsWith(R"(%g0 = mul(%rg, %w0) {micro_batch = 0, phase = "backward", pipeline_stage = 0)",
                          R"(%g0 = mul(%rg, %w0) {micro_batch = 0, phase = "backward", pipeline_stage = 1)");
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0], "'mul' %g0 (blocks.0, backward, micro-batch 0) runs on stage 1, but layer blocks.0 is on stage 0");
}

TEST(PipelineStructureTest, TheHeadOnTheFirstStage) {
  auto v = violationsWith(R"(%y = mul(%h1, %table) {micro_batch = 0, pipeline_stage = 1)",
                          R"(%y = mul(%h1, %table) {micro_batch = 0, pipeline_stage = 0)");
  // (The table is then read on stage 0 alone, so its gradient's exchange is
  // flagged too.)
  std::string want = "'mul' %y (head, forward, micro-batch 0) runs on stage 0, but belongs on stage 1: it reads the "
                     "layers' output";
  std::string all;
  for (const std::string &s : v) all += s + "\n";
  EXPECT_NE(std::find(v.begin(), v.end(), want), v.end()) << all;
}

TEST(PipelineStructureTest, TheEmbeddingGradientOnTheLastStage) {
  auto v = violationsWith(R"(%gt0 = mul(%g0, %x) {micro_batch = 0, phase = "backward", pipeline_stage = 0)",
                          R"(%gt0 = mul(%g0, %x) {micro_batch = 0, phase = "backward", pipeline_stage = 1)");
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0], "'mul' %gt0 (emb, backward, micro-batch 0) runs on stage 1, but belongs on stage 0: it reads the "
                  "layers' input gradient");
}

TEST(PipelineStructureTest, TheHeadGradientOnTheFirstStage) {
  auto v = violationsWith(R"(%gt1 = mul(%gy, %h1) {micro_batch = 0, phase = "backward", pipeline_stage = 1)",
                          R"(%gt1 = mul(%gy, %h1) {micro_batch = 0, phase = "backward", pipeline_stage = 0)");
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0], "'mul' %gt1 (head, backward, micro-batch 0) runs on stage 0, but belongs on stage 1: it is backward "
                  "work before the layers' backward");
}

TEST(PipelineStructureTest, ASecondActivationMessage) {
  auto v = violationsWith(R"(  %r0 = recv())", R"(  send(%e) {axis = "pp", micro_batch = 0, peer_offset = 1, pipeline_stage = 0, tag = 9, work = "forward"} path "emb"
  %re = recv() {axis = "pp", dtype = "f32", micro_batch = 0, peer_offset = -1, pipeline_stage = 1, shape = [4], tag = 9, work = "forward"} : f32[4] path "blocks.1"
  %r0 = recv())");
  ASSERT_EQ(v.size(), 1u) << (v.empty() ? "" : v[0]);
  EXPECT_EQ(v[0], "forward of micro-batch 0 sends 2 messages from stage 0 to 1 (the schedule implies one): %h0 %e");
}

TEST(PipelineStructureTest, NoBackwardMessage) {
  // The activation gradient computed on the first stage from the received
  // forward value: no message goes back.
  auto v = violationsWith(R"(send(%g1) {axis = "pp", micro_batch = 0, peer_offset = -1, phase = "backward", pipeline_stage = 1, tag = 2, work = "backward"} path "blocks.1")",
                          "");
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v.back(), "backward of micro-batch 0 sends 0 messages from stage 1 to 0 (the schedule implies one)");
}

TEST(PipelineStructureTest, AnOptimizerMessageOfAnUnsharedValue) {
  // %w1's own update input sent to stage 0: only the tied table's gradient may cross.
  auto v = violationsWith(R"(  return %grad.emb.table)", R"(  send(%w1) {axis = "pp", peer_offset = -1, phase = "optimizer", pipeline_stage = 1, tag = 4} path "blocks.1"
  %rw = recv() {axis = "pp", dtype = "f32", peer_offset = 1, phase = "optimizer", pipeline_stage = 0, shape = [4], tag = 4} : f32[4] path "blocks.1"
  return %grad.emb.table)");
  ASSERT_EQ(v.size(), 1u) << (v.empty() ? "" : v[0]);
  EXPECT_EQ(v[0], "'send' (blocks.1, optimizer) sends %w1 from stage 1 to stage 0 in the optimizer phase; only the "
                  "gradient of a parameter that several stages read crosses stages there");
}

} // namespace
