//===- tests/unit/compiler/PartitionedPrecisionTest.cpp - precision on every rank --===//
//
// `planc verify` runs every float in f64 (or f32), so it sees neither the
// casts of mixed precision nor an f16 overflow. These tests run the
// execution plans of partitioned steps in the plan's own precision on every
// rank of the mesh (backend/interp/PlanInterpreter.h):
//
//  - f32 main gradients (bf16 compute, grads = f32) under dp = 2 with two
//    micro-batches, zero 0, 1 and 2: each rank's gradients and updated
//    parameters equal the single-device step on the whole batch, up to bf16
//    rounding (the micro-batches' weight gradients are rounded to bf16 on
//    their own rows before their f32 sum);
//  - fp16 dynamic loss scaling under tp = 2 where only one rank's shard of a
//    gradient overflows: the skip decision is reduced over the ranks, so
//    every rank skips the step and keeps its shards unchanged.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "compiler/Pipeline.h"
#include "frontend/Verify.h"

#include "backend/interp/PlanInterpreter.h"
#include "ir/Interpreter.h"
#include "ir/LocalBlocks.h"
#include "ir/MeshLayout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace planc;
using namespace planc::ir;

namespace {

bool load(Compilation &c, const std::string &text) {
  auto consumer = std::make_unique<CollectingConsumer>();
  CollectingConsumer *diags = consumer.get();
  c.setDiagnosticConsumer(std::move(consumer));
  if (c.loadString("t.plan", text) && c.check()) return true;
  std::string all;
  for (const Diagnostic &d : diags->diagnostics) all += d.message + "\n";
  ADD_FAILURE() << "the frontend rejected the plan:\n" << all;
  return false;
}

/// Seeded parameters, tokens and targets below `vocab`, float inputs from a
/// fixed pattern, step 1.
TensorMap feedsFor(const Module &m, int64_t vocab) {
  TensorMap feeds = initialParams(m, 5);
  for (const Value *in : m.inputs) {
    Tensor t(in->type.shape, in->type.dtype);
    for (size_t i = 0; i < t.data.size(); ++i)
      t.data[i] = in->name == "step"              ? 1.0
                  : isInteger(in->type.dtype) ? double((i * 37 + 11) % uint64_t(vocab))
                                              : std::sin(0.7 * double(i) + 0.3);
    feeds[in->name] = std::move(t);
  }
  return feeds;
}

/// Every rank's block of `global`: parameters as their types say, data
/// inputs as the whole step's rows (every micro-batch of every dp rank).
RankTensorMaps rankFeedsOf(const Module &placed, const exec::ExecutionPlan &plan, const TensorMap &global) {
  MeshLayout mesh(placed.mesh);
  RankTensorMaps out(size_t(mesh.numRanks()));
  auto split = [&](const Value *v, bool batch) {
    TensorType t = v->type;
    if (batch && t.rank() > 0) t.shape[0] *= plan.schedule.microBatches;
    std::vector<Tensor> blocks = splitToRanks(global.at(v->name), t, mesh);
    for (size_t r = 0; r < blocks.size(); ++r) out[r][v->name] = std::move(blocks[r]);
  };
  for (const Value *p : placed.params) split(p, false);
  for (const Value *in : placed.inputs) split(in, true);
  return out;
}

/// One step of `plan` on every rank, from `feeds`; the outputs per rank.
llvm::Expected<RankTensorMaps> runPlan(const exec::ExecutionPlan &plan, const RankTensorMaps &feeds) {
  interp::PlanInterpreter run(plan);
  if (llvm::Error e = run.loadParams(feeds)) return std::move(e);
  if (llvm::Error e = run.loadInputs(feeds)) return std::move(e);
  if (llvm::Error e = run.runStep(1)) return std::move(e);
  return run.outputs();
}

double largest(const Tensor &t) {
  double m = 0;
  for (double x : t.data) m = std::max(m, std::fabs(x));
  return m;
}

const char *kGpt = R"(import std.gpt
model m {
  let vocab = 128, seq = 16, hidden = 32, heads = 2, layers = 2
  input tokens : i32[batch, seq]
  input targets : i32[batch, seq]
  x = embedding(tokens, vocab, hidden) as wte + positional(seq, hidden) as wpe
  repeat layers {
    x = x + attention(layernorm(x) as ln_1, heads, causal = true, p = 0.0)
    x = x + mlp(layernorm(x) as ln_2, ffn = 4 * hidden, p = 0.0)
  }
  loss = lm_loss(layernorm(x) as ln_f, wte.weight, targets)
}
train {
  global_batch = 8, micro_batch = 2, steps = 1
  optimizer sgd(lr = 0.1)
  precision bf16(master = f32, grads = f32)
}
cluster {
  nodes = 1, gpus_per_node = 2
  device a100_80gb
}
parallel {
  mesh(dp = 2)
  zero = )";

TEST(PartitionedPrecisionTest, MainGradientsMatchTheSingleDeviceStep) {
  for (int zero : {0, 1, 2}) {
    SCOPED_TRACE("zero = " + std::to_string(zero));
    Compilation c;
    ASSERT_TRUE(load(c, std::string(kGpt) + std::to_string(zero) + "\n}\n"));
    // The reference: one device, the whole batch of 8 in one pass.
    std::unique_ptr<Module> step = lowerToIR(c, 8);
    ASSERT_TRUE(step);
    ASSERT_FALSE(bool(makeTrainingStep(c, *step, std::nullopt, PassManagerOptions{})));
    auto built = planc::compile(c);
    ASSERT_TRUE(bool(built)) << llvm::toString(built.takeError());
    const Module &part = *built->module;
    const exec::ExecutionPlan &plan = *built->plan;
    int mainGrads = 0;
    for (const exec::Step &s : plan.programs.at(0).steps)
      if (s.kind == OpKind::Cast && s.attrs.count("main_grad")) ++mainGrads;
    EXPECT_GT(mainGrads, 2 * 20) << "a main_grad cast per parameter and micro-batch";

    TensorMap feeds = feedsFor(*step, 128);
    auto reference = interpret(*step, feeds);
    ASSERT_TRUE(bool(reference)) << llvm::toString(reference.takeError());
    MeshLayout mesh(part.mesh);
    auto ranks = runPlan(plan, rankFeedsOf(part, plan, feeds));
    ASSERT_TRUE(bool(ranks)) << llvm::toString(ranks.takeError());
    // The updated parameters: every rank's block of each against the same
    // block of the reference (a wrong or missing reduction is off by the
    // whole gradient, far beyond bf16 rounding). SGD with lr 0.1: the
    // update is 0.1 x the gradient, so compare the change.
    int compared = 0;
    for (const Value *p : step->params) {
      const std::string name = "new." + p->path;
      const Value *out = part.output(name);
      if (!out || !reference->count(name)) continue;
      Tensor change = reference->at(name);
      for (size_t i = 0; i < change.data.size(); ++i) change.data[i] -= feeds.at(p->name).data[i];
      Tensor old = feeds.at(p->name);
      std::vector<Tensor> want = splitToRanks(reference->at(name), out->type, mesh);
      std::vector<Tensor> before = splitToRanks(old, out->type, mesh);
      const double scale = largest(change);
      ASSERT_GT(scale, 0) << name;
      for (size_t r = 0; r < ranks->size(); ++r) {
        const Tensor &have = (*ranks)[r].at(name);
        ASSERT_EQ(have.data.size(), want[r].data.size()) << name;
        double worst = 0;
        for (size_t i = 0; i < have.data.size(); ++i) worst = std::max(worst, std::fabs(have.data[i] - want[r].data[i]));
        EXPECT_LT(worst, 0.05 * scale) << name << " on rank " << r;
      }
      ++compared;
    }
    EXPECT_GE(compared, 20);
  }
}

// Megatron's MLP over tp = 2 on float inputs, in f16 with dynamic loss
// scaling (S = 65536). Rank 1's rows of the row-parallel w_out are set to
// +-6e4 (f16 still holds it): forward stays finite (the loss only sees the
// logits through a softmax), but backward's d(gelu) = dy @ w_out^T on rank
// 1's columns is about 8 x 8192 x 6e4, beyond f16, so rank 1's shards of the
// gradients of w_in and b_in are inf or NaN while every gradient rank 0
// holds is finite (the input's gradient, which a reduction would spread,
// is not computed).
const char *kMlp = R"(import std.gpt
model m {
  let seq = 4, hidden = 8, classes = 8
  input x : f32[batch, seq, hidden]
  input targets : i32[batch, seq]
  y = mlp(x, ffn = 16, p = 0.0) as mlp
  loss = cross_entropy(y, targets)
}
train {
  global_batch = 2, micro_batch = 2, steps = 1
  optimizer adamw(lr = 1e-3)
  precision f16(loss_scale = dynamic)
}
cluster {
  nodes = 1, gpus_per_node = 2
  device a100_80gb
}
parallel {
  mesh(tp = 2)
}
)";

