//===- tests/unit/passes/MixedPrecisionTest.cpp - bf16/f16 compute, loss scaling -===//
//
// The mixed-precision pass on a small GPT-like plan (one layer under
// @precision(f32)): the types it leaves, and a few training steps on the
// interpreter against the same plan in f32. The loss-scaling pass on the f16
// version: a step whose gradients overflow is skipped (parameters and state
// kept, scale halved, counter reset), a sane step equals the unscaled update,
// and the scale grows after `loss_scale_window` good steps.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "compiler/TrainOptions.h"
#include "frontend/Verify.h"
#include "ir/Interpreter.h"
#include "ir/Printer.h"
#include "passes/PassManager.h"
#include "passes/PassOptionTable.h"
#include "backend/interp/BatchShape.h"
#include "backend/interp/PlanTrainer.h"
#include "analysis/MemoryPlan.h"
#include "exec/BuildPlan.h"
#include "passes/Passes.h"
#include "runtime/Data.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace planc;
using namespace planc::ir;

namespace {

const char *kPlan = R"(import std.gpt

model t {
  let vocab = 32, seq = 8, hidden = 16
  input tokens : i32[batch, seq]
  input targets : i32[batch, seq]
  x = embedding(tokens, vocab, hidden) as wte
  x = x + mlp(layernorm(x) as ln_1, ffn = 2 * hidden, p = 0.0) as mlp_1
  x = x + mlp(layernorm(x) as ln_2, ffn = 2 * hidden, p = 0.0) as mlp_2 @precision(f32)
  loss = lm_loss(layernorm(x) as ln_f, wte.weight, targets)
}

train {
  global_batch = 2, micro_batch = 2, steps = 10, seed = 7
  optimizer adamw(lr = 1e-2)
}
)";

std::unique_ptr<Module> lower(const std::string &source) {
  Compilation c;
  auto consumer = std::make_unique<CollectingConsumer>();
  CollectingConsumer *diags = consumer.get();
  c.setDiagnosticConsumer(std::move(consumer));
  std::unique_ptr<Module> m = c.loadString("t.plan", source) && c.check() ? lowerToIR(c) : nullptr;
  if (!m) {
    std::string text;
    for (const Diagnostic &d : diags->diagnostics) text += d.message + "\n";
    ADD_FAILURE() << "the frontend rejected the plan:\n" << text;
  }
  return m;
}

/// Runs `pipeline` with the verifier after each pass.
bool runPasses(Module &m, const std::string &pipeline, std::map<std::string, std::string> values) {
  PassManagerOptions pm;
  pm.verifyEach = true;
  pm.reproducerDir = "";
  PassPipelineOptions options;
  for (const auto &[key, value] : values)
    if (llvm::Error e = setPassOption(options, key, value)) {
      ADD_FAILURE() << llvm::toString(std::move(e));
      return false;
    }
  PassManager manager(pm, options);
  if (llvm::Error e = manager.addPipeline(pipeline)) {
    ADD_FAILURE() << llvm::toString(std::move(e));
    return false;
  }
  if (llvm::Error e = manager.run(m)) {
    ADD_FAILURE() << llvm::toString(std::move(e));
    return false;
  }
  return true;
}

/// The plan as one training step: forward in `compute`, autodiff, `optimizer`.
std::unique_ptr<Module> trainingStep(const std::string &compute, std::map<std::string, std::string> extra = {},
                                     const std::string &tail = "") {
  auto m = lower(kPlan);
  if (!m) return nullptr;
  extra["compute_dtype"] = compute;
  if (!extra.count("optimizer")) extra["optimizer"] = "adamw";
  if (!extra.count("lr")) extra["lr"] = "0.01";
  if (!runPasses(*m, "mixed-precision,autodiff,optimizer" + tail + ",canonicalize", extra)) return nullptr;
  return m;
}

