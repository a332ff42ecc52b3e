//===- tests/unit/ModelStatesTest.cpp - ZeRO's model-state accounting -----===//
//
// The memory planner's model states against Rajbhandari et al. (ZeRO, SC20):
// bf16 compute with f32 master weights and Adam holds 2 (bf16 parameters) +
// 2 (bf16 gradients) + 12 (f32 master, m, v) = 16 bytes per parameter; over
// N_d data-parallel ranks stage 1 holds 4 + 12/N_d, stage 2 2 + 14/N_d,
// stage 3 16/N_d. 8-bit Adam holds 2 + 2 + 4 + 1 + 1 = 10 plus one f32 scale
// per block of each moment. LoRA's frozen base holds its bf16 copy only. Every
// tensor of the models below divides by 8, so the division is exact and the
// figures must be too, to the byte.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "frontend/Ledger.h"
#include "frontend/Verify.h"

#include "ir/IR.h"

#include <gtest/gtest.h>

#include <string>

using namespace planc;
using namespace planc::memory;

namespace {

/// tiny-gpt's shape (every dim a multiple of 8) in bf16 with an f32 master.
std::string planText(int dp, int zero, const std::string &optimizer, const std::string &precision) {
  return R"(import std.gpt
model m {
  let vocab = 256, seq = 64, hidden = 64, heads = 4, layers = 2
  input tokens : i32[batch, seq]
  input targets : i32[batch, seq]
  x = embedding(tokens, vocab, hidden) as wte + positional(seq, hidden) as wpe
  repeat layers {
    x = x + attention(layernorm(x) as ln_1, heads, causal = true)
    x = x + mlp(layernorm(x) as ln_2, ffn = 4 * hidden)
  }
  loss = lm_loss(layernorm(x) as ln_f, wte.weight, targets)
}
train {
  global_batch = )" +
         std::to_string(dp) + R"(, micro_batch = 1, steps = 10
  optimizer )" + optimizer +
         R"(
  precision )" + precision +
         R"(
}
cluster {
  nodes = 1, gpus_per_node = )" +
         std::to_string(dp) + R"(
  device a100_80gb
}
parallel {
  mesh(dp = )" + std::to_string(dp) +
         R"()
  zero = )" + std::to_string(zero) +
         R"(
}
)";
}

struct Planned {
  uint64_t psi = 0; // trainable parameters
  CategoryBytes states{};
};

