//===- tests/unit/passes/OptimizerLoweringTest.cpp - the update as IR, by hand ---===//
//
// The optimizer pass on modules whose gradients are inputs (output as
// "grad.<path>", as autodiff leaves them), so the update is checked alone:
// one or two steps of the lowered IR, run by the interpreter in f64, against
// torch.optim's formulas written out here; clipping; the learning-rate
// schedules at chosen steps; 8-bit Adam's state; which parameters each
// optimizer decays; settings errors; and the options a plan's train block
// gives.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "compiler/TrainOptions.h"
#include "frontend/Verify.h"
#include "ir/Interpreter.h"
#include "ir/StepOutputs.h"
#include "passes/PassOptionTable.h"
#include "passes/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace planc;
using namespace planc::ir;

namespace {

using Values = std::vector<double>;

/// Parameters `names` of shape `shape` and, for each, an input %g.<name>
/// output as its gradient. `frozen` names one more parameter, frozen.
std::unique_ptr<Module> gradientModule(std::vector<std::string> names, Shape shape, DType dtype = DType::F64,
                                       std::string frozen = "") {
  auto m = std::make_unique<Module>();
  m->name = "update";
  for (const std::string &n : names) {
    Value *p = m->addParam(n, TensorType(shape, dtype));
    p->path = n;
    Value *g = m->addInput("g." + n, TensorType(shape, dtype));
    g->path = g->name;
    m->outputs.push_back(gradientOutput(n, g));
  }
  if (!frozen.empty()) {
    Value *f = m->addParam(frozen, TensorType(shape, dtype));
    f->path = frozen;
    f->frozen = true;
  }
  return m;
}

/// Settings as --pass-option gives them (passes/PassOptionTable.h).
using Settings = std::map<std::string, std::string>;
Settings options(Settings values) { return values; }

llvm::Error lowerOptimizer(Module &m, const PassPipelineOptions &o) {
  PassManagerOptions pm;
  pm.reproducerDir = "";
  PassManager manager(pm, o);
  if (llvm::Error e = manager.add("optimizer")) return e;
  return manager.run(m);
}

/// The settings read as plan-opt reads them; a bad one is their error.
llvm::Error lowerOptimizer(Module &m, const Settings &settings) {
  PassPipelineOptions o;
  for (const auto &[key, value] : settings)
    if (llvm::Error e = setPassOption(o, key, value)) return e;
  return lowerOptimizer(m, o);
}

Tensor tensor(const Shape &shape, Values v) {
  Tensor t(shape, DType::F64);
  t.data = std::move(v);
  return t;
}

/// One step: params (and state, zeros unless given) and gradients fed by
/// name, the step counter as given; returns the outputs.
TensorMap step(const Module &m, const TensorMap &given, double stepNumber) {
  TensorMap feeds = given;
  for (const Value *p : m.params)
    if (!feeds.count(p->name)) feeds[p->name] = Tensor(p->type.shape, p->type.dtype); // zeros
  feeds["step"] = tensor({}, {stepNumber});
  auto out = interpret(m, feeds);
  if (!out) {
    ADD_FAILURE() << llvm::toString(out.takeError());
    return {};
  }
  return *out;
}

void expectNear(const Tensor &got, const Values &want, double tolerance, const std::string &what) {
  ASSERT_EQ(got.data.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got.data[i], want[i], tolerance * std::max(1.0, std::fabs(want[i]))) << what << " [" << i << "]";
}

const Shape kShape = {2, 3};
const Values kP = {0.5, -1.25, 2.0, 0.0, 0.75, -0.3};
const Values kG1 = {0.1, -0.2, 0.3, 1.5, -0.05, 0.0};
const Values kG2 = {-0.4, 0.25, 0.3, -1.0, 0.6, 0.02};

//===----------------------------------------------------------------------===//
// Adam, AdamW
//===----------------------------------------------------------------------===//

/// torch.optim.Adam / AdamW, written out: the reference of the tests.
struct AdamReference {
  double lr, b1, b2, eps, wd;
  bool decoupled;
  Values p, m, v;
  void step(const Values &g0, int t) {
    for (size_t i = 0; i < p.size(); ++i) {
      double g = g0[i];
      if (decoupled) p[i] *= 1 - lr * wd;
      else g += wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      double mHat = m[i] / (1 - std::pow(b1, t)), vHat = v[i] / (1 - std::pow(b2, t));
      p[i] -= lr * mHat / (std::sqrt(vHat) + eps);
    }
  }
};

void checkAdam(const std::string &kind, bool decoupled) {
  auto m = gradientModule({"w"}, kShape);
  ASSERT_FALSE(bool(lowerOptimizer(*m, options({{"optimizer", kind}, {"lr", "0.01"}, {"beta1", "0.9"},
                                                 {"beta2", "0.95"}, {"eps", "1e-8"}, {"weight_decay", "0.1"}}))));
  AdamReference ref{0.01, 0.9, 0.95, 1e-8, 0.1, decoupled, kP, Values(6, 0.0), Values(6, 0.0)};

  TensorMap out = step(*m, {{"w", tensor(kShape, kP)}, {"g.w", tensor(kShape, kG1)}}, 1);
  ref.step(kG1, 1);
  expectNear(out.at("new.w"), ref.p, 1e-12, kind + " step 1 param");
  expectNear(out.at("new.w.adam_m"), ref.m, 1e-12, kind + " step 1 m");
  expectNear(out.at("new.w.adam_v"), ref.v, 1e-12, kind + " step 1 v");

  // The second step reads the first one's outputs back, as a training loop does.
  TensorMap feeds = {{"w", out.at("new.w")},
                     {"w.adam_m", out.at("new.w.adam_m")},
                     {"w.adam_v", out.at("new.w.adam_v")},
                     {"g.w", tensor(kShape, kG2)}};
  out = step(*m, feeds, 2);
  ref.step(kG2, 2);
  expectNear(out.at("new.w"), ref.p, 1e-12, kind + " step 2 param");
  expectNear(out.at("new.w.adam_v"), ref.v, 1e-12, kind + " step 2 v");
}

TEST(OptimizerLoweringTest, AdamWTwoStepsMatchTorchFormulas) { checkAdam("adamw", true); }
TEST(OptimizerLoweringTest, AdamTwoStepsMatchTorchFormulas) { checkAdam("adam", false); }

TEST(OptimizerLoweringTest, StateIsFrozenZeroParamsAndFrozenParamsAreLeftAlone) {
  auto m = gradientModule({"w"}, kShape, DType::F64, "base");
  ASSERT_FALSE(bool(lowerOptimizer(*m, options({{"optimizer", "adamw"}}))));
  for (const char *name : {"w.adam_m", "w.adam_v"}) {
    Value *s = m->lookup(name);
    ASSERT_TRUE(s) << name;
    EXPECT_EQ(s->kind, Value::Kind::Param);
    EXPECT_TRUE(s->frozen);
    EXPECT_EQ(s->init, ir::InitKind::Zeros);
    EXPECT_EQ(s->type, m->lookup("w")->type);
    EXPECT_TRUE(m->output(std::string("new.") + name));
  }
  EXPECT_FALSE(m->output("new.base"));
  EXPECT_FALSE(m->lookup("base.adam_m"));
  for (const auto &op : m->ops) EXPECT_EQ(op->getString("phase"), "optimizer");
}

//===----------------------------------------------------------------------===//
// SGD
//===----------------------------------------------------------------------===//

TEST(OptimizerLoweringTest, SgdNesterovMomentumTwoSteps) {
  auto m = gradientModule({"w"}, kShape);
  ASSERT_FALSE(bool(lowerOptimizer(*m, options({{"optimizer", "sgd"}, {"lr", "0.1"}, {"momentum", "0.9"},
                                                 {"nesterov", "true"}, {"weight_decay", "0.01"}}))));
  // torch.optim.SGD(nesterov=True, dampening=0): d = g + wd p; buf = mu buf + d
  // (buf = d at the first step); p -= lr (d + mu buf).
  Values p = kP, buf(6, 0.0);
  auto reference = [&](const Values &g) {
    for (size_t i = 0; i < p.size(); ++i) {
      double d = g[i] + 0.01 * p[i];
      buf[i] = 0.9 * buf[i] + d;
      p[i] -= 0.1 * (d + 0.9 * buf[i]);
    }
  };
  TensorMap out = step(*m, {{"w", tensor(kShape, kP)}, {"g.w", tensor(kShape, kG1)}}, 1);
  reference(kG1);
  expectNear(out.at("new.w"), p, 1e-12, "step 1 param");
  expectNear(out.at("new.w.momentum"), buf, 1e-12, "step 1 buffer");
  out = step(*m, {{"w", out.at("new.w")}, {"w.momentum", out.at("new.w.momentum")}, {"g.w", tensor(kShape, kG2)}}, 2);
  reference(kG2);
  expectNear(out.at("new.w"), p, 1e-12, "step 2 param");
  expectNear(out.at("new.w.momentum"), buf, 1e-12, "step 2 buffer");
}

TEST(OptimizerLoweringTest, PlainSgdHasNoState) {
  auto m = gradientModule({"w"}, kShape);
  ASSERT_FALSE(bool(lowerOptimizer(*m, options({{"optimizer", "sgd"}, {"lr", "0.5"}, {"weight_decay", "0.2"}}))));
  EXPECT_EQ(m->params.size(), 1u) << "plain SGD keeps no buffer";
  TensorMap out = step(*m, {{"w", tensor(kShape, kP)}, {"g.w", tensor(kShape, kG1)}}, 1);
  Values want(6);
  for (size_t i = 0; i < 6; ++i) want[i] = kP[i] - 0.5 * (kG1[i] + 0.2 * kP[i]);
  expectNear(out.at("new.w"), want, 1e-15, "param");
}

TEST(OptimizerLoweringTest, NarrowParametersGetTheLearningRateCast) {
  auto m = gradientModule({"w"}, kShape, DType::BF16);
  ASSERT_FALSE(bool(lowerOptimizer(*m, options({{"optimizer", "sgd"}}))));
  EXPECT_EQ(m->lookup("lr")->type.dtype, DType::F32);
  bool cast = false;
  for (const auto &op : m->ops) cast |= op->kind == OpKind::Cast && op->results[0]->type.dtype == DType::BF16;
  EXPECT_TRUE(cast);
}

//===----------------------------------------------------------------------===//
// Clipping
//===----------------------------------------------------------------------===//

TEST(OptimizerLoweringTest, GlobalNormClippingScalesEveryGradient) {
  Shape shape = {2};
  auto m = gradientModule({"a", "b"}, shape);
  ASSERT_FALSE(bool(lowerOptimizer(*m, options({{"optimizer", "sgd"}, {"lr", "1"}, {"clip_grad_norm", "1.0"}}))));
  // The norm over both gradients is 5: both shrink by 1 / (5 + 1e-6), as
  // torch.nn.utils.clip_grad_norm_.
  TensorMap feeds = {{"a", tensor(shape, {1, 1})}, {"b", tensor(shape, {1, 1})},
                     {"g.a", tensor(shape, {3, 0})}, {"g.b", tensor(shape, {0, -4})}};
  TensorMap out = step(*m, feeds, 1);
  double f = 1.0 / (5.0 + 1e-6);
  expectNear(out.at("grad_norm"), {5.0}, 1e-15, "norm");
  expectNear(out.at("new.a"), {1 - 3 * f, 1}, 1e-15, "a");
  expectNear(out.at("new.b"), {1, 1 + 4 * f}, 1e-15, "b");

  // Under the threshold the gradients pass unchanged.
  feeds["g.a"] = tensor(shape, {0.3, 0});
  feeds["g.b"] = tensor(shape, {0, -0.4});
  out = step(*m, feeds, 2);
  expectNear(out.at("new.a"), {0.7, 1}, 1e-15, "a unclipped");
  expectNear(out.at("new.b"), {1, 1.4}, 1e-15, "b unclipped");
}

//===----------------------------------------------------------------------===//
// Learning-rate schedules
//===----------------------------------------------------------------------===//

double scheduledLr(std::map<std::string, std::string> settings, double stepNumber, DType stepType = DType::I64) {
  auto m = gradientModule({"w"}, {1});
  if (stepType != DType::I64) m->addInput("step", TensorType({}, stepType))->path = "step";
  settings["optimizer"] = "sgd";
  if (llvm::Error e = lowerOptimizer(*m, options(settings))) {
    ADD_FAILURE() << llvm::toString(std::move(e));
    return NAN;
  }
  EXPECT_EQ(m->lookup("step")->type.dtype, stepType);
  TensorMap out = step(*m, {{"w", tensor({1}, {0})}, {"g.w", tensor({1}, {0})}}, stepNumber);
  return out.count("lr") ? out.at("lr").data[0] : NAN;
}

TEST(OptimizerLoweringTest, ScheduleConstantWithWarmup) {
  std::map<std::string, std::string> s = {{"lr", "0.5"}, {"warmup", "4"}};
  EXPECT_DOUBLE_EQ(scheduledLr(s, 1), 0.125);
  EXPECT_DOUBLE_EQ(scheduledLr(s, 2), 0.25);
  EXPECT_DOUBLE_EQ(scheduledLr(s, 4), 0.5);
  EXPECT_DOUBLE_EQ(scheduledLr(s, 5), 0.5);
  EXPECT_DOUBLE_EQ(scheduledLr(s, 1000), 0.5);
  EXPECT_DOUBLE_EQ(scheduledLr({{"lr", "0.5"}}, 1), 0.5) << "no warm-up";
}

TEST(OptimizerLoweringTest, ScheduleCosineDecayToMinLr) {
  std::map<std::string, std::string> s = {
      {"lr", "1.0"}, {"min_lr", "0.1"}, {"warmup", "10"}, {"decay", "cosine"}, {"total_steps", "110"}};
  auto cosine = [](double step) { return 0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * (step - 10) / 100)); };
  EXPECT_NEAR(scheduledLr(s, 5), 0.5, 1e-15);
  EXPECT_NEAR(scheduledLr(s, 10), 1.0, 1e-15);
  EXPECT_NEAR(scheduledLr(s, 11), cosine(11), 1e-15);
  EXPECT_NEAR(scheduledLr(s, 60), 0.55, 1e-15) << "half way: the mean of lr and min_lr";
  EXPECT_NEAR(scheduledLr(s, 85), cosine(85), 1e-15);
  EXPECT_NEAR(scheduledLr(s, 110), 0.1, 1e-15);
  EXPECT_NEAR(scheduledLr(s, 500), 0.1, 1e-15) << "stays at min_lr after total_steps";
}