/// Trains the one-device step as an executable would: partitioned (on one
/// device: placed and scheduled), planned and run by the interpreter backend.
std::vector<double> trainLosses(const Module &oneDevice, int64_t steps) {
  std::unique_ptr<Module> step = oneDevice.clone();
  PassManagerOptions pmo;
  pmo.verifyEach = true;
  pmo.reproducerDir = "";
  PassManager partition(pmo, PassPipelineOptions{});
  if (llvm::Error e = addPartitionPipeline(partition)) return (ADD_FAILURE() << llvm::toString(std::move(e)), std::vector<double>{});
  if (llvm::Error e = partition.run(*step)) return (ADD_FAILURE() << llvm::toString(std::move(e)), std::vector<double>{});
  memory::PlanOptions keep;
  keep.keepPlacements = true;
  auto placed = memory::planMemory(*step, keep);
  if (!placed) return (ADD_FAILURE() << llvm::toString(placed.takeError()), std::vector<double>{});
  auto plan = exec::buildExecutionPlan(*step, *placed);
  if (!plan) return (ADD_FAILURE() << llvm::toString(plan.takeError()), std::vector<double>{});
  auto forward = lower(kPlan);
  auto shape = interp::batchShapeOf(*forward);
  EXPECT_TRUE(bool(shape));
  if (!shape) return (llvm::consumeError(shape.takeError()), std::vector<double>{});
  auto data = runtime::openDataSource(runtime::DataSpec{}, *shape, 7);
  EXPECT_TRUE(data.ok()) << data.error();
  if (!data.ok()) return {};
  interp::TrainLoopOptions loop;
  loop.steps = steps;
  loop.seed = 7;
  auto result = interp::trainPlan(*step, *plan, **data, loop);
  if (!result) {
    ADD_FAILURE() << llvm::toString(result.takeError());
    return {};
  }
  return result->losses;
}

TEST(MixedPrecisionTest, Bf16TypesFollowTheRules) {
  auto m = trainingStep("bf16");
  ASSERT_TRUE(m);
  int matmuls = 0, f32Matmuls = 0;
  for (const auto &op : m->ops) {
    if (op->kind != OpKind::MatMul) continue;
    ++matmuls;
    // The @precision(f32) layer (forward and backward, which inherits the attribute) stays f32.
    bool exact = op->getString("precision") == "f32";
    f32Matmuls += exact;
    EXPECT_EQ(op->result()->type.dtype, exact ? DType::F32 : DType::BF16) << toText(*op);
  }
  EXPECT_GT(matmuls, 6);
  EXPECT_GT(f32Matmuls, 0);
  EXPECT_LT(f32Matmuls, matmuls);
  for (const Value *p : m->params) EXPECT_EQ(p->type.dtype, DType::F32) << p->name;
  int grads = 0;
  for (const Output &out : m->outputs)
    if (llvm::StringRef(out.name).startswith("grad.")) {
      ++grads;
      EXPECT_EQ(out.value->type.dtype, DType::F32) << out.name;
    }
  EXPECT_GT(grads, 10);
  EXPECT_EQ(m->output("loss")->type.dtype, DType::F32);
  // One cast per parameter: the tied embedding is read twice, cast once.
  int wteCasts = 0;
  for (const auto &op : m->ops)
    if (op->kind == OpKind::Cast && op->operands[0]->name == "wte.weight") ++wteCasts;
  EXPECT_EQ(wteCasts, 1);
}

TEST(MixedPrecisionTest, Bf16LossStaysCloseToF32) {
  auto f32 = trainingStep("f32"), bf16 = trainingStep("bf16");
  ASSERT_TRUE(f32 && bf16);
  std::vector<double> a = trainLosses(*f32, 4), b = trainLosses(*bf16, 4);
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  bool anyDifferent = false;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(b[i], a[i], 0.02 * std::abs(a[i])) << "step " << i;
    anyDifferent |= a[i] != b[i];
  }
  EXPECT_TRUE(anyDifferent) << "bf16 rounding should show in the loss";
  EXPECT_LT(b.back(), b.front()) << "bf16 training should still learn";
}

