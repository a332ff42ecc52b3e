//===- tests/unit/passes/FuseAttentionTest.cpp - the fuse-attention pass -===//
//
// The training steps of tiny-gpt, tiny-llama (grouped-query attention, rope)
// and a GPT with dropout on the attention probabilities, in f64, made with
// and without fusion: the fused step has one flash_attention per layer and
// no s x t value anywhere (forward or backward), and the interpreter gives
// the same loss, gradients and updated parameters. Attentions that must not
// fuse are refused with their reason; `elementwise` leaves attention alone.
//
//===----------------------------------------------------------------------===//

#include "StepTestHelpers.h"

#include "ir/Printer.h"
#include "passes/FuseAttention.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace planc;
using namespace planc::ir;
using namespace planc::testing;

namespace {

std::string example(const char *name) { return sourceDir() + "/examples/" + name; }

const char *kDropoutGpt = R"(import std.gpt

model drop_gpt {
  let vocab = 32, seq = 8, hidden = 24, heads = 2, layers = 2
  let p = 0.25

  input tokens : i32[batch, seq]
  input targets : i32[batch, seq]

  x = embedding(tokens, vocab, hidden) as wte + positional(seq, hidden) as wpe
  repeat layers {
    x = x + attention(layernorm(x) as ln_1, heads, causal = true, p = p)
    x = x + mlp(layernorm(x) as ln_2, ffn = 4 * hidden, p = p)
  }
  loss = lm_loss(layernorm(x) as ln_f, wte.weight, targets)
}

train {
  global_batch = 2, micro_batch = 2
  optimizer adamw(lr = 1e-3, weight_decay = 0.1)
}
)";

/// An attention written out by hand whose probabilities are also summed
/// into the loss: fusing it would drop a value the step reads.
const char *kReadProbabilities = R"(model peek {
  input x : f32[2, 3, 4]
  param wq : [4, 4] = normal(0.02)
  q = x @ wq
  probs = softmax(q @ transpose(x, 1, 2), -1)
  both = sum(sum(probs @ x, 2), 1) + sum(sum(probs, 2), 1)
  loss = sum(both, 0)
}
)";

bool succeeded(llvm::Error e) {
  if (!e) return true;
  ADD_FAILURE() << llvm::toString(std::move(e));
  return false;
}

std::unique_ptr<Module> step(const std::string &source, bool isFile, const std::string &fusion) {
  std::unique_ptr<Module> m = lower(source, isFile);
  if (!m) return nullptr;
  Settings s{{"optimizer", "adamw"}, {"fusion", fusion}};
  if (llvm::Error e = runPasses(*m, "canonicalize,fuse-attention,autodiff,optimizer,canonicalize", s)) {
    ADD_FAILURE() << llvm::toString(std::move(e));
    return nullptr;
  }
  return m;
}

size_t count(const Module &m, OpKind kind) {
  size_t n = 0;
  for (const auto &op : m.ops) n += op->kind == kind;
  return n;
}

/// Values [b, heads, s, s]: the scores and everything of their shape.
size_t scoreValues(const Module &m, int64_t seq) {
  size_t n = 0;
  for (const auto &op : m.ops)
    for (const Value *r : op->results) {
      const Shape &s = r->type.shape;
      n += s.size() == 4 && s[3] == seq && s[2] == seq;
    }
  return n;
}

struct Case {
  const char *label;
  std::string source;
  bool isFile;
  int64_t seq, layers, indexLimit;
};

class FuseAttentionEquivalence : public ::testing::TestWithParam<int> {};

Case caseOf(int i) {
  switch (i) {
  case 0: return {"tiny-gpt", example("tiny-gpt.plan"), true, 64, 2, 256};
  case 1: return {"tiny-llama", example("tiny-llama.plan"), true, 32, 2, 256};
  default: return {"dropout gpt", kDropoutGpt, false, 8, 2, 32};
  }
}

TEST_P(FuseAttentionEquivalence, FusedStepEqualsTheUnfusedOne) {
  Case c = caseOf(GetParam());
  SCOPED_TRACE(c.label);
  auto unfused = step(c.source, c.isFile, "none");
  auto fused = step(c.source, c.isFile, "aggressive");
  ASSERT_TRUE(unfused && fused);
  // Structure: one fused op and one gradient per layer, nothing left of the
  // unfused chain, no s x s value in the whole step.
  EXPECT_EQ(count(*unfused, OpKind::FlashAttention), 0u);
  EXPECT_EQ(count(*fused, OpKind::FlashAttention), size_t(c.layers));
  EXPECT_EQ(count(*fused, OpKind::FlashAttentionGrad), size_t(c.layers));
  EXPECT_EQ(count(*fused, OpKind::Softmax), 0u);
  EXPECT_EQ(count(*fused, OpKind::SoftmaxGrad), 0u);
  EXPECT_EQ(count(*fused, OpKind::CausalMask), 0u);
  EXPECT_GT(scoreValues(*unfused, c.seq), 0u);
  EXPECT_EQ(scoreValues(*fused, c.seq), 0u);
  // Semantics: the same step.
  expectSameStep(*unfused, *fused, c.indexLimit, 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Models, FuseAttentionEquivalence, ::testing::Values(0, 1, 2));

TEST(FuseAttention, DropoutIsTheUnfusedMask) {
  auto fused = step(kDropoutGpt, false, "aggressive");
  ASSERT_TRUE(fused);
  size_t withDropout = 0;
  for (const auto &op : fused->ops)
    if (op->kind == OpKind::FlashAttention) {
      EXPECT_EQ(op->getFloat("p"), 0.25);
      EXPECT_TRUE(op->getBool("causal"));
      EXPECT_DOUBLE_EQ(op->getFloat("scale"), 1.0 / std::sqrt(12.0));
      withDropout += op->has("seed") && op->has("stream");
    }
  EXPECT_EQ(withDropout, 2u);
}

TEST(FuseAttention, RefusesAChainWhoseProbabilitiesAreReadElsewhere) {
  auto m = lower(kReadProbabilities, false);
  ASSERT_TRUE(m);
  std::vector<AttentionFusion> found = findAttentionFusions(*m);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].refused, "the probabilities are read by 2 ops");
  ASSERT_TRUE(succeeded(runPasses(*m, "fuse-attention", {{"fusion", "aggressive"}})));
  EXPECT_EQ(count(*m, OpKind::FlashAttention), 0u);
  EXPECT_EQ(count(*m, OpKind::Softmax), 1u);
}

TEST(FuseAttention, NoneLeavesTheStepAlone) {
  auto m = lower(example("tiny-gpt.plan"), true);
  ASSERT_TRUE(m);
  std::string before = toText(*m);
  ASSERT_TRUE(succeeded(runPasses(*m, "fuse-attention", {{"fusion", "none"}})));
  EXPECT_EQ(toText(*m), before);
  // ... though the matcher finds what aggressive would fuse.
  size_t fusable = 0;
  for (const AttentionFusion &f : findAttentionFusions(*m)) fusable += f.refused.empty();
  EXPECT_EQ(fusable, 2u);
}

TEST(FuseAttention, ElementwiseLeavesAttentionAlone) {
  // `elementwise` fuses chains of elementwise ops (fuse-elementwise), not
  // attention: this pass changes nothing under it.
  auto m = lower(example("tiny-gpt.plan"), true);
  ASSERT_TRUE(m);
  std::string before = toText(*m);
  ASSERT_TRUE(succeeded(runPasses(*m, "fuse-attention", {{"fusion", "elementwise"}})));
  EXPECT_EQ(toText(*m), before);
}

} // namespace
