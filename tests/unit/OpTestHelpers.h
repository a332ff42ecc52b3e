//===- tests/unit/OpTestHelpers.h - small modules to run ops on -*- C++ -*-===//
//
// A module under construction with its feeds: tests add inputs with their
// values, build ops with the Builder, and run the interpreter on the result.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_TESTS_UNIT_OPTESTHELPERS_H
#define PLANC_TESTS_UNIT_OPTESTHELPERS_H

#include "ir/Builder.h"
#include "ir/Interpreter.h"
#include "ir/OpDef.h"
#include "ir/Parser.h"

#include <gtest/gtest.h>

#include <random>

namespace planc::ir::testing {

/// A module from textual IR, or null after reporting the parse error as a
/// test failure.
inline std::unique_ptr<Module> parse(const std::string &text) {
  auto m = parseIR(text);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return nullptr;
  }
  return std::move(*m);
}

inline Tensor tensor(Shape shape, std::vector<double> values, DType dtype = DType::F64) {
  Tensor t(std::move(shape), dtype);
  EXPECT_EQ(t.data.size(), values.size()) << "values for " << toString(t.shape);
  t.data = std::move(values);
  return t;
}

/// Deterministic test data.
class Random {
public:
  explicit Random(uint64_t seed = 1) : engine(seed) {}
  std::vector<double> normal(int64_t n) {
    std::normal_distribution<double> dist;
    std::vector<double> v(static_cast<size_t>(n));
    for (double &x : v) x = dist(engine);
    return v;
  }
  std::vector<double> uniform(int64_t n, double lo, double hi) {
    std::uniform_real_distribution<double> dist(lo, hi);
    std::vector<double> v(static_cast<size_t>(n));
    for (double &x : v) x = dist(engine);
    return v;
  }
  /// |x| in [lo, hi] with a random sign: away from the kinks of abs and relu.
  std::vector<double> awayFromZero(int64_t n, double lo = 0.2, double hi = 1.5) {
    std::vector<double> v = uniform(n, lo, hi);
    std::bernoulli_distribution coin;
    for (double &x : v)
      if (coin(engine)) x = -x;
    return v;
  }
  std::vector<double> integers(int64_t n, int64_t lo, int64_t hi) {
    std::uniform_int_distribution<int64_t> dist(lo, hi - 1);
    std::vector<double> v(static_cast<size_t>(n));
    for (double &x : v) x = double(dist(engine));
    return v;
  }

private:
  std::mt19937_64 engine;
};

/// A module with its inputs' values.
struct OpModule {
  Module m;
  Builder b{m};
  TensorMap feeds;

  Value *input(const std::string &name, Tensor value) {
    Value *v = m.addInput(name, TensorType(value.shape, value.dtype));
    value.dtype = v->type.dtype;
    feeds[v->name] = std::move(value);
    return v;
  }
  Value *input(const std::string &name, Shape shape, std::vector<double> values, DType dtype = DType::F64) {
    return input(name, tensor(std::move(shape), std::move(values), dtype));
  }

  /// Runs the module with `v` as its only output.
  Tensor run(Value *v) {
    m.outputs = {{"out", v}};
    llvm::Expected<TensorMap> out = interpret(m, feeds);
    if (!out) {
      ADD_FAILURE() << llvm::toString(out.takeError());
      return Tensor();
    }
    return out->at("out");
  }
};

} // namespace planc::ir::testing

#endif
