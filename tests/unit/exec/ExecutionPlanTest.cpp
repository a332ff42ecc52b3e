//===- tests/unit/exec/ExecutionPlanTest.cpp - spellings, ==, programOf ----===//
//
// Equality sees every field (the round-trip tests rely on it), the words of
// the enums, and the program of a rank by its pp coordinate.
//
//===----------------------------------------------------------------------===//

#include "ExecTestPlans.h"

#include <gtest/gtest.h>

#include <functional>

using namespace planc;
using namespace planc::exec;
using namespace planc::exec::testplans;

namespace {

TEST(ExecutionPlanTest, Spellings) {
  EXPECT_STREQ(spelling(BufferRole::Param), "param");
  EXPECT_STREQ(spelling(BufferRole::Input), "input");
  EXPECT_STREQ(spelling(BufferRole::Internal), "internal");
  EXPECT_STREQ(spelling(Stream::Compute), "compute");
  EXPECT_STREQ(spelling(Stream::Communication), "comm");
}

TEST(ExecutionPlanTest, EqualityComparesEveryField) {
  const ExecutionPlan plan = pipelinePlan();
  ASSERT_TRUE(plan == pipelinePlan());
  using Change = std::function<void(ExecutionPlan &)>;
  auto buf = [](ExecutionPlan &p) -> Buffer & { return p.programs[0].buffers[1]; };
  auto st = [](ExecutionPlan &p) -> Step & { return p.programs[0].steps[1]; };
  auto out = [](ExecutionPlan &p) -> OutputBinding & { return p.programs[0].outputs[0]; };
  std::vector<std::pair<const char *, Change>> changes = {
      {"plan.name", [](ExecutionPlan &p) { p.name = "other"; }},
      {"plan.mesh", [](ExecutionPlan &p) { p.mesh[unsigned(MeshAxis::TP)] = 2; }},
      {"schedule.style", [](ExecutionPlan &p) { p.schedule.style = ScheduleStyle::GPipe; }},
      {"schedule.stages", [](ExecutionPlan &p) { p.schedule.stages = 3; }},
      {"schedule.microBatches", [](ExecutionPlan &p) { p.schedule.microBatches = 2; }},
      {"schedule.virtualStages", [](ExecutionPlan &p) { p.schedule.virtualStages = 2; }},
      {"plan.alignment", [](ExecutionPlan &p) { p.alignment = 128; }},
      {"program.stage", [](ExecutionPlan &p) { p.programs[0].stage = 5; }},
      {"program.ranks", [](ExecutionPlan &p) { p.programs[0].ranks.push_back(9); }},
      {"program.arenaSize", [](ExecutionPlan &p) { p.programs[0].arenaSize += 64; }},
      {"program.events", [](ExecutionPlan &p) { p.programs[0].events += 1; }},
      {"buffer.name", [&](ExecutionPlan &p) { buf(p).name = "y"; }},
      {"buffer.value", [&](ExecutionPlan &p) { buf(p).editValue().name = "y"; }},
      {"buffer.slot", [&](ExecutionPlan &p) { buf(p).slot = 1; }},
      {"buffer.type", [&](ExecutionPlan &p) { buf(p).editValue().type.dtype = ir::DType::BF16; }},
      {"buffer.local", [&](ExecutionPlan &p) { buf(p).editValue().local = {2, 4}; }},
      {"buffer.offset", [&](ExecutionPlan &p) { buf(p).offset += 64; }},
      {"buffer.size", [&](ExecutionPlan &p) { buf(p).size += 64; }},
      {"buffer.category", [&](ExecutionPlan &p) { buf(p).category = memory::Category::Temporaries; }},
      {"buffer.role", [&](ExecutionPlan &p) { buf(p).role = BufferRole::Internal; }},
      {"buffer.path", [&](ExecutionPlan &p) { buf(p).path = "z"; }},
      {"buffer.aliasOf", [&](ExecutionPlan &p) { buf(p).aliasOf = 0; }},
      {"buffer.firstStep", [&](ExecutionPlan &p) { buf(p).firstStep = 0; }},
      {"buffer.lastStep", [&](ExecutionPlan &p) { buf(p).lastStep = 4; }},
      {"step.kind", [&](ExecutionPlan &p) { st(p).kind = ir::OpKind::Recv; }},
      {"step.attrs", [&](ExecutionPlan &p) { st(p).attrs["tag"] = int64_t(9); }},
      {"step.microBatch", [&](ExecutionPlan &p) { st(p).microBatch = 1; }},
      {"step.work", [&](ExecutionPlan &p) { st(p).work = ir::Work::Backward; }},
      {"step.chunk", [&](ExecutionPlan &p) { st(p).chunk = 1; }},
      {"step.stream", [&](ExecutionPlan &p) { st(p).stream = Stream::Compute; }},
      {"step.inputs", [&](ExecutionPlan &p) { st(p).inputs = {1}; }},
      {"step.outputs", [&](ExecutionPlan &p) { st(p).outputs = {2}; }},
      {"step.accumulate", [&](ExecutionPlan &p) { st(p).accumulate = {true}; }},
      {"step.event", [&](ExecutionPlan &p) { st(p).event = 1; }},
      {"step.waits", [&](ExecutionPlan &p) { st(p).waits = {0}; }},
      {"step.loc", [&](ExecutionPlan &p) { st(p).loc.line = 4; }},
      {"step.path", [&](ExecutionPlan &p) { st(p).path = "q"; }},
      {"output.name", [&](ExecutionPlan &p) { out(p).name = "q"; }},
      {"output.role", [&](ExecutionPlan &p) { out(p).role = ir::OutputRole::Loss; }},
      {"output.path", [&](ExecutionPlan &p) { out(p).path = "q"; }},
      {"output.owner", [&](ExecutionPlan &p) { out(p).owner = "q"; }},
      {"output.buffer", [&](ExecutionPlan &p) { out(p).buffer = 4; }},
  };
  for (const auto &[field, change] : changes) {
    ExecutionPlan other = plan;
    change(other);
    EXPECT_FALSE(other == plan) << field;
  }
}

TEST(ExecutionPlanTest, ProgramOfARankIsItsStages) {
  ExecutionPlan plan = pipelinePlan();
  // rank = pp + 2 * dp: ranks 0 and 2 run stage 0, ranks 1 and 3 stage 1.
  EXPECT_EQ(plan.programOf(0).stage, 0);
  EXPECT_EQ(plan.programOf(1).stage, 1);
  EXPECT_EQ(plan.programOf(2).stage, 0);
  EXPECT_EQ(plan.programOf(3).stage, 1);
}

TEST(ExecutionPlanTest, SharedAttributesAndValuesChangeForOneStepOrBufferAlone) {
  ExecutionPlan plan = pipelinePlan();
  RankProgram &p = plan.programs[0];
  // Two steps sharing one map, two buffers one value: a change to one is
  // that one's alone (copy on write), and equality still sees the content.
  p.steps[1].attrs = p.steps[0].attrs;
  Step &a = p.steps[0], &b = p.steps[1];
  ASSERT_EQ(a.attrs.identity(), b.attrs.identity());
  EXPECT_TRUE(a.attrs.isShared());
  b.attrs["tag"] = int64_t(7);
  EXPECT_NE(a.attrs.identity(), b.attrs.identity());
  EXPECT_EQ(a.attrs.count("tag"), 0u);
  EXPECT_EQ(std::get<int64_t>(b.attrs.at("tag")), 7);
  StepAttrs copy(a.attrs.map());
  EXPECT_TRUE(copy == a.attrs); // equal content, not the same map

  p.buffers[1].shareValueOf(p.buffers[0]);
  ASSERT_EQ(p.buffers[0].sharedValue(), p.buffers[1].sharedValue());
  p.buffers[1].editValue().local = {99};
  EXPECT_NE(p.buffers[0].local(), p.buffers[1].local());
  EXPECT_EQ(p.buffers[1].local(), Shape{99});
  EXPECT_EQ(p.buffers[1].value(), p.buffers[0].value());
  // A buffer with no value reads as an empty one rather than failing.
  Buffer none;
  EXPECT_EQ(none.value(), "");
  EXPECT_TRUE(none.local().empty());
}

} // namespace