TEST(OptimizerLoweringTest, ScheduleLinearDecay) {
  std::map<std::string, std::string> s = {
      {"lr", "2.0"}, {"min_lr", "0.0"}, {"warmup", "0"}, {"decay", "linear"}, {"total_steps", "8"}};
  EXPECT_NEAR(scheduledLr(s, 0), 2.0, 1e-15);
  EXPECT_NEAR(scheduledLr(s, 2), 1.5, 1e-15);
  EXPECT_NEAR(scheduledLr(s, 6), 0.5, 1e-15);
  EXPECT_NEAR(scheduledLr(s, 8), 0.0, 1e-15);
}

TEST(OptimizerLoweringTest, AnF32StepInputIsKept) {
  std::map<std::string, std::string> s = {{"lr", "1.0"}, {"warmup", "4"}};
  EXPECT_NEAR(scheduledLr(s, 3, DType::F32), 0.75, 1e-15);
}

//===----------------------------------------------------------------------===//
// 8-bit Adam
//===----------------------------------------------------------------------===//

TEST(OptimizerLoweringTest, Adam8bitQuantisesMomentsBlockWise) {
  Shape shape = {10};
  Values p = {0.5, -1.0, 0.25, 2.0, 0.0, -0.75, 1.5, 0.1, -0.2, 0.3};
  Values g1 = {0.1, -0.2, 0.3, 0.4, -0.5, 0.05, 0.0, 1.0, -0.01, 0.2};
  Values g2 = {-0.3, 0.1, 0.2, -0.4, 0.5, 0.15, 0.2, -1.0, 0.02, 0.1};
  auto m = gradientModule({"w"}, shape);
  // weight_decay_params = all: this 1-D parameter is decayed, as the reference is.
  std::map<std::string, std::string> settings = {{"optimizer", "adam8bit"}, {"lr", "0.01"},
                                                 {"weight_decay", "0.1"}, {"weight_decay_params", "all"},
                                                 {"block_size", "4"}};
  ASSERT_FALSE(bool(lowerOptimizer(*m, options(settings))));
  for (const char *codes : {"w.adam_m_q", "w.adam_v_q"}) {
    ASSERT_TRUE(m->lookup(codes)) << codes;
    EXPECT_EQ(m->lookup(codes)->type, TensorType(shape, DType::U8)) << codes;
  }
  for (const char *scales : {"w.adam_m_scale", "w.adam_v_scale"}) {
    ASSERT_TRUE(m->lookup(scales)) << scales;
    EXPECT_EQ(m->lookup(scales)->type, TensorType({3}, DType::F64)) << "ceil(10 / 4) blocks: " << scales;
    EXPECT_TRUE(m->lookup(scales)->frozen);
  }

  // From a zero state, the first step uses the exact moments: AdamW's step.
  AdamReference ref{0.01, 0.9, 0.999, 1e-8, 0.1, true, p, Values(10, 0.0), Values(10, 0.0)};
  TensorMap out = step(*m, {{"w", tensor(shape, p)}, {"g.w", tensor(shape, g1)}}, 1);
  ref.step(g1, 1);
  expectNear(out.at("new.w"), ref.p, 1e-12, "step 1");
  // The second step reads the quantised moments back: close to AdamW, not equal.
  TensorMap feeds = {{"w", out.at("new.w")}, {"g.w", tensor(shape, g2)}};
  for (const char *s : {"w.adam_m_q", "w.adam_m_scale", "w.adam_v_q", "w.adam_v_scale"})
    feeds[s] = out.at(std::string("new.") + s);
  out = step(*m, feeds, 2);
  Values before = ref.p;
  ref.step(g2, 2);
  for (size_t i = 0; i < p.size(); ++i) {
    double want = ref.p[i] - before[i], got = out.at("new.w").data[i] - before[i];
    EXPECT_NEAR(got, want, 0.05 * std::fabs(want) + 1e-6) << "step 2 update of element " << i;
  }
}