TEST(MixedPrecisionTest, RejectsAModuleWithABackwardGraph) {
  auto m = lower(kPlan);
  ASSERT_TRUE(m);
  ASSERT_TRUE(runPasses(*m, "autodiff", {}));
  PassManagerOptions pm;
  pm.reproducerDir = "";
  PassPipelineOptions o;
  o.training.precision.compute = DType::BF16;
  PassManager manager(pm, o);
  ASSERT_FALSE(bool(manager.addPipeline("mixed-precision")));
  llvm::Error e = manager.run(*m);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("before autodiff"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// Loss scaling
//===----------------------------------------------------------------------===//

/// Parameters from the trainer's initialisation, a fixed batch, step 1.
TensorMap feedsFor(const Module &m) {
  TensorMap feeds = initialParams(m, 11);
  for (const char *name : {"tokens", "targets"}) {
    Tensor t({2, 8}, DType::I32);
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = double((i * 7 + (name[1] == 'a' ? 3 : 0)) % 32);
    feeds[name] = t;
  }
  Tensor step({}, DType::I64);
  step.data[0] = 1;
  feeds["step"] = step;
  return feeds;
}

TensorMap run(const Module &m, const TensorMap &feeds) {
  auto out = interpret(m, feeds);
  if (!out) {
    ADD_FAILURE() << llvm::toString(out.takeError());
    return {};
  }
  return *out;
}

std::map<std::string, std::string> dynamic(std::string window = "2000") {
  return {{"loss_scaling", "dynamic"}, {"loss_scale_window", window}};
}

TEST(LossScalingTest, OverflowSkipsTheStep) {
  auto m = trainingStep("f16", dynamic(), ",loss-scaling");
  ASSERT_TRUE(m);
  TensorMap feeds = feedsFor(*m);
  feeds["loss_scale_ratio"].data[0] = std::ldexp(1.0, 110); // S = 2^126: f16 gradients overflow
  feeds["loss_scale_good_steps"].data[0] = 5;
  TensorMap out = run(*m, feeds);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.at("found_inf").data[0], 1.0);
  int kept = 0;
  for (const Value *p : m->params) {
    if (p->path.rfind("loss_scale", 0) == 0) continue;
    ASSERT_TRUE(out.count("new." + p->path)) << p->path;
    EXPECT_EQ(out.at("new." + p->path).data, feeds.at(p->name).data) << p->path << " changed in a skipped step";
    ++kept;
  }
  EXPECT_GT(kept, 30); // parameters and Adam's moments
  EXPECT_EQ(out.at("new.loss_scale_ratio").data[0], std::ldexp(1.0, 109));
  EXPECT_EQ(out.at("new.loss_scale_good_steps").data[0], 0.0);
}

TEST(LossScalingTest, SaneStepEqualsTheUnscaledUpdate) {
  // In f32 a power-of-two scale is exact: scaled and unscaled steps agree to
  // the last bit but for rounding inside ops.
  std::map<std::string, std::string> sgd = {{"optimizer", "sgd"}, {"lr", "0.1"}};
  auto plain = trainingStep("f32", sgd);
  auto extra = dynamic();
  extra.insert(sgd.begin(), sgd.end());
  auto scaled = trainingStep("f32", extra, ",loss-scaling");
  auto half = trainingStep("f16", extra, ",loss-scaling");
  ASSERT_TRUE(plain && scaled && half);
  TensorMap reference = run(*plain, feedsFor(*plain));
  TensorMap a = run(*scaled, feedsFor(*scaled)), h = run(*half, feedsFor(*half));
  ASSERT_FALSE(reference.empty() || a.empty() || h.empty());
  EXPECT_EQ(a.at("found_inf").data[0], 0.0);
  EXPECT_EQ(h.at("found_inf").data[0], 0.0);
  EXPECT_EQ(a.at("loss_scale").data[0], 65536.0);
  for (const Value *p : plain->params) {
    const std::string grad = "grad." + p->path, update = "new." + p->path;
    const std::vector<double> &r = reference.at(grad).data, &g = a.at(grad).data, &g16 = h.at(grad).data;
    double norm = 0, err16 = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      EXPECT_NEAR(g[i], r[i], 1e-6 * std::abs(r[i]) + 1e-12) << grad << "[" << i << "]";
      norm += r[i] * r[i];
      err16 += (g16[i] - r[i]) * (g16[i] - r[i]);
    }
    // f16 compute: the unscaled gradients are f16-rounded versions of f32's.
    EXPECT_LE(std::sqrt(err16), 0.03 * std::sqrt(norm) + 1e-7) << grad;
    const std::vector<double> &pr = reference.at(update).data, &pa = a.at(update).data, &ph = h.at(update).data;
    for (size_t i = 0; i < pr.size(); ++i) {
      EXPECT_NEAR(pa[i], pr[i], 1e-6) << update;
      EXPECT_NEAR(ph[i], pr[i], 1e-3) << update;
    }
  }
  EXPECT_EQ(a.at("new.loss_scale_good_steps").data[0], 1.0);
  EXPECT_EQ(a.at("new.loss_scale_ratio").data[0], 1.0);
}

