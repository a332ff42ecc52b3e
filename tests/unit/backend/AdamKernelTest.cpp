//===- tests/unit/backend/AdamKernelTest.cpp - the Adam update rendered, compiled, compared -===//
//
// adam_update's description is a formula of several results (parameter and
// both moments): rendered as one elementwise kernel with three outputs,
// written in place of its operands as the execution plan places them,
// compiled and compared with the interpreter's kernel and with torch.optim's
// arithmetic written out here, for Adam and AdamW: f32 within 8 ulps of
// the operands' scale (1; m' cancels m against (g - m) / 10 in f32).
//
//===----------------------------------------------------------------------===//

#include "backend/c/CFamily.h"

#include "CompiledProgram.h"

#include <cmath>
#include <random>

using namespace planc;
using namespace planc::backend;
using namespace planc::ir;

namespace {

TEST(AdamKernelTest, InPlaceUpdateEqualsTheInterpreterAndTorch) {
  const int64_t n = 257;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const double lr = 1e-3, step = 3, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
  planc::testing::ScratchDir dir;
  std::string source;
  llvm::raw_string_ostream os(source);
  renderPrelude(cpuLanguage(), os);
  os << planc::testing::kReadFileHelper;
  std::vector<std::array<Tensor, 3>> expected;
  for (bool decoupled : {false, true}) {
    AttrMap attrs = {{"beta1", b1}, {"beta2", b2}, {"eps", eps}, {"weight_decay", wd}, {"decoupled", decoupled}};
    Tensor p({n}, DType::F32), g({n}, DType::F32), m({n}, DType::F32), v({n}, DType::F32);
    Tensor lrT({}, DType::F32), stepT({}, DType::F32);
    for (int64_t i = 0; i < n; ++i) {
      p.data[size_t(i)] = double(float(dist(rng)));
      g.data[size_t(i)] = double(float(dist(rng)));
      m.data[size_t(i)] = double(float(dist(rng) / 10));
      v.data[size_t(i)] = double(float(std::fabs(dist(rng)) / 100));
    }
    lrT.data = {double(float(lr))};
    stepT.data = {step};
    KernelBuffer vec{DType::F32, {n}}, scalar{DType::F32, {}};
    ElementwiseKernel k;
    ASSERT_EQ(makeElementwiseKernel(OpKind::AdamUpdate, attrs, {vec, vec, vec, vec, scalar, scalar}, vec, k,
                                    {vec, vec}),
              "");
    k.name = decoupled ? "adamw" : "adam";
    renderElementwiseKernel(k, cpuLanguage(), os);
    std::array<Tensor, 3> want = {Tensor({n}, DType::F32), Tensor({n}, DType::F32), Tensor({n}, DType::F32)};
    evalFormula(*formulaOf(OpKind::AdamUpdate), attrs, {&p, &g, &m, &v, &lrT, &stepT}, want);
    // torch.optim.Adam / AdamW, written out.
    for (int64_t i = 0; i < n; ++i) {
      double pi = p.data[size_t(i)], gi = g.data[size_t(i)];
      if (decoupled) pi *= 1 - double(float(lr)) * wd;
      else gi += wd * pi;
      double mi = m.data[size_t(i)] + (gi - m.data[size_t(i)]) * (1 - b1);
      double vi = v.data[size_t(i)] * b2 + (1 - b2) * gi * gi;
      double stepSize = double(float(lr)) / (1 - std::pow(b1, step));
      double torch = pi - stepSize * mi / (std::sqrt(vi) / std::sqrt(1 - std::pow(b2, step)) + eps);
      ASSERT_NEAR(want[0].data[size_t(i)], torch, 1e-12);
      ASSERT_NEAR(want[1].data[size_t(i)], mi, 1e-15);
      ASSERT_NEAR(want[2].data[size_t(i)], vi, 1e-15);
    }
    expected.push_back(want);
    const std::string prefix = dir.path + "/" + k.name;
    planc::testing::writeTensor(prefix + ".p", p);
    planc::testing::writeTensor(prefix + ".g", g);
    planc::testing::writeTensor(prefix + ".m", m);
    planc::testing::writeTensor(prefix + ".v", v);
    planc::testing::writeTensor(prefix + ".lr", lrT);
    planc::testing::writeTensor(prefix + ".step", stepT);
  }
  os << "int main(int, char **argv) {\n  std::string dir = argv[1];\n";
  for (const char *name : {"adam", "adamw"}) {
    std::string f = std::string("dir + \"/") + name;
    os << "  {\n    std::vector<char> p = readFile(" << f << ".p\"), g = readFile(" << f << ".g\"), m = readFile(" << f
       << ".m\"), v = readFile(" << f << ".v\"), lr = readFile(" << f << ".lr\"), step = readFile(" << f
       << ".step\");\n"
       << "    " << name << "(p.data(), g.data(), m.data(), v.data(), lr.data(), step.data(), p.data(), m.data(), "
       << "v.data()); // in place, as the plan places an update\n"
       << "    writeFile(" << f << ".p2\", p);\n    writeFile(" << f << ".m2\", m);\n    writeFile(" << f
       << ".v2\", v);\n  }\n";
  }
  os << "  return 0;\n}\n";
  os.flush();
  ASSERT_TRUE(planc::testing::compileAndRun(source, dir.path));
  const char *names[] = {"adam", "adamw"};
  for (size_t c = 0; c < 2; ++c)
    for (size_t r = 0; r < 3; ++r) {
      const char *suffix[] = {".p2", ".m2", ".v2"};
      Tensor got = planc::testing::readTensor(dir.path + "/" + names[c] + suffix[r], expected[c][r]);
      ASSERT_EQ(got.data.size(), size_t(n));
      for (size_t i = 0; i < got.data.size(); ++i) {
        double w = expected[c][r].data[i];
        ASSERT_NEAR(got.data[i], w, 8 * 0x1p-23 * std::max(std::fabs(w), 1.0)) << names[c] << suffix[r] << " " << i;
      }
    }
}

} // namespace