//===----------------------------------------------------------------------===//
// Which parameters are decayed
//===----------------------------------------------------------------------===//

/// Four parameters with the same numbers and gradients: a matrix "w" [2, 3],
/// a vector "b" [6], a matrix "n" marked no_weight_decay and a vector "s"
/// marked weight_decay (none marked when `marks` is false).
std::unique_ptr<Module> decayModule(bool marks) {
  auto m = std::make_unique<Module>();
  m->name = "decay";
  for (auto [name, shape] : std::vector<std::pair<std::string, Shape>>{
           {"w", kShape}, {"b", {6}}, {"n", kShape}, {"s", {6}}}) {
    Value *p = m->addParam(name, TensorType(shape, DType::F64));
    p->path = name;
    if (marks && name == "n") p->weightDecay = false;
    if (marks && name == "s") p->weightDecay = true;
    Value *g = m->addInput("g." + name, TensorType(shape, DType::F64));
    g->path = g->name;
    m->outputs.push_back(gradientOutput(name, g));
  }
  return m;
}

/// Two steps of `settings` (the second from the first one's outputs), every
/// parameter from kP with gradients kG1 then kG2; the parameters after them.
std::map<std::string, Values> twoSteps(Module &m, const Settings &settings) {
  if (llvm::Error e = lowerOptimizer(m, settings)) {
    ADD_FAILURE() << llvm::toString(std::move(e));
    return {};
  }
  TensorMap feeds;
  for (const Value *p : m.params)
    if (!p->frozen) feeds[p->name] = tensor(p->type.shape, kP);
  for (const Values *g : {&kG1, &kG2}) {
    for (const Value *in : m.inputs)
      if (in->name != "step") feeds[in->name] = tensor(in->type.shape, *g);
    TensorMap out = step(m, feeds, g == &kG1 ? 1 : 2);
    for (const Output &o : m.outputs)
      if (o.isUpdate()) {
        // The next step reads each updated value back into its parameter.
        const Value *p = nullptr;
        for (const Value *v : m.params)
          if (v->path == o.path) p = v;
        if (p) feeds[p->name] = out.at(o.name);
      }
  }
  std::map<std::string, Values> params;
  for (const char *name : {"w", "b", "n", "s"}) params[name] = feeds.at(name).data;
  return params;
}

