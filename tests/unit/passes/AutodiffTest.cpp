//===- tests/unit/passes/AutodiffTest.cpp - the autodiff pass vs differences -----===//
//
// Every standard-library layer, written into a tiny model and lowered by the
// real frontend, differentiated by the autodiff pass and checked against
// central differences of the loss, in f64 (`precision f32(master = f64)` makes
// every parameter, and so every activation, f64). The loss is sum(y * r) with
// a random r (or the layer's own cross-entropy), so no symmetry hides a wrong
// gradient. Parameters are random, not their init (zeros and ones would hide
// the terms they multiply). The error of a parameter's gradient is
// max |analytic - numeric| over its elements, relative to the largest numeric
// component; it must stay under 1e-6. Then the whole of tiny-gpt.plan, on a
// sample of elements per parameter, and the pass's structural guarantees.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "frontend/Verify.h"
#include "ir/Interpreter.h"
#include "ir/Printer.h"
#include "passes/PassManager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>

using namespace planc;
using namespace planc::ir;

namespace {

constexpr double kTolerance = 1e-6;
constexpr double kStep = 1e-5; // central differences: error O(step^2) + O(eps / step)

const char *sourceDir() {
  const char *root = std::getenv("PLANC_SOURCE_DIR");
  return root ? root : PLANC_SOURCE_DIR;
}

/// Lowers a plan (text, or a file when `isFile`) to forward IR; fails the test
/// with the diagnostics when the frontend rejects it.
std::unique_ptr<Module> lower(const std::string &source, bool isFile = false, std::vector<std::string> sets = {}) {
  FrontendOptions options;
  options.setOverrides = std::move(sets);
  Compilation c(options);
  auto consumer = std::make_unique<CollectingConsumer>();
  CollectingConsumer *diags = consumer.get();
  c.setDiagnosticConsumer(std::move(consumer));
  bool ok = (isFile ? c.loadFile(source) : c.loadString("t.plan", source)) && c.check();
  std::unique_ptr<Module> m = ok ? lowerToIR(c) : nullptr;
  if (!m) {
    std::string text;
    for (const Diagnostic &d : diags->diagnostics) text += d.message + "\n";
    ADD_FAILURE() << "the frontend rejected the plan:\n" << text << source;
  }
  return m;
}

/// Runs passes with the verifier after each, as the pipeline does.
void runPasses(Module &m, const std::string &pipeline, PassPipelineOptions options = {}) {
  PassManagerOptions pm;
  pm.verifyEach = true;
  pm.reproducerDir = "";
  PassManager manager(pm, std::move(options));
  ASSERT_FALSE(bool(manager.addPipeline(pipeline)));
  llvm::Error e = manager.run(m);
  ASSERT_FALSE(bool(e)) << llvm::toString(std::move(e));
}

/// Random parameters and inputs: floats normal (scaled by 0.5, so nothing
/// saturates), integers uniform below `indexLimit`.
TensorMap randomFeeds(const Module &m, int64_t indexLimit, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int64_t> index(0, indexLimit - 1);
  TensorMap feeds;
  auto fill = [&](const Value *v) {
    Tensor t(v->type.shape, v->type.dtype);
    for (double &x : t.data) x = isFloat(v->type.dtype) ? 0.5 * normal(engine) : double(index(engine));
    feeds[v->name] = std::move(t);
  };
  for (const Value *p : m.params) fill(p);
  for (const Value *in : m.inputs) fill(in);
  return feeds;
}

double lossOf(const Module &forward, const TensorMap &feeds) {
  auto out = interpret(forward, feeds);
  if (!out) {
    ADD_FAILURE() << llvm::toString(out.takeError());
    return NAN;
  }
  return out->at("loss").data.at(0);
}

struct ParamError {
  std::string path;
  double error = 0;
  int64_t checked = 0;
};

/// Checks every trainable parameter's gradient against central differences.
/// With `sample` > 0 only that many elements per parameter are checked: the
/// largest gradients and as many random ones.
std::vector<ParamError> checkGradients(const Module &forward, Module &train, int64_t indexLimit, int64_t sample = 0) {
  std::vector<ParamError> errors;
  TensorMap feeds = randomFeeds(forward, indexLimit, /*seed=*/42);
  auto outputs = interpret(train, feeds);
  if (!outputs) {
    ADD_FAILURE() << llvm::toString(outputs.takeError());
    return errors;
  }
  std::mt19937_64 engine(7);
  for (const Value *p : forward.params) {
    std::string name = "grad." + p->path;
    if (p->frozen) {
      EXPECT_FALSE(outputs->count(name)) << "frozen parameter %" << p->name << " has a gradient";
      continue;
    }
    auto it = outputs->find(name);
    if (it == outputs->end()) {
      ADD_FAILURE() << "no output " << name;
      continue;
    }
    const Tensor &analytic = it->second;
    EXPECT_EQ(analytic.shape, p->type.shape) << name;
    std::vector<int64_t> elements(size_t(analytic.numel()));
    for (size_t i = 0; i < elements.size(); ++i) elements[i] = int64_t(i);
    if (sample > 0 && int64_t(elements.size()) > 2 * sample) {
      std::sort(elements.begin(), elements.end(),
                [&](int64_t a, int64_t b) { return std::fabs(analytic.data[a]) > std::fabs(analytic.data[b]); });
      std::shuffle(elements.begin() + sample, elements.end(), engine);
      elements.resize(size_t(2 * sample));
    }
    double maxDiff = 0, maxNumeric = 0;
    Tensor &x = feeds[p->name];
    for (int64_t i : elements) {
      double saved = x.data[i];
      x.data[i] = saved + kStep;
      double up = lossOf(forward, feeds);
      x.data[i] = saved - kStep;
      double down = lossOf(forward, feeds);
      x.data[i] = saved;
      double numeric = (up - down) / (2 * kStep);
      maxDiff = std::max(maxDiff, std::fabs(analytic.data[i] - numeric));
      maxNumeric = std::max(maxNumeric, std::fabs(numeric));
    }
    errors.push_back({p->path, maxNumeric > 0 ? maxDiff / maxNumeric : maxDiff, int64_t(elements.size())});
  }
  return errors;
}

//===----------------------------------------------------------------------===//
// Every std layer
//===----------------------------------------------------------------------===//

struct LayerCase {
  std::string name;
  std::string imports;  // std modules
  std::string body;     // the model's inputs and statements; defines `loss`
  int64_t indexLimit = 10;
  std::vector<std::string> frozen = {}; // parameter paths expected without a gradient
  std::vector<OpKind> covers = {};       // op kinds the case must exercise
};

void PrintTo(const LayerCase &c, std::ostream *os) { *os << c.name; }

std::string planText(const LayerCase &c) {
  std::string text;
  for (const char *module : {"nn", "gpt", "llama", "lora"})
    if (c.imports.find(module) != std::string::npos) text += std::string("import std.") + module + "\n";
  return text + "model t {\n" + c.body + "}\ntrain {\n  seed = 3\n  precision f32(master = f64)\n}\n";
}

/// sum(y * r) over [2, 3, n].
const char *kSumLoss = "  loss = sum(sum(sum(y * r, -1), -1), -1)\n";

std::vector<LayerCase> layerCases() {
  auto xr = [](int h, int out) {
    return "  input x : f64[2, 3, " + std::to_string(h) + "]\n  input r : f64[2, 3, " + std::to_string(out) + "]\n";
  };
  std::vector<LayerCase> cases = {
      {"embedding", "nn",
       "  input tokens : i32[2, 3]\n  input r : f64[2, 3, 8]\n  y = embedding(tokens, 10, 8)\n" +
           std::string(kSumLoss)},
      {"positional", "nn", xr(8, 8) + "  y = tanh(x + positional(3, 8))\n" + kSumLoss},
      {"linear", "nn", xr(8, 5) + "  y = linear(x, 5)\n" + kSumLoss},
      {"linear without bias", "nn", xr(8, 5) + "  y = linear(x, 5, bias = false)\n" + kSumLoss},
      {"linear column-parallel", "nn", xr(8, 5) + "  y = linear(x, 5, shard = column)\n" + kSumLoss},
      {"tied_linear (fan-out into the table)", "nn",
       "  input tokens : i32[2, 3]\n  input r : f64[2, 3, 10]\n  e = embedding(tokens, 10, 8) as wte\n"
       "  y = tied_linear(tanh(e), wte.weight)\n" + std::string(kSumLoss)},
      {"layernorm", "nn", xr(8, 8) + "  y = layernorm(x)\n" + kSumLoss},
      {"rmsnorm", "nn", xr(8, 8) + "  y = rmsnorm(x)\n" + kSumLoss},
      {"attention causal", "gpt", xr(8, 8) + "  y = attention(x, 2, causal = true, p = 0.0)\n" + kSumLoss, 10, {},
       {OpKind::CausalMask, OpKind::Softmax}},
      {"attention not causal", "gpt", xr(8, 8) + "  y = attention(x, 2, causal = false, p = 0.0)\n" + kSumLoss},
      {"attention causal dropout 0.2", "gpt", xr(8, 8) + "  y = attention(x, 2, causal = true, p = 0.2)\n" + kSumLoss,
       10, {}, {OpKind::Dropout, OpKind::CausalMask}},
      {"attention not causal dropout 0.5", "gpt",
       xr(8, 8) + "  y = attention(x, 2, causal = false, p = 0.5)\n" + kSumLoss, 10, {}, {OpKind::Dropout}},
      {"mlp", "gpt", xr(8, 8) + "  y = mlp(x, ffn = 16, p = 0.0)\n" + kSumLoss},
      {"mlp dropout 0.1", "gpt", xr(8, 8) + "  y = mlp(x, ffn = 16)\n" + kSumLoss, 10, {},
       {OpKind::Dropout, OpKind::Gelu}},
      {"lm_loss (cross-entropy, tied head)", "gpt",
       "  input tokens : i32[2, 3]\n  input targets : i32[2, 3]\n  input x : f64[2, 3, 8]\n"
       "  e = embedding(tokens, 10, 8) as wte\n  loss = lm_loss(tanh(e + x), wte.weight, targets)\n",
       10, {}, {OpKind::CrossEntropy, OpKind::Gather}},
      {"llama_attention grouped-query", "llama",
       xr(16, 16) + "  y = llama_attention(x, heads = 4, kv_heads = 2)\n" + kSumLoss, 10, {},
       {OpKind::Rope, OpKind::RepeatInterleave, OpKind::CausalMask}},
      {"llama_attention multi-query", "llama",
       xr(16, 16) + "  y = llama_attention(x, heads = 4, kv_heads = 1, theta = 500.0)\n" + kSumLoss},
      {"swiglu", "llama", xr(8, 8) + "  y = swiglu(x, ffn = 12)\n" + kSumLoss, 10, {}, {OpKind::Silu}},
      {"lora_linear (frozen base)", "lora", xr(8, 5) + "  y = lora_linear(x, 5, rank = 2)\n" + kSumLoss, 10,
       {"lora_linear.weight"}},
      {"transformer block (residual fan-out)", "nn gpt",
       xr(8, 8) + "  h = x + attention(layernorm(x) as ln_1, 2, causal = true, p = 0.1)\n"
                  "  y = h + mlp(layernorm(h) as ln_2, ffn = 16, p = 0.1)\n" + kSumLoss},
  };
  return cases;
}

class LayerGradientTest : public ::testing::TestWithParam<LayerCase> {};

TEST_P(LayerGradientTest, MatchesCentralDifferences) {
  const LayerCase &c = GetParam();
  std::string text = planText(c);
  std::unique_ptr<Module> forward = lower(text), train = lower(text);
  ASSERT_TRUE(forward && train);
  for (const Value *p : forward->params) ASSERT_EQ(p->type.dtype, DType::F64) << p->name;
  for (OpKind k : c.covers)
    EXPECT_TRUE(std::any_of(forward->ops.begin(), forward->ops.end(), [&](const auto &op) { return op->kind == k; }))
        << "the case lowers without a '" << spelling(k) << "'";
  runPasses(*train, "autodiff");
  for (const std::string &path : c.frozen) EXPECT_FALSE(train->output("grad." + path)) << path;

  std::vector<ParamError> errors = checkGradients(*forward, *train, c.indexLimit);
  ASSERT_FALSE(errors.empty()) << "no trainable parameter in\n" << text;
  ParamError worst;
  for (const ParamError &e : errors) {
    EXPECT_LT(e.error, kTolerance) << "gradient of " << e.path << " in\n" << text;
    if (e.error >= worst.error) worst = e;
  }
  std::printf("[ gradcheck ] %-40s max relative error %.2e (%s, %zu parameters)\n", c.name.c_str(), worst.error,
              worst.path.c_str(), errors.size());
}

INSTANTIATE_TEST_SUITE_P(StdLayers, LayerGradientTest, ::testing::ValuesIn(layerCases()),
                         [](const ::testing::TestParamInfo<LayerCase> &info) {
                           std::string s;
                           for (char ch : info.param.name)
                             if (std::isalnum(static_cast<unsigned char>(ch))) s += ch;
                           return s;
                         });

//===----------------------------------------------------------------------===//
// The whole of tiny-gpt
//===----------------------------------------------------------------------===//

TEST(AutodiffTest, TinyGptMatchesCentralDifferences) {
  std::string path = std::string(sourceDir()) + "/examples/tiny-gpt.plan";
  // f64 parameters, and one sequence so each loss evaluation is quick.
  std::vector<std::string> sets = {"train.precision=f32(master = f64)", "train.micro_batch=1",
                                   "train.global_batch=1"};
  std::unique_ptr<Module> forward = lower(path, true, sets), train = lower(path, true, sets);
  ASSERT_TRUE(forward && train);
  runPasses(*train, "autodiff");
  std::vector<ParamError> errors = checkGradients(*forward, *train, /*indexLimit=*/256, /*sample=*/3);
  EXPECT_EQ(errors.size(), forward->params.size());
  ParamError worst;
  for (const ParamError &e : errors) {
    EXPECT_LT(e.error, kTolerance) << "gradient of " << e.path;
    if (e.error >= worst.error) worst = e;
  }
  std::printf("[ gradcheck ] %-40s max relative error %.2e (%s, %zu parameters, 6 elements each)\n", "tiny-gpt",
              worst.error, worst.path.c_str(), errors.size());
}

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

TEST(AutodiffTest, BackwardOpsCarryPhaseLocationAndPath) {
  std::unique_ptr<Module> m = lower(std::string(sourceDir()) + "/examples/tiny-gpt.plan", true);
  ASSERT_TRUE(m);
  size_t numForward = m->ops.size();
  std::set<std::string> forwardPaths;
  for (const auto &op : m->ops) forwardPaths.insert(op->path);
  runPasses(*m, "autodiff");
  ASSERT_GT(m->ops.size(), numForward);
  for (size_t i = numForward; i < m->ops.size(); ++i) {
    const Op &op = *m->ops[i];
    EXPECT_EQ(op.getString("phase"), "backward") << toText(op);
    EXPECT_TRUE(op.loc.isKnown()) << toText(op);
    EXPECT_TRUE(forwardPaths.count(op.path)) << "a path no forward op has: " << toText(op);
    EXPECT_FALSE(op.has("recompute")) << toText(op);
  }
  for (size_t i = 0; i < numForward; ++i) EXPECT_FALSE(m->ops[i]->has("phase"));
}

TEST(AutodiffTest, ParametersOffThePathGetZeros) {
  // `side` computes a value the loss never reads.
  std::unique_ptr<Module> m = lower("import std.nn\nmodel t {\n  input x : f64[2, 4]\n  unused = linear(x, 3) as side\n"
                                    "  loss = sum(sum(linear(x, 2) as main, -1), -1)\n}\n"
                                    "train { precision f32(master = f64) }\n");
  ASSERT_TRUE(m);
  runPasses(*m, "autodiff");
  Value *g = m->output("grad.side.weight");
  ASSERT_TRUE(g);
  ASSERT_TRUE(g->def);
  EXPECT_EQ(g->def->kind, OpKind::Fill);
  EXPECT_EQ(g->def->getFloat("value", 1.0), 0.0);
  EXPECT_EQ(g->type.shape, (Shape{4, 3}));
}

TEST(AutodiffTest, RefusesModulesWithoutAScalarLoss) {
  Module m;
  Value *w = m.addParam("w", TensorType({2}, DType::F32));
  w->path = "w";
  m.outputs = {{"out", w}};
  PassPipelineOptions none;
  std::unique_ptr<Pass> pass = findPass("autodiff")->create(none);
  llvm::Error e = pass->run(m);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("\"loss\""), std::string::npos);

  m.outputs = {{"loss", w, OutputRole::Loss}};
  e = pass->run(m);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("scalar"), std::string::npos);
}

} // namespace
