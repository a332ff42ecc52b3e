//===- tests/unit/compiler/GptPlanText.h - a data-parallel GPT plan, as text -*- C++ -*-===//
//
// The plan the model-state tests vary: a GPT of std.gpt (learned positions,
// the head tied to the embedding) of the given dims, trained over `dp` ranks
// (and `pp` pipeline stages) under ZeRO `zero` with the given optimizer and
// precision.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_TESTS_UNIT_GPTPLANTEXT_H
#define PLANC_TESTS_UNIT_GPTPLANTEXT_H

#include <cstdint>
#include <string>

namespace planc::testing {

struct GptPlan {
  int64_t vocab = 256, seq = 64, hidden = 64, heads = 4, layers = 2;
  int64_t dp = 1, pp = 1, zero = 0, globalBatch = 1;
  std::string optimizer = "adamw(lr = 1e-3)";
  std::string precision = "bf16(master = f32)";
  bool nodePerRank = false; // dp nodes of one GPU each; else one node of dp x pp GPUs
};

inline std::string gptPlanText(const GptPlan &p) {
  auto n = [](int64_t v) { return std::to_string(v); };
  return "import std.gpt\n"
         "model m {\n"
         "  let vocab = " + n(p.vocab) + ", seq = " + n(p.seq) + ", hidden = " + n(p.hidden) +
         ", heads = " + n(p.heads) + ", layers = " + n(p.layers) + R"(
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
  global_batch = )" + n(p.globalBatch) + R"(, micro_batch = 1, steps = 10
  optimizer )" + p.optimizer + R"(
  precision )" + p.precision + R"(
}
cluster {
  nodes = )" + (p.nodePerRank ? n(p.dp) + ", gpus_per_node = 1" : "1, gpus_per_node = " + n(p.dp * p.pp)) + R"(
  device a100_80gb
}
parallel {
  mesh(dp = )" + n(p.dp) + (p.pp > 1 ? ", pp = " + n(p.pp) : "") + R"()
  zero = )" + n(p.zero) + R"(
}
)";
}

} // namespace planc::testing

#endif