/// Every optimizer with a weight decay decays exactly the parameters the rule
/// picks: each parameter ends where it would with weight_decay on every
/// parameter (decayed) or on none (not decayed), and the two differ.
void checkDecayRule(Settings settings) {
  settings["weight_decay"] = "0.3";
  std::string kind = settings["optimizer"] + (settings.count("momentum") ? " with momentum" : "");
  auto none = twoSteps(*decayModule(false), [&] {
    Settings s = settings;
    s["weight_decay"] = "0";
    return s;
  }());
  auto every = twoSteps(*decayModule(false), [&] {
    Settings s = settings;
    s["weight_decay_params"] = "all";
    return s;
  }());
  for (const char *name : {"w", "b", "n", "s"}) {
    ASSERT_EQ(none[name].size(), 6u) << kind << " " << name;
    EXPECT_NE(none[name], every[name]) << kind << ": the decay must show in two steps (" << name << ")";
  }
  // matrices (the default): w and the marked s; all: every one but the marked n.
  for (auto [rule, decayed] : std::vector<std::pair<std::string, std::set<std::string>>>{
           {"matrices", {"w", "s"}}, {"all", {"w", "b", "s"}}}) {
    Settings s = settings;
    if (rule != "matrices") s["weight_decay_params"] = rule;
    auto got = twoSteps(*decayModule(true), s);
    for (const char *name : {"w", "b", "n", "s"})
      EXPECT_EQ(got[name], decayed.count(name) ? every[name] : none[name])
          << kind << ", weight_decay_params = " << rule << ": " << name
          << (decayed.count(name) ? " is decayed" : " is not decayed");
  }
}