Planned plan(int dp, int zero, const std::string &optimizer = "adamw(lr = 1e-3)",
             const std::string &precision = "bf16(master = f32)") {
  Compilation c;
  auto consumer = std::make_unique<CollectingConsumer>();
  CollectingConsumer *diags = consumer.get();
  c.setDiagnosticConsumer(std::move(consumer));
  Planned out;
  if (!c.loadString("t.plan", planText(dp, zero, optimizer, precision)) || !c.check()) {
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

TEST(ModelStatesTest, SixteenBytesPerParameterOnOneRank) {
  Planned p = plan(1, 0);
  ASSERT_EQ(p.psi, 120576u); // the header of examples/tiny-gpt.plan counts the same model
  EXPECT_EQ(at(p.states, Category::Parameters), 2 * p.psi);
  EXPECT_EQ(at(p.states, Category::Gradients), 2 * p.psi);
  EXPECT_EQ(at(p.states, Category::OptimizerState), 12 * p.psi);
}

TEST(ModelStatesTest, ZeroStagesDivideAsThePaperSays) {
  for (int dp : {2, 4, 8})
    for (int zero = 0; zero <= 3; ++zero) {
      SCOPED_TRACE("dp = " + std::to_string(dp) + ", zero = " + std::to_string(zero));
      Planned p = plan(dp, zero);
      const uint64_t psi = p.psi, n = uint64_t(dp);
      uint64_t params = zero == 3 ? 2 * psi / n : 2 * psi;
      uint64_t grads = zero >= 2 ? 2 * psi / n : 2 * psi;
      uint64_t optimizer = zero >= 1 ? 12 * psi / n : 12 * psi;
      EXPECT_EQ(at(p.states, Category::Parameters), params);
      EXPECT_EQ(at(p.states, Category::Gradients), grads);
      EXPECT_EQ(at(p.states, Category::OptimizerState), optimizer);
      const uint64_t total = params + grads + optimizer;
      const uint64_t paper = zero == 0 ? 16 * psi : zero == 1 ? 4 * psi + 12 * psi / n
                             : zero == 2                      ? 2 * psi + 14 * psi / n
                                                              : 16 * psi / n;
      EXPECT_EQ(total, paper);
    }
}

TEST(ModelStatesTest, FullGradientsKeepMegatronsEighteenBytes) {
  // grads = f32: Megatron-LM's fp32 main gradients, 2 + 4 + 12.
  Planned p = plan(1, 0, "adamw(lr = 1e-3)", "bf16(master = f32, grads = f32)");
  EXPECT_EQ(at(p.states, Category::Gradients), 4 * p.psi);
  EXPECT_EQ(at(p.states, Category::Parameters) + at(p.states, Category::Gradients) +
                at(p.states, Category::OptimizerState),
            18 * p.psi);
}

TEST(ModelStatesTest, EightBitAdamHoldsTenBytesAndItsScales) {
  const int64_t block = 2048;
  Planned p = plan(1, 0, "adam8bit(lr = 1e-3, block_size = 2048)"); // bitsandbytes' block
  Compilation c;
  ASSERT_TRUE(c.loadString("t.plan", planText(1, 0, "adam8bit(lr = 1e-3)", "bf16(master = f32)")) && c.check());
  // One f32 scale per block of each of the two moments, per tensor.
  uint64_t scales = 0;
  std::unique_ptr<ir::Module> m = lowerToIR(c);
  ASSERT_TRUE(m);
  for (const ir::Value *v : m->params)
    if (!v->frozen) scales += 2 * 4 * uint64_t((v->type.numel() + block - 1) / block);
  EXPECT_EQ(at(p.states, Category::Parameters), 2 * p.psi);
  EXPECT_EQ(at(p.states, Category::Gradients), 2 * p.psi);
  EXPECT_EQ(at(p.states, Category::OptimizerState), 6 * p.psi + scales); // master 4, m 1, v 1
  EXPECT_EQ(at(p.states, Category::Parameters) + at(p.states, Category::Gradients) +
                at(p.states, Category::OptimizerState) - scales,
            10 * p.psi);
}

TEST(ModelStatesTest, LoraFreezesTheBaseOutOfGradientsAndOptimizerState) {
  // A frozen base (embedding, projections, head) and rank-8 adapters on one
  // projection: only the adapters have gradients and optimizer state.
  const char *text = R"(import std.nn
import std.lora
model m {
  let vocab = 256, seq = 64, hidden = 64
  input tokens : i32[batch, seq]
  input targets : i32[batch, seq]
  x = (embedding(tokens, vocab, hidden) as wte) @frozen
  x = x + lora_linear(x, hidden, rank = 8, alpha = 16.0) as adapted
  logits = (linear(x, vocab, bias = false) as head) @frozen
  loss = cross_entropy(logits, targets)
}
train {
  global_batch = 1, micro_batch = 1, steps = 10
  optimizer adamw(lr = 1e-3)
  precision bf16(master = f32)
}
)";
  Compilation c;
  auto consumer = std::make_unique<CollectingConsumer>();
  CollectingConsumer *diags = consumer.get();
  c.setDiagnosticConsumer(std::move(consumer));
  if (!c.loadString("t.plan", text) || !c.check()) {
    std::string all;
    for (const Diagnostic &d : diags->diagnostics) all += d.message + "\n";
    FAIL() << all;
  }
  const uint64_t frozen = 256 * 64 + 64 * 64 + 64 * 256, adapters = 64 * 8 + 8 * 64;
  auto memory = planMemoryOf(c);
  ASSERT_TRUE(bool(memory)) << llvm::toString(memory.takeError());
  const CategoryBytes &states = memory->stages[0].modelStates;
  EXPECT_EQ(at(states, Category::Parameters), 2 * frozen + 2 * adapters); // all in bf16
  EXPECT_EQ(at(states, Category::Gradients), 2 * adapters);
  EXPECT_EQ(at(states, Category::OptimizerState), 12 * adapters);
}

} // namespace