TEST(LossScalingTest, ScaleGrowsAfterTheWindow) {
  auto m = trainingStep("f16", dynamic("3"), ",loss-scaling");
  ASSERT_TRUE(m);
  TensorMap feeds = feedsFor(*m);
  std::vector<double> ratios, counts;
  for (int step = 1; step <= 4; ++step) {
    feeds["step"].data[0] = step;
    TensorMap out = run(*m, feeds);
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(out.at("found_inf").data[0], 0.0) << "step " << step;
    // Carry every update back, as the trainer does.
    for (const Value *p : m->params)
      if (out.count("new." + p->path)) feeds[p->name] = out.at("new." + p->path);
    ratios.push_back(feeds.at("loss_scale_ratio").data[0]);
    counts.push_back(feeds.at("loss_scale_good_steps").data[0]);
  }
  EXPECT_EQ(ratios, (std::vector<double>{1, 1, 2, 2}));
  EXPECT_EQ(counts, (std::vector<double>{1, 2, 0, 1}));
}

TEST(LossScalingTest, TrainsOnTheInterpreterLoop) {
  // The state is carried by the trainer like the optimizer's (frozen params
  // with "new.<path>" outputs), and f16 training still learns.
  auto m = trainingStep("f16", dynamic(), ",loss-scaling");
  ASSERT_TRUE(m);
  std::vector<double> losses = trainLosses(*m, 4);
  ASSERT_EQ(losses.size(), 4u);
  EXPECT_LT(losses.back(), losses.front());
}

TEST(LossScalingTest, BadSettingsAreErrors) {
  auto m = lower(kPlan);
  ASSERT_TRUE(m);
  ASSERT_TRUE(runPasses(*m, "autodiff", {}));
  for (const auto &setting : std::vector<std::pair<std::string, std::string>>{
           {"loss_scaling", "sometimes"}, {"loss_scale_init", "-1"}, {"loss_scale_window", "0"}}) {
    // (Not a structured binding: a lambda may not capture one before C++20.)
    const std::string &key = setting.first, &value = setting.second;
    PassManagerOptions pm;
    pm.reproducerDir = "";
    // Read as plan-opt reads --pass-option, then run.
    auto run = [&]() -> llvm::Error {
      PassPipelineOptions o;
      if (llvm::Error e = setPassOption(o, "loss_scaling", "dynamic")) return e;
      if (llvm::Error e = setPassOption(o, key, value)) return e;
      PassManager manager(pm, o);
      if (llvm::Error e = manager.addPipeline("loss-scaling")) return e;
      return manager.run(*m);
    };
    llvm::Error e = run();
    ASSERT_TRUE(bool(e)) << key;
    EXPECT_NE(llvm::toString(std::move(e)).find(key), std::string::npos);
  }
}

TEST(LossScalingTest, PlanPrecisionBecomesPassOptions) {
  std::string source = kPlan;
  source.replace(source.find("  optimizer adamw"), 0, "  precision f16(loss_scale = dynamic(scale = 1024, growth_interval = 50))\n");
  Compilation c;
  c.setDiagnosticConsumer(std::make_unique<CollectingConsumer>());
  ASSERT_TRUE(c.loadString("t.plan", source) && c.check());
  PassPipelineOptions o = passOptionsFromConfig(c.getConfig());
  EXPECT_EQ(passOptionValue(o, "compute_dtype"), "f16");
  EXPECT_EQ(passOptionValue(o, "loss_scaling"), "dynamic");
  EXPECT_EQ(passOptionValue(o, "loss_scale_init"), "1024.0");
  EXPECT_EQ(passOptionValue(o, "loss_scale_window"), "50");
}

} // namespace