TEST(OptimizerLoweringTest, AdamWDecaysMatricesAndTheMarked) { checkDecayRule({{"optimizer", "adamw"}}); }
TEST(OptimizerLoweringTest, AdamDecaysMatricesAndTheMarked) { checkDecayRule({{"optimizer", "adam"}}); }
TEST(OptimizerLoweringTest, Adam8bitDecaysMatricesAndTheMarked) {
  checkDecayRule({{"optimizer", "adam8bit"}, {"block_size", "4"}});
}
TEST(OptimizerLoweringTest, SgdDecaysMatricesAndTheMarked) {
  checkDecayRule({{"optimizer", "sgd"}, {"lr", "0.1"}});
  checkDecayRule({{"optimizer", "sgd"}, {"lr", "0.1"}, {"momentum", "0.9"}});
}

//===----------------------------------------------------------------------===//
// Settings
//===----------------------------------------------------------------------===//

std::string settingsError(std::map<std::string, std::string> settings) {
  auto m = gradientModule({"w"}, kShape);
  llvm::Error e = lowerOptimizer(*m, options(settings));
  return e ? llvm::toString(std::move(e)) : "";
}

TEST(OptimizerLoweringTest, BadSettingsNameTheKey) {
  EXPECT_NE(settingsError({{"optimizer", "lion"}}).find("'optimizer' must be one of sgd, adam, adamw, adam8bit"),
            std::string::npos);
  EXPECT_NE(settingsError({{"lr", "fast"}}).find("'lr' must be a number"), std::string::npos);
  EXPECT_NE(settingsError({{"beta2", "1"}}).find("'beta2'"), std::string::npos);
  EXPECT_NE(settingsError({{"nesterov", "maybe"}}).find("'nesterov' must be true or false"), std::string::npos);
  EXPECT_NE(settingsError({{"decay", "cosine"}, {"warmup", "10"}, {"total_steps", "10"}}).find("total_steps"),
            std::string::npos);
  EXPECT_NE(settingsError({{"lr", "0.1"}, {"min_lr", "0.2"}}).find("min_lr"), std::string::npos);
}

