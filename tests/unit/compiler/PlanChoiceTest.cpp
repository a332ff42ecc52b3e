//===- tests/unit/compiler/PlanChoiceTest.cpp - a searched plan as overrides and text ---===//
//
// What planc auto writes for a plan it chose: the --set overrides (a plan
// without pp loses its written pipeline), the parallel block with the train
// settings it changes named, and the plan's text with the choice applied,
// which must check and say the same plan.
//
//===----------------------------------------------------------------------===//

#include "compiler/PlanChoice.h"

#include <gtest/gtest.h>

using namespace planc;

namespace {

const char *kPlan = R"(import std.gpt
model m {
  let vocab = 64, seq = 8, hidden = 16, heads = 2, layers = 4
  input tokens : i32[batch, seq]
  input targets : i32[batch, seq]
  x = embedding(tokens, vocab, hidden) as wte
  repeat layers {
    x = x + attention(layernorm(x), heads, causal = true)
    x = x + mlp(layernorm(x), ffn = 4 * hidden)
  }
  loss = lm_loss(layernorm(x) as ln_f, wte.weight, targets)
}
train {
  global_batch = 16, micro_batch = 2
  optimizer adamw(lr = 1e-3)
  fusion = none
}
cluster {
  nodes = 1, gpus_per_node = 4
  device cpu
}
parallel {
  mesh(dp = 2, pp = 2)
  pipeline gpipe(micro_batches = 4)
}
)";

class Silent : public DiagnosticConsumer {
  void handle(const Diagnostic &) override {}
};

std::unique_ptr<Compilation> checked(const std::string &text, std::vector<std::string> sets = {}) {
  FrontendOptions o;
  o.setOverrides = std::move(sets);
  auto c = std::make_unique<Compilation>(o);
  c->setDiagnosticConsumer(std::make_unique<Silent>());
  EXPECT_TRUE(c->loadString("t.plan", text) && c->check()) << text;
  return c;
}

PlanChoice flatWithFusion() {
  PlanChoice p;
  p.dp = 4, p.zero = 1, p.microBatch = 1, p.microBatches = 4;
  p.fusion = FusionPolicy::Aggressive;
  return p;
}

TEST(PlanChoice, WithoutPipelineStagesTheWrittenPipelineGoes) {
  auto c = checked(kPlan);
  EXPECT_EQ(currentPlanChoice(*c).describe(),
            "mesh(dp = 2, pp = 2), zero 0, recompute none, micro_batch 2, gpipe(micro_batches = 4), fusion none");
  PlanChoice p = flatWithFusion();
  std::vector<std::string> sets = p.sets();
  EXPECT_NE(std::find(sets.begin(), sets.end(), "parallel.pipeline=none"), sets.end());
  EXPECT_NE(std::find(sets.begin(), sets.end(), "train.fusion=aggressive"), sets.end());
  // The overrides make exactly that plan, with no warning about a pipeline
  // left without stages.
  auto changed = checked(kPlan, sets);
  EXPECT_EQ(currentPlanChoice(*changed).describe(), p.describe());
  EXPECT_FALSE(changed->getConfig().parallel.schedule.has_value());
}

TEST(PlanChoice, TheAppliedTextSaysTheChosenPlan) {
  auto c = checked(kPlan);
  PlanChoice p = flatWithFusion();
  EXPECT_EQ(p.parallelBlock(2, FusionPolicy::None),
            "parallel {\n  mesh(dp = 4)\n  zero = 1\n  recompute none\n"
            "  // with train.micro_batch = 1 (the plan has 2; --apply sets it)\n"
            "  // with train.fusion = aggressive (the plan has none; --apply sets it)\n}\n");
  std::string applied = applyPlanChoice(*c, p);
  EXPECT_NE(applied.find("  fusion = aggressive\n"), std::string::npos) << applied;
  EXPECT_NE(applied.find("micro_batch = 1\n"), std::string::npos) << applied;
  EXPECT_EQ(applied.find("gpipe"), std::string::npos) << applied;
  auto again = checked(applied);
  EXPECT_EQ(currentPlanChoice(*again).describe(), p.describe());
}

} // namespace
