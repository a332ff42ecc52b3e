//===- tests/unit/compiler/TargetTest.cpp - the Target seam and compile-once ---===//
//
// The registry of backend/Target.h says, per step of an execution plan,
// what a target cannot run and why; compile()'s CodeGenerated stage makes a
// target's program in one call, with the whole step's batch shape and FLOPs
// equal to what a separate compilation of the step's own rows gives.
//
//===----------------------------------------------------------------------===//

#include "compiler/GptPlanText.h"
#include "compiler/Pipeline.h"
#include "backend/Target.h"
#include "exec/Groups.h"
#include "ir/OpDef.h"
#include "support/Diagnostics.h"

#include <gtest/gtest.h>

using namespace planc;
using backend::TargetKind;

namespace {

class Silent : public DiagnosticConsumer {
  void handle(const Diagnostic &) override {}
};

std::unique_ptr<Compilation> checked(const planc::testing::GptPlan &p) {
  auto c = std::make_unique<Compilation>();
  c->setDiagnosticConsumer(std::make_unique<Silent>());
  EXPECT_TRUE(c->loadString("t.plan", planc::testing::gptPlanText(p)) && c->check());
  return c;
}

planc::testing::GptPlan small() {
  planc::testing::GptPlan p;
  p.vocab = 64, p.seq = 8, p.hidden = 16, p.heads = 2, p.layers = 1;
  p.precision = "f32";
  return p;
}

// dp = 2, pp = 2, global batch 8 of micro-batches of 1: 4 micro-batches.
planc::testing::GptPlan pipelined() {
  planc::testing::GptPlan p = small();
  p.layers = 2, p.dp = 2, p.pp = 2, p.globalBatch = 8;
  return p;
}

CompileResult compiledFor(Compilation &c, CompileStage stop, TargetKind target = TargetKind::Interp) {
  CompileOptions o;
  o.stopAfter = stop;
  o.target = target;
  auto r = compile(c, o);
  if (!r) {
    ADD_FAILURE() << llvm::toString(r.takeError());
    return {};
  }
  return std::move(*r);
}

/// The FLOPs as `planc build` counted them before compile() made them: the
/// one-device training step of the whole global batch, compiled alone.
double flopsOfWholeStep(Compilation &c) {
  CompileOptions o;
  o.stopAfter = CompileStage::TrainingStep;
  o.batch = BatchScope::Step;
  auto r = compile(c, o);
  if (!r) {
    ADD_FAILURE() << llvm::toString(r.takeError());
    return -1;
  }
  double flops = 0;
  for (const auto &op : r->module->ops)
    if (auto f = ir::opDef(op->kind).flops) flops += f(*op);
  return flops;
}

} // namespace

TEST(TargetRegistryTest, EveryKindHasItsTargetAndSpelling) {
  for (TargetKind k : backend::allTargetKinds()) {
    EXPECT_EQ(backend::targetOf(k).kind(), k);
    EXPECT_EQ(backend::parseTargetKind(backend::spelling(k)), k);
  }
  EXPECT_FALSE(backend::parseTargetKind("gpu"));
  EXPECT_EQ(backend::targetOf(TargetKind::Interp).unavailable(), "");
  EXPECT_EQ(backend::targetOf(TargetKind::Cpu).unavailable(), "");
  EXPECT_NE(backend::targetOf(TargetKind::Cuda).unavailable().find("not built yet"), std::string::npos);
  EXPECT_FALSE(backend::targetOf(TargetKind::Interp).emitsCode());
  EXPECT_TRUE(backend::targetOf(TargetKind::Cpu).emitsCode());
}

TEST(TargetRegistryTest, TheCpuSaysWhichStepItCannotRunAndWhy) {
  auto c = checked(small());
  CompileResult r = compiledFor(*c, CompileStage::ExecutionPlanned);
  ASSERT_TRUE(r.plan);
  exec::ExecutionPlan plan = *r.plan;
  const backend::Target &cpu = backend::targetOf(TargetKind::Cpu);
  EXPECT_TRUE(cpu.refusedSteps(plan, /*foldProducers=*/false).empty());
  EXPECT_TRUE(backend::targetOf(TargetKind::Interp).refusedSteps(plan, false).empty());

  // A gelu whose result is fp8: the C-family renderer stores no fp8 yet.
  exec::RankProgram &program = plan.programs.front();
  size_t gelu = program.steps.size();
  for (size_t i = 0; i < program.steps.size() && gelu == program.steps.size(); ++i)
    if (program.steps[i].kind == ir::OpKind::Gelu) gelu = i;
  ASSERT_LT(gelu, program.steps.size());
  program.buffers[size_t(program.steps[gelu].outputs.front())].editValue().type.dtype = ir::DType::F8E4M3;
  std::vector<backend::RefusedStep> refused = cpu.refusedSteps(plan, false);
  ASSERT_FALSE(refused.empty());
  bool named = false;
  for (const backend::RefusedStep &s : refused)
    if (s.program == 0 && s.step == gelu) {
      named = true;
      EXPECT_EQ(s.what.rfind("step " + std::to_string(gelu) + " (gelu", 0), 0u) << s.what;
      EXPECT_NE(s.reason.find("has no generated"), std::string::npos) << s.reason;
    }
  EXPECT_TRUE(named);
  EXPECT_NE(backend::describeRefusals(refused).find("step " + std::to_string(gelu) + " (gelu"), std::string::npos);
}

