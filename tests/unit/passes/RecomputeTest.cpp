//===- tests/unit/passes/RecomputeTest.cpp - the recompute pass ------------------===//
//
// The training step of tiny-gpt.plan (and of a smaller GPT with dropout), in
// f64, with and without the recompute pass: which activations stay saved
// (savedActivations), where the clones go, that forward is untouched, and
// that every output (loss, gradients, updated parameters) is bit-identical.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "frontend/Verify.h"
#include "ir/ConvertFloats.h"
#include "ir/Interpreter.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"
#include "passes/PassOptionTable.h"
#include "analysis/SavedActivations.h"
#include "StepTestHelpers.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <set>

using namespace planc;
using namespace planc::ir;
using namespace planc::testing;

namespace {

std::string tinyGpt() { return std::string(sourceDir()) + "/examples/tiny-gpt.plan"; }

/// A 2-layer GPT with dropout everywhere (attention probabilities included).
const char *kDropoutGpt = R"(import std.gpt

model drop_gpt {
  let vocab = 32, seq = 8, hidden = 16, heads = 2, layers = 2
  let p = 0.25

  input tokens : i32[batch, seq]
  input targets : i32[batch, seq]

  x = dropout(embedding(tokens, vocab, hidden) as wte + positional(seq, hidden) as wpe, p)
  repeat layers {
    x = x + attention(layernorm(x) as ln_1, heads, causal = true, p = p)
    x = x + mlp(layernorm(x) as ln_2, ffn = 4 * hidden, p = p)
  }
  loss = lm_loss(layernorm(x) as ln_f, wte.weight, targets)
}

train {
  global_batch = 2, micro_batch = 2, steps = 10, seed = 5
  optimizer adamw(lr = 1e-3, weight_decay = 0.1)
  clip_grad_norm = 1.0
  precision f32
  data synthetic
}

cluster {
  nodes = 1, gpus_per_node = 1
  device cpu
}

parallel {
  mesh(dp = 1)
}
)";

Settings withPolicy(const std::string &policy) {
  Settings o;
  o["optimizer"] = "adamw";
  if (!policy.empty()) o["recompute"] = policy;
  return o;
}

/// The training step: autodiff (+ optimizer), then recompute with `policy`
/// unless `policy` is "-" (no recompute pass at all).
std::unique_ptr<Module> trainingStep(const std::string &source, bool isFile, const std::string &policy,
                                     bool optimizer = false) {
  std::unique_ptr<Module> m = lower(source, isFile);
  if (!m) return nullptr;
  std::string pipeline = optimizer ? "autodiff,optimizer" : "autodiff";
  if (policy != "-") pipeline += ",recompute";
  llvm::Error e = runPasses(*m, pipeline, withPolicy(policy == "-" ? "" : policy));
  if (e) {
    ADD_FAILURE() << llvm::toString(std::move(e));
    return nullptr;
  }
  return m;
}

bool isBackward(const Op &op) { return op.getString("phase") == "backward"; }

/// The textual forward section: what the pass must leave alone.
std::string forwardText(const Module &m) {
  std::string s;
  for (const auto &op : m.ops)
    if (isForwardOp(*op)) s += toText(*op) + "\n";
  return s;
}

bool isAttentionScoreShape(const Value *v) {
  const Shape &s = v->type.shape;
  return s.size() == 4 && s[2] == s[3];
}

/// Interprets both modules on the same feeds and draw seed; every output must
/// be bit-identical.
void expectSameOutputs(const Module &reference, const Module &recomputed, int64_t indexLimit) {
  TensorMap feeds = feedsFor(reference, indexLimit);
  auto a = interpret(reference, feeds, /*seed=*/3);
  auto b = interpret(recomputed, feeds, /*seed=*/3);
  ASSERT_TRUE(bool(a)) << llvm::toString(a.takeError());
  ASSERT_TRUE(bool(b)) << llvm::toString(b.takeError());
  ASSERT_EQ(a->size(), b->size());
  ASSERT_TRUE(a->count("loss"));
  for (auto &[name, t] : *a) {
    ASSERT_TRUE(b->count(name)) << name;
    const Tensor &u = b->at(name);
    ASSERT_EQ(t.shape, u.shape) << name;
    ASSERT_EQ(t.data.size(), u.data.size()) << name;
    for (size_t i = 0; i < t.data.size(); ++i)
      ASSERT_EQ(std::memcmp(&t.data[i], &u.data[i], sizeof(double)), 0)
          << name << "[" << i << "]: " << t.data[i] << " vs " << u.data[i];
  }
}

