//===- tests/unit/compiler/ModelStatesTest.cpp - ZeRO's model-state accounting -----===//
//
// The memory planner's model states against Rajbhandari et al. (ZeRO, SC20):
// bf16 compute with f32 master weights and Adam holds 2 (bf16 parameters) +
// 2 (bf16 gradients) + 12 (f32 master, m, v) = 16 bytes per parameter; over
// N_d data-parallel ranks stage 1 holds 4 + 12/N_d, stage 2 2 + 14/N_d,
// stage 3 16/N_d. 8-bit Adam holds 2 + 2 + 4 + 1 + 1 = 10 plus one f32 scale
// per block of each moment. LoRA's frozen base holds its bf16 copy only. Every
// tensor of the small models below divides by 8, so the division is exact and
// the figures must be too, to the byte. A 7.5B GPT over N_d = 3, 6, 48 and
// 1000, which divide none of its power-of-two dims, holds the formula's bytes
// plus the documented padding (docs/memory.md): each split tensor pads its
// dim to a multiple of N_d, less than numel / (its largest dim) elements per
// rank.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "compiler/Ledger.h"
#include "frontend/Verify.h"

#include "ir/IR.h"

#include "GptPlanText.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

using namespace planc;
using namespace planc::memory;

namespace {

/// tiny-gpt's shape (every dim a multiple of 8) in bf16 with an f32 master.
std::string planText(int dp, int zero, const std::string &optimizer, const std::string &precision) {
  planc::testing::GptPlan p;
  p.dp = dp, p.zero = zero, p.globalBatch = dp, p.optimizer = optimizer, p.precision = precision;
  return planc::testing::gptPlanText(p);
}

struct Planned {
  uint64_t psi = 0;          // trainable parameters
  uint64_t paddingBound = 0; // elements of ZeRO padding a rank may hold, at most: sum of numel / largest dim
  CategoryBytes states{};
};

/// A 7.5B GPT (Rajbhandari et al. train one: h = 4096, 36 layers) over
/// `dp` ranks under ZeRO `zero`, bf16 with an f32 master and Adam (K = 12).
std::string gpt7p5bText(int dp, int zero) {
  planc::testing::GptPlan p;
  p.vocab = 51200, p.seq = 1024, p.hidden = 4096, p.heads = 32, p.layers = 36;
  p.dp = dp, p.zero = zero, p.globalBatch = dp, p.nodePerRank = true;
  return planc::testing::gptPlanText(p);
}

struct Planned;
Planned planOf(const std::string &text, bool verifyEach = true);

Planned plan(int dp, int zero, const std::string &optimizer = "adamw(lr = 1e-3)",
             const std::string &precision = "bf16(master = f32)") {
  return planOf(planText(dp, zero, optimizer, precision));
}

Planned planOf(const std::string &text, bool verifyEach) {
  Compilation c;
  auto consumer = std::make_unique<CollectingConsumer>();
  CollectingConsumer *diags = consumer.get();
  c.setDiagnosticConsumer(std::move(consumer));
  Planned out;
  if (!c.loadString("t.plan", text) || !c.check()) {
    std::string text;
    for (const Diagnostic &d : diags->diagnostics) text += d.message + "\n";
    ADD_FAILURE() << "the frontend rejected the plan:\n" << text;
    return out;
  }
  std::unique_ptr<ir::Module> m = lowerToIR(c);
  for (const ir::Value *p : m->params) {
    if (p->frozen) continue;
    out.psi += uint64_t(p->type.numel());
    int64_t largest = 1;
    for (int64_t d : p->type.shape) largest = std::max(largest, d);
    out.paddingBound += uint64_t(p->type.numel() / largest);
  }
  auto memory = planMemoryOf(c, verifyEach);
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

TEST(ModelStatesTest, ZeroSplitsA7p5BGptOverAnyDpWithinThePadding) {
  // N_d = 3, 6, 48, 1000 divide none of 4096, 16384, 51200, 1024: every
  // tensor is split all the same, its dim padded to a multiple of N_d. Per
  // rank each category holds its share of the formula (x / N_d of its bytes
  // per parameter), and at most the padding bound more; never less.
  for (int dp : {3, 6, 48, 1000})
    for (int zero = 1; zero <= 3; ++zero) {
      SCOPED_TRACE("dp = " + std::to_string(dp) + ", zero = " + std::to_string(zero));
      // The bytes are the subject: the IR is verified once after the passes
      // (not after each, which the other tests here do), twelve compiles of
      // a 7.5B model being most of this file's time under the sanitizers.
      Planned p = planOf(gpt7p5bText(dp, zero), /*verifyEach=*/false);
      ASSERT_GT(p.psi, 7'400'000'000u);
      ASSERT_LT(p.psi, 7'600'000'000u);
      const double psi = double(p.psi), n = double(dp), pad = double(p.paddingBound);
      auto expectShare = [&](Category c, double bytesPerParam, bool split) {
        double got = double(at(p.states, c));
        if (!split) {
          EXPECT_EQ(got, bytesPerParam * psi);
          return;
        }
        EXPECT_GE(got, bytesPerParam * psi / n);
        EXPECT_LE(got, bytesPerParam * (psi / n + pad));
      };
      expectShare(Category::Parameters, 2, zero == 3);
      expectShare(Category::Gradients, 2, zero >= 2);
      expectShare(Category::OptimizerState, 12, true);
      const double total = double(at(p.states, Category::Parameters) + at(p.states, Category::Gradients) +
                                  at(p.states, Category::OptimizerState));
      const double paper = zero == 1 ? 4 * psi + 12 * psi / n : zero == 2 ? 2 * psi + 14 * psi / n : 16 * psi / n;
      const double padded = zero == 1 ? 12 * pad : zero == 2 ? 14 * pad : 16 * pad;
      EXPECT_GE(total, paper);
      EXPECT_LE(total, paper + padded);
      // The padding is small beside the shard where the dims are large
      // against N_d: under 1% at N_d <= 48, under 10% at 1000.
      EXPECT_LE(total, paper * (dp <= 48 ? 1.01 : 1.10));
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