TEST(TargetRegistryTest, TheInterpreterRefusesAStepWithoutAReferenceKernel) {
  auto c = checked(small());
  CompileResult r = compiledFor(*c, CompileStage::ExecutionPlanned);
  ASSERT_TRUE(r.plan);
  exec::ExecutionPlan plan = *r.plan;
  // Every op kind the interpreter has no kernel for is refused where a step
  // has it (a kind of the op table without one, if there is any).
  std::optional<ir::OpKind> missing;
  for (unsigned k = 0; k < unsigned(ir::OpKind::NumOps) && !missing; ++k)
    if (!ir::opDef(ir::OpKind(k)).eval && !exec::isCommunicationStep(ir::OpKind(k))) missing = ir::OpKind(k);
  const backend::Target &interp = backend::targetOf(TargetKind::Interp);
  if (!missing) {
    EXPECT_TRUE(interp.refusedSteps(plan, false).empty());
    return;
  }
  size_t i = 0;
  while (i < plan.programs.front().steps.size() && exec::isCommunicationStep(plan.programs.front().steps[i].kind)) ++i;
  ASSERT_LT(i, plan.programs.front().steps.size());
  plan.programs.front().steps[i].kind = *missing;
  std::vector<backend::RefusedStep> refused = interp.refusedSteps(plan, false);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].step, i);
  EXPECT_EQ(refused[0].reason, "the op has no reference kernel");
}

TEST(CompileOnceTest, OneCallMakesTheCpuProgramWithTheStepsBatchAndFlops) {
  auto c = checked(pipelined());
  CompileResult r = compiledFor(*c, CompileStage::CodeGenerated, TargetKind::Cpu);
  ASSERT_TRUE(r.plan);
  EXPECT_EQ(r.settings.batch.batch, 8);
  EXPECT_EQ(r.settings.batch.seq, 8);
  EXPECT_EQ(r.settings.batch.vocab, 64);
  EXPECT_EQ(r.settings.flopsPerStep, flopsOfWholeStep(*c));
  EXPECT_GT(r.settings.flopsPerStep, 0);
  EXPECT_NE(r.code.find("planc_step_0"), std::string::npos);
  EXPECT_FALSE(r.inference) << "a mesh of several ranks has no --sample step";
}

TEST(CompileOnceTest, OneRankReadsTheFlopsOffItsOwnTrainingStep) {
  auto c = checked(small());
  CompileResult r = compiledFor(*c, CompileStage::CodeGenerated, TargetKind::Cpu);
  ASSERT_TRUE(r.plan);
  EXPECT_EQ(r.settings.batch.batch, 1);
  EXPECT_EQ(r.settings.flopsPerStep, flopsOfWholeStep(*c));
  ASSERT_TRUE(r.inference);
  EXPECT_NE(r.code.find("planc_infer"), std::string::npos);
}

TEST(CompileOnceTest, TheInterpreterGetsTheBatchAndNoCode) {
  auto c = checked(pipelined());
  CompileResult r = compiledFor(*c, CompileStage::CodeGenerated, TargetKind::Interp);
  ASSERT_TRUE(r.plan);
  EXPECT_EQ(r.settings.batch.batch, 8);
  EXPECT_TRUE(r.code.empty());
  EXPECT_EQ(r.settings.flopsPerStep, 0);
}

TEST(CompileOnceTest, CudaIsRefusedWithWhy) {
  auto c = checked(small());
  CompileOptions o;
  o.stopAfter = CompileStage::CodeGenerated;
  o.target = TargetKind::Cuda;
  auto r = compile(*c, o);
  ASSERT_FALSE(r);
  EXPECT_NE(llvm::toString(r.takeError()).find("--target=cuda: the CUDA backend is not built yet"), std::string::npos);
}