/// The ops the pass added, in order.
std::vector<const Op *> clones(const Module &m) {
  std::vector<const Op *> out;
  for (const auto &op : m.ops)
    if (op->getBool("recomputed")) out.push_back(op.get());
  return out;
}

/// Checks the structural guarantees common to every policy: forward ops and
/// outputs as in `reference`, clones marked and placed in runs right before a
/// backward op of their layer that reads them, nothing backward reads a value
/// in `mustNotBeSaved`.
void expectWellFormed(const Module &reference, const Module &m, const std::set<std::string> &mustNotBeSaved) {
  EXPECT_FALSE(bool(verify(m)));
  EXPECT_EQ(forwardText(reference), forwardText(m));
  ASSERT_EQ(reference.outputs.size(), m.outputs.size());
  for (size_t i = 0; i < m.outputs.size(); ++i) {
    EXPECT_EQ(reference.outputs[i].name, m.outputs[i].name);
    EXPECT_EQ(reference.outputs[i].value->name, m.outputs[i].value->name);
  }
  for (const Value *v : savedActivations(m)) EXPECT_FALSE(mustNotBeSaved.count(v->name)) << "%" << v->name << " saved";

  std::set<std::string> cloneNames;
  for (size_t i = 0; i < m.ops.size(); ++i) {
    const Op &op = *m.ops[i];
    if (!op.getBool("recomputed")) continue;
    EXPECT_TRUE(isBackward(op)) << toText(op);
    EXPECT_FALSE(op.has("recompute")) << toText(op);
    // Inside the backward section...
    ASSERT_GT(i, 0u);
    EXPECT_TRUE(isBackward(*m.ops[i - 1])) << toText(op);
    // ...and the run of clones ends at a backward op of the same layer that
    // reads one of the run's results.
    size_t end = i;
    while (end < m.ops.size() && m.ops[end]->getBool("recomputed")) ++end;
    ASSERT_LT(end, m.ops.size());
    const Op &next = *m.ops[end];
    EXPECT_TRUE(isBackward(next));
    EXPECT_EQ(repeatedLayerOf(next.path), repeatedLayerOf(op.path)) << toText(op) << " then " << toText(next);
    bool readsRun = false;
    for (const Value *o : next.operands)
      readsRun |= o->def && o->def->getBool("recomputed") && repeatedLayerOf(o->def->path) == repeatedLayerOf(op.path);
    EXPECT_TRUE(readsRun) << toText(next);
    // Each clone is the copy of a forward value of the same path.
    llvm::StringRef name = op.results[0]->name;
    ASSERT_TRUE(name.endswith(".recompute")) << name.str();
    const Value *orig = reference.lookup(name.drop_back(strlen(".recompute")).str());
    ASSERT_TRUE(orig && orig->def) << name.str();
    EXPECT_EQ(orig->def->kind, op.kind);
    EXPECT_EQ(orig->def->path, op.path);
    EXPECT_EQ(orig->def->loc, op.loc);
    EXPECT_TRUE(cloneNames.insert(name.str()).second);
  }
}

/// Values whose names `savedActivations` gives.
std::set<std::string> savedNames(const Module &m) {
  std::set<std::string> s;
  for (const Value *v : savedActivations(m)) s.insert(v->name);
  return s;
}

TEST(RecomputeTest, RepeatedLayerOfAPath) {
  EXPECT_EQ(repeatedLayerOf("blocks.3.attention"), "blocks.3");
  EXPECT_EQ(repeatedLayerOf("blocks.3"), "blocks.3");
  EXPECT_EQ(repeatedLayerOf("blocks.12.mlp.fc"), "blocks.12");
  EXPECT_EQ(repeatedLayerOf("encoder.layers.0.ln_1"), "encoder.layers.0");
  EXPECT_EQ(repeatedLayerOf("ln_f"), "");
  EXPECT_EQ(repeatedLayerOf(""), "");
  EXPECT_EQ(repeatedLayerOf("lm_loss.tied_linear"), "");
}

TEST(RecomputeTest, NoneChangesNothing) {
  auto reference = trainingStep(tinyGpt(), true, "-", /*optimizer=*/true);
  ASSERT_TRUE(reference);
  for (std::string policy : {"", "none"}) {
    auto m = trainingStep(tinyGpt(), true, policy, /*optimizer=*/true);
    ASSERT_TRUE(m);
    EXPECT_EQ(toText(*reference), toText(*m)) << "policy '" << policy << "'";
  }
}

