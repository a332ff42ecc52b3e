//===- tests/unit/StepTestHelpers.h - training steps for pass tests -*- C++ -*-===//
//
// What the tests of the training passes share: a plan lowered to f64 IR,
// passes run by name with --pass-option settings, random feeds for the
// interpreter, and two steps compared on them.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_TESTS_UNIT_STEPTESTHELPERS_H
#define PLANC_TESTS_UNIT_STEPTESTHELPERS_H

#include "frontend/Frontend.h"
#include "frontend/Verify.h"
#include "ir/ConvertFloats.h"
#include "ir/Interpreter.h"
#include "passes/PassManager.h"
#include "passes/PassOptionTable.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <string>

namespace planc::testing {

using namespace planc::ir;

/// The source tree: $PLANC_SOURCE_DIR (ctest sets it), else found from this
/// file's own path.
inline std::string sourceDir() {
  if (const char *root = std::getenv("PLANC_SOURCE_DIR")) return root;
  llvm::StringRef file = __FILE__;
  return file.drop_back(llvm::StringRef("/tests/unit/StepTestHelpers.h").size()).str();
}

/// Lowers a plan (a file when `isFile`, else text) to forward IR, in f64.
inline std::unique_ptr<Module> lower(const std::string &source, bool isFile) {
  Compilation c{FrontendOptions()};
  auto consumer = std::make_unique<CollectingConsumer>();
  CollectingConsumer *diags = consumer.get();
  c.setDiagnosticConsumer(std::move(consumer));
  bool ok = (isFile ? c.loadFile(source) : c.loadString("t.plan", source)) && c.check();
  std::unique_ptr<Module> m = ok ? lowerToIR(c) : nullptr;
  if (!m) {
    std::string text;
    for (const Diagnostic &d : diags->diagnostics) text += d.message + "\n";
    ADD_FAILURE() << "the frontend rejected the plan:\n" << text;
    return nullptr;
  }
  convertFloatTypes(*m, DType::F64);
  return m;
}

/// Settings as --pass-option gives them; a bad one is the run's error.
using Settings = std::map<std::string, std::string>;

inline llvm::Error runPasses(Module &m, const std::string &pipeline, const Settings &settings) {
  PassPipelineOptions options;
  for (const auto &[key, value] : settings)
    if (llvm::Error e = setPassOption(options, key, value)) return e;
  PassManagerOptions pm;
  pm.verifyEach = true;
  pm.reproducerDir = "";
  PassManager manager(pm, std::move(options));
  if (llvm::Error e = manager.addPipeline(pipeline)) return e;
  return manager.run(m);
}

/// Random parameters and inputs (ints below `indexLimit`), the step counter 1.
inline TensorMap feedsFor(const Module &m, int64_t indexLimit) {
  std::mt19937_64 engine(11);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int64_t> index(0, indexLimit - 1);
  TensorMap feeds;
  for (const Value *v : m.params) {
    Tensor t(v->type.shape, v->type.dtype);
    for (double &x : t.data) x = v->frozen ? 0.0 : 0.3 * normal(engine);
    feeds[v->name] = std::move(t);
  }
  for (const Value *v : m.inputs) {
    Tensor t(v->type.shape, v->type.dtype);
    for (double &x : t.data) x = v->name == "step" ? 1.0 : isFloat(v->type.dtype) ? normal(engine) : double(index(engine));
    feeds[v->name] = std::move(t);
  }
  return feeds;
}

/// Both steps on the same feeds and draw seed: every output within
/// `relative` (of its largest element) of the reference's: a rewritten step
/// (fused, folded) sums in another order.
inline void expectSameStep(const Module &reference, const Module &rewritten, int64_t indexLimit, double relative) {
  TensorMap feeds = feedsFor(reference, indexLimit);
  auto a = interpret(reference, feeds, /*seed=*/3);
  auto b = interpret(rewritten, feeds, /*seed=*/3);
  ASSERT_TRUE(bool(a)) << llvm::toString(a.takeError());
  ASSERT_TRUE(bool(b)) << llvm::toString(b.takeError());
  ASSERT_EQ(a->size(), b->size());
  ASSERT_TRUE(a->count("loss"));
  size_t compared = 0;
  for (auto &[name, t] : *a) {
    ASSERT_TRUE(b->count(name)) << name;
    const Tensor &u = b->at(name);
    ASSERT_EQ(t.shape, u.shape) << name;
    double scale = 0;
    for (double v : t.data) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < t.data.size(); ++i)
      ASSERT_NEAR(t.data[i], u.data[i], relative * std::max(scale, 1e-300)) << name << "[" << i << "]";
    ++compared;
  }
  EXPECT_GT(compared, 10u);
}

} // namespace planc::testing

#endif