TEST(OptimizerLoweringTest, NeedsAutodiffFirst) {
  auto m = gradientModule({"w"}, kShape);
  m->outputs.clear();
  llvm::Error e = lowerOptimizer(*m, options({}));
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("run autodiff before the optimizer"), std::string::npos);
}

TEST(OptimizerLoweringTest, PassOptionsFromATrainBlock) {
  Compilation c;
  auto consumer = std::make_unique<CollectingConsumer>();
  c.setDiagnosticConsumer(std::move(consumer));
  const char *text = "import std.nn\nmodel t {\n  input x : f32[2, 4]\n  loss = sum(sum(linear(x, 2), -1), -1)\n}\n"
                     "train {\n  steps = 5000\n  clip_grad_norm = 0.5\n"
                     "  optimizer adamw(lr = 6e-4, betas = (0.9, 0.95), weight_decay = 0.1, warmup = 700,\n"
                     "                  decay = cosine, min_lr = 6e-5, weight_decay_params = all)\n}\n";
  ASSERT_TRUE(c.loadString("t.plan", text) && c.check());
  PassPipelineOptions o = passOptionsFromConfig(c.getConfig());
  // The values as --pass-option would read them.
  EXPECT_EQ(passOptionValue(o, "optimizer"), "adamw");
  EXPECT_EQ(passOptionValue(o, "lr"), "0.0006");
  EXPECT_EQ(passOptionValue(o, "beta1"), "0.9");
  EXPECT_EQ(passOptionValue(o, "beta2"), "0.95");
  EXPECT_EQ(passOptionValue(o, "weight_decay"), "0.1");
  EXPECT_EQ(passOptionValue(o, "weight_decay_params"), "all");
  EXPECT_EQ(passOptionValue(o, "warmup"), "700");
  EXPECT_EQ(passOptionValue(o, "decay"), "cosine");
  EXPECT_EQ(passOptionValue(o, "min_lr"), "6e-05");
  EXPECT_EQ(passOptionValue(o, "total_steps"), "5000");
  EXPECT_EQ(passOptionValue(o, "clip_grad_norm"), "0.5");
  EXPECT_EQ(passOptionValue(o, "nesterov"), "false");
  EXPECT_EQ(passOptionValue(o, "block_size"), "2048");

  // And the pass reads them back to the same numbers.
  std::unique_ptr<Module> m = lowerToIR(c);
  ASSERT_TRUE(m);
  PassManagerOptions pm;
  pm.reproducerDir = "";
  PassManager manager(pm, o);
  ASSERT_FALSE(bool(manager.addPipeline("autodiff,optimizer")));
  ASSERT_FALSE(bool(manager.run(*m)));
  const Op *schedule = m->lookup("lr")->def;
  EXPECT_EQ(schedule->getFloat("lr"), 6e-4);
  EXPECT_EQ(schedule->getFloat("min_lr"), 6e-5);
  EXPECT_EQ(schedule->getInt("decay_steps"), 5000);
  EXPECT_EQ(schedule->getString("decay"), "cosine");
  EXPECT_EQ(m->lookup("clip_scale")->def->getFloat("max_norm"), 0.5);
}

} // namespace