TEST(RecomputeTest, SelectiveRecomputesTheAttentionCore) {
  auto reference = trainingStep(tinyGpt(), true, "-");
  auto m = trainingStep(tinyGpt(), true, "selective");
  ASSERT_TRUE(reference && m);

  // Before: backward reads the probabilities [b, heads, s, s] of each layer.
  std::set<std::string> scores;
  for (const Value *v : savedActivations(*reference))
    if (isAttentionScoreShape(v)) scores.insert(v->name);
  EXPECT_EQ(scores.size(), 2u); // softmax of blocks.0 and blocks.1
  std::set<std::string> core;
  for (const auto &op : reference->ops)
    if (isForwardOp(*op) && isAttentionScoreShape(op->results[0])) core.insert(op->results[0]->name);
  EXPECT_EQ(core.size(), 8u); // matmul, scale, causal_mask, softmax per layer

  expectWellFormed(*reference, *m, core);
  // After: none of them; everything else backward read is still saved.
  std::set<std::string> before = savedNames(*reference), after = savedNames(*m);
  for (const std::string &n : after) EXPECT_TRUE(before.count(n)) << n;
  for (const std::string &n : before) EXPECT_EQ(after.count(n), scores.count(n) ? 0u : 1u) << n;

  // The clones: the whole core chain, layer 1 first (backward order).
  std::vector<std::string> kinds;
  for (const Op *op : clones(*m)) kinds.push_back(std::string(spelling(op->kind)) + "@" + op->path);
  std::vector<std::string> expected = {
      "matmul@blocks.1.attention", "scale@blocks.1.attention", "causal_mask@blocks.1.attention",
      "softmax@blocks.1.attention", "matmul@blocks.0.attention", "scale@blocks.0.attention",
      "causal_mask@blocks.0.attention", "softmax@blocks.0.attention"};
  EXPECT_EQ(kinds, expected);
  // Each layer's clones come after every backward op of the layers above it.
  size_t firstClone0 = 0, lastBackward1 = 0;
  for (size_t i = 0; i < m->ops.size(); ++i) {
    const Op &op = *m->ops[i];
    if (!isBackward(op)) continue;
    if (op.getBool("recomputed") && repeatedLayerOf(op.path) == "blocks.0" && !firstClone0) firstClone0 = i;
    if (!op.getBool("recomputed") && repeatedLayerOf(op.path) == "blocks.1") lastBackward1 = i;
  }
  EXPECT_GT(firstClone0, lastBackward1);
}

TEST(RecomputeTest, FullKeepsOnlyLayerInputs) {
  auto reference = trainingStep(tinyGpt(), true, "-");
  auto m = trainingStep(tinyGpt(), true, "full");
  ASSERT_TRUE(reference && m);

  // Values made in a layer and read by nothing outside it.
  std::set<std::string> internal;
  std::map<std::string, std::set<std::string>> readBy; // value -> layers of its forward readers
  for (const auto &op : reference->ops)
    if (isForwardOp(*op))
      for (const Value *o : op->operands) readBy[o->name].insert(repeatedLayerOf(op->path));
  for (const auto &op : reference->ops) {
    if (!isForwardOp(*op)) continue;
    std::string layer = repeatedLayerOf(op->path);
    if (layer.empty()) continue;
    for (const Value *r : op->results) {
      auto readers = readBy[r->name];
      readers.erase(layer);
      if (readers.empty()) internal.insert(r->name);
    }
  }
  expectWellFormed(*reference, *m, internal);

  // Saved now: per layer only its output (the next layer's input), and the
  // values outside layers, as before.
  std::map<std::string, std::vector<std::string>> savedPerLayer;
  for (const Value *v : savedActivations(*m)) savedPerLayer[repeatedLayerOf(v->def->path)].push_back(v->name);
  ASSERT_EQ(savedPerLayer["blocks.0"].size(), 1u);
  ASSERT_EQ(savedPerLayer["blocks.1"].size(), 1u);
  // blocks.0's output is the residual stream blocks.1 reads.
  const Value *out0 = m->lookup(savedPerLayer["blocks.0"][0]);
  EXPECT_EQ(out0->def->kind, OpKind::Add);
  EXPECT_EQ(out0->def->path, "blocks.0");
  EXPECT_TRUE(readBy[out0->name].count("blocks.1"));
  std::vector<std::string> outsideBefore, outsideAfter;
  for (const Value *v : savedActivations(*reference))
    if (repeatedLayerOf(v->def->path).empty()) outsideBefore.push_back(v->name);
  outsideAfter = savedPerLayer[""];
  EXPECT_EQ(outsideBefore, outsideAfter);

  // Every layer-internal value backward read is recomputed, once per layer.
  size_t readInternal = 0;
  for (const Value *v : savedActivations(*reference)) readInternal += internal.count(v->name);
  std::map<std::string, size_t> clonesPerLayer;
  for (const Op *op : clones(*m)) ++clonesPerLayer[repeatedLayerOf(op->path)];
  EXPECT_EQ(clonesPerLayer.size(), 2u);
  EXPECT_GE(clonesPerLayer["blocks.0"] + clonesPerLayer["blocks.1"], readInternal);
  EXPECT_EQ(clonesPerLayer["blocks.0"], clonesPerLayer["blocks.1"]);
  // A layer's recomputation starts from its input: the first clone of
  // blocks.1 is its ln_1, which reads blocks.0's saved output.
  const Op *first1 = clones(*m)[0];
  EXPECT_EQ(first1->kind, OpKind::LayerNorm);
  EXPECT_EQ(first1->path, "blocks.1.ln_1");
  EXPECT_EQ(first1->operands[0], out0);
}