TEST(PartitionedPrecisionTest, AnOverflowOnOneRankSkipsTheStepOnEvery) {
  Compilation c;
  ASSERT_TRUE(load(c, kMlp));
  auto built = planc::compile(c);
  ASSERT_TRUE(bool(built)) << llvm::toString(built.takeError());
  const Module &part = *built->module;
  for (const auto &op : part.ops)
    EXPECT_NE(op->kind, OpKind::AllGather) << "nothing is gathered for the skip decision";
  const exec::ExecutionPlan &plan = *built->plan;
  TensorMap feeds = feedsFor(part, 8);
  const RankTensorMaps rankFeeds = rankFeedsOf(part, plan, feeds);

  // A sane step first: nothing overflows, every rank updates.
  auto sane = runPlan(plan, rankFeeds);
  ASSERT_TRUE(bool(sane)) << llvm::toString(sane.takeError());
  for (const TensorMap &r : *sane) EXPECT_EQ(r.at("found_inf").data[0], 0.0);

  // Rank 1's rows of w_out beyond what its scaled gradients survive: only
  // rank 1 sees the overflow; the reduced flag makes rank 0 skip too.
  RankTensorMaps poisoned = rankFeeds;
  const Value *wOut = nullptr;
  for (const Value *p : part.params)
    if (p->path == "mlp.w_out") wOut = p;
  ASSERT_TRUE(wOut);
  // Alternating signs: d(gelu) sums dy against a row of w_out, and dy's
  // row (softmax minus one-hot) sums to zero.
  std::vector<double> &rows = poisoned[1].at(wOut->name).data;
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = i % 2 ? 6e4 : -6e4;
  auto skipped = runPlan(plan, poisoned);
  ASSERT_TRUE(bool(skipped)) << llvm::toString(skipped.takeError());
  for (size_t r = 0; r < skipped->size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ((*skipped)[r].at("found_inf").data[0], 1.0);
    for (const Value *p : part.params) {
      if (p->path.rfind("loss_scale", 0) == 0 || !(*skipped)[r].count("new." + p->path)) continue;
      EXPECT_EQ((*skipped)[r].at("new." + p->path).data, poisoned[r].at(p->name).data)
          << p->path << " changed in a skipped step";
    }
  }
}

} // namespace
