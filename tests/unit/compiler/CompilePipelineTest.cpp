//===- tests/unit/compiler/CompilePipelineTest.cpp - the compiler's stages, one by one ---===//
//
// compile() stopped after each stage hands back what that stage makes, with
// the one batch convention of compiler/Pipeline.h: a one-device module has
// the rows its BatchScope says; every partitioned module is one micro-batch
// of every dp rank, which the execution plan runs once per micro-batch.
//
//===----------------------------------------------------------------------===//

#include "compiler/GptPlanText.h"
#include "compiler/Pipeline.h"
#include "support/Diagnostics.h"

#include <gtest/gtest.h>

#include <set>

using namespace planc;

namespace {

// dp = 2, pp = 2; global batch 8 of micro-batches of 1: 4 micro-batches.
std::string pipelinePlan() {
  planc::testing::GptPlan p;
  p.vocab = 64, p.seq = 8, p.hidden = 16, p.heads = 2;
  p.dp = 2, p.pp = 2, p.globalBatch = 8;
  return planc::testing::gptPlanText(p);
}

class Silent : public DiagnosticConsumer {
  void handle(const Diagnostic &) override {}
};

std::unique_ptr<Compilation> checked(const std::string &text) {
  auto c = std::make_unique<Compilation>();
  c->setDiagnosticConsumer(std::make_unique<Silent>());
  EXPECT_TRUE(c->loadString("t.plan", text) && c->check());
  return c;
}

int64_t tokenRows(const ir::Module &m) {
  for (const ir::Value *v : m.inputs)
    if (v->name == "tokens") return v->type.shape.at(0);
  ADD_FAILURE() << "no input %tokens";
  return -1;
}

bool hasGradients(const ir::Module &m) {
  for (const auto &out : m.outputs)
    if (out.role == ir::OutputRole::ParamGradient) return true;
  return false;
}

std::set<int64_t> attributeValues(const ir::Module &m, const char *name) {
  std::set<int64_t> values;
  for (const auto &op : m.ops)
    if (op->has(name)) values.insert(op->getInt(name));
  return values;
}

CompileResult compiled(Compilation &c, CompileStage stop, BatchScope batch = BatchScope::Device) {
  CompileOptions options;
  options.stopAfter = stop;
  options.batch = batch;
  auto result = compile(c, options);
  if (!result) {
    ADD_FAILURE() << spelling(stop) << ": " << llvm::toString(result.takeError());
    return {};
  }
  EXPECT_TRUE(result->module) << spelling(stop);
  return std::move(*result);
}

} // namespace

TEST(CompilePipelineTest, BatchRowsFollowTheScope) {
  auto c = checked(pipelinePlan());
  EXPECT_EQ(batchRows(c->getConfig(), BatchScope::Device), 1);
  EXPECT_EQ(batchRows(c->getConfig(), BatchScope::MicroBatch), 2);
  EXPECT_EQ(batchRows(c->getConfig(), BatchScope::Step), 8);
}

TEST(CompilePipelineTest, OneDeviceStagesHaveTheirScopesRows) {
  auto c = checked(pipelinePlan());
  CompileResult forward = compiled(*c, CompileStage::ForwardIR);
  ASSERT_TRUE(forward.module);
  EXPECT_EQ(tokenRows(*forward.module), 1);
  EXPECT_FALSE(hasGradients(*forward.module));
  EXPECT_FALSE(forward.scheduleOptions.has_value());

  CompileResult step = compiled(*c, CompileStage::TrainingStep, BatchScope::Step);
  ASSERT_TRUE(step.module);
  EXPECT_EQ(tokenRows(*step.module), 8);
  EXPECT_TRUE(hasGradients(*step.module));
  EXPECT_TRUE(attributeValues(*step.module, "pipeline_stage").empty()) << "not partitioned yet";
}

TEST(CompilePipelineTest, PartitionedStagesLowerOneMicroBatchOfEveryDpRank) {
  auto c = checked(pipelinePlan());
  // The scope is for one-device modules only.
  CompileResult placed = compiled(*c, CompileStage::Partitioned, BatchScope::Step);
  ASSERT_TRUE(placed.module);
  EXPECT_EQ(tokenRows(*placed.module), 2);
  EXPECT_EQ(attributeValues(*placed.module, "pipeline_stage"), (std::set<int64_t>{0, 1}));
  EXPECT_TRUE(attributeValues(*placed.module, "micro_batch").empty()) << "rolled: one micro-batch";
  EXPECT_FALSE(placed.schedule.has_value());

  CompileResult scheduled = compiled(*c, CompileStage::Scheduled);
  ASSERT_TRUE(scheduled.scheduleOptions && scheduled.schedule && scheduled.simulation);
  EXPECT_EQ(scheduled.scheduleOptions->stages, 2);
  EXPECT_EQ(scheduled.scheduleOptions->microBatches, 4);
  EXPECT_GT(scheduled.simulation->bubbleFraction(), 0.0);
  EXPECT_FALSE(scheduled.memory.has_value());

  CompileResult planned = compiled(*c, CompileStage::MemoryPlanned);
  ASSERT_TRUE(planned.memory.has_value());
  EXPECT_EQ(planned.memory->stages.size(), 2u);
  EXPECT_TRUE(attributeValues(*planned.module, "micro_batch").empty()) << "the planner reads the rolled step";

  CompileResult executable = compiled(*c, CompileStage::ExecutionPlanned);
  ASSERT_TRUE(executable.plan.has_value());
  // The plan runs the placed step once per micro-batch: each of the 4
  // micro-batches reads its own buffer of the tokens' rows, 2 each.
  ASSERT_EQ(executable.plan->programs.size(), 2u);
  std::set<int> slots;
  for (const exec::Buffer &b : executable.plan->programs[0].buffers)
    if (b.role == exec::BufferRole::Input && b.path == "tokens") {
      slots.insert(b.slot);
      EXPECT_EQ(b.type().shape[0], 2);
    }
  EXPECT_EQ(slots, (std::set<int>{0, 1, 2, 3}));
  // The memory plan keeps the totals only; the placements are the plan's.
  ASSERT_TRUE(executable.memory.has_value());
  EXPECT_EQ(executable.plan->programs[0].arenaSize, executable.memory->stages[0].arena);
}

TEST(CompilePipelineTest, APipelineWithoutLayersToCutIsTheAuthorsError) {
  std::string text = pipelinePlan();
  size_t from = text.find("  repeat layers {"), to = text.find("  loss =");
  text.replace(from, to - from, "");
  auto c = checked(text);
  // One device needs no cut.
  compiled(*c, CompileStage::TrainingStep);
  CompileOptions options;
  options.stopAfter = CompileStage::Partitioned;
  auto result = compile(*c, options);
  ASSERT_FALSE(bool(result));
  EXPECT_NE(llvm::toString(result.takeError()).find("no repeated layers to cut into pipeline stages"),
            std::string::npos);
}