TEST(RecomputeTest, BitIdenticalOutputsOnTinyGpt) {
  auto reference = trainingStep(tinyGpt(), true, "-", /*optimizer=*/true);
  ASSERT_TRUE(reference);
  for (const char *policy : {"none", "selective", "full"}) {
    SCOPED_TRACE(policy);
    auto m = trainingStep(tinyGpt(), true, policy, /*optimizer=*/true);
    ASSERT_TRUE(m);
    expectSameOutputs(*reference, *m, 256);
  }
}

TEST(RecomputeTest, BitIdenticalOutputsWithDropout) {
  auto reference = trainingStep(kDropoutGpt, false, "-", /*optimizer=*/true);
  ASSERT_TRUE(reference);
  size_t dropouts = 0;
  for (const auto &op : reference->ops) dropouts += isForwardOp(*op) && op->kind == OpKind::Dropout;
  ASSERT_EQ(dropouts, 7u); // embedding, and per layer: probabilities, attention out, mlp out

  auto selective = trainingStep(kDropoutGpt, false, "selective", /*optimizer=*/true);
  auto full = trainingStep(kDropoutGpt, false, "full", /*optimizer=*/true);
  ASSERT_TRUE(selective && full);
  // Selective recomputes the dropout of the probabilities, full every dropout
  // in the layers; the clones draw the forward masks.
  size_t selectiveDropouts = 0, fullDropouts = 0;
  for (const Op *op : clones(*selective)) selectiveDropouts += op->kind == OpKind::Dropout;
  for (const Op *op : clones(*full)) fullDropouts += op->kind == OpKind::Dropout;
  EXPECT_EQ(selectiveDropouts, 2u);
  EXPECT_GE(fullDropouts, 2u);
  expectSameOutputs(*reference, *selective, 32);
  expectSameOutputs(*reference, *full, 32);
}

TEST(RecomputeTest, AnnotationOverridesThePlanPolicy) {
  // The plan-wide policy is none; `@recompute` (full) on the repeat covers
  // every op of the layers.
  std::string plan = kDropoutGpt;
  std::string from = "repeat layers {", to = "repeat layers @recompute {";
  plan.replace(plan.find(from), from.size(), to);
  auto reference = trainingStep(kDropoutGpt, false, "-");
  auto annotated = trainingStep(plan, false, "none");
  auto full = trainingStep(kDropoutGpt, false, "full");
  ASSERT_TRUE(reference && annotated && full);
  EXPECT_EQ(savedNames(*annotated), savedNames(*full));
  EXPECT_EQ(clones(*annotated).size(), clones(*full).size());
  expectSameOutputs(*reference, *annotated, 32);

  // And `@recompute(none)` on the attention call keeps its values under a
  // plan-wide selective policy.
  std::string keep = kDropoutGpt;
  from = "heads, causal = true, p = p)";
  keep.replace(keep.find(from), from.size(), from + " @recompute(none)");
  auto kept = trainingStep(keep, false, "selective");
  ASSERT_TRUE(kept);
  EXPECT_TRUE(clones(*kept).empty());
  EXPECT_EQ(savedNames(*kept), savedNames(*reference));
}

TEST(RecomputeTest, RunningTwiceChangesNothingMore) {
  for (const char *policy : {"selective", "full"}) {
    auto once = trainingStep(tinyGpt(), true, policy);
    ASSERT_TRUE(once);
    std::string text = toText(*once);
    llvm::Error e = runPasses(*once, "recompute", withPolicy(policy));
    ASSERT_FALSE(bool(e)) << llvm::toString(std::move(e));
    EXPECT_EQ(text, toText(*once)) << policy;
  }
}

TEST(RecomputeTest, RefusesAnUnknownPolicy) {
  auto m = lower(tinyGpt(), true);
  ASSERT_TRUE(m);
  llvm::Error e = runPasses(*m, "autodiff,recompute", withPolicy("partial"));
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("unknown recompute policy 'partial'"), std::string::npos);
}

} // namespace
