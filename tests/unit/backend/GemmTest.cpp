//===- tests/unit/backend/GemmTest.cpp - matmul as cblas calls, compiled, compared -===//
//
// The GEMM kernel description (backend/c/Gemm.h) rendered for the CPU,
// compiled with OpenBLAS, run on random matrices and compared with the
// interpreter's matmul: transposes, broadcast batch dims, accumulation, f32
// (relative 1e-5 of the row's magnitude) and f64.
//
//===----------------------------------------------------------------------===//

#include "backend/c/Gemm.h"
#include "backend/interp/TensorAdapters.h"
#include "runtime/ElementBits.h"

#include "CompiledProgram.h"
#include "OpTestHelpers.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

using namespace planc;
using namespace planc::backend;
using namespace planc::ir;

namespace {

struct GemmCase {
  GemmKernel kernel;
  Tensor a, b, c0; // c0: C before (accumulate)
  Tensor want;
};

TEST(GemmTest, CompiledCallsEqualTheInterpretersMatmul) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<GemmCase> cases;
  auto add = [&](Shape as, Shape bs, bool ta, bool tb, DType t, bool accumulate) {
    ir::testing::OpModule om;
    Tensor a(as, t), b(bs, t);
    for (double &x : a.data) x = runtime::roundToElement(interp::toElementType(t), dist(rng));
    for (double &x : b.data) x = runtime::roundToElement(interp::toElementType(t), dist(rng));
    Value *va = om.input("a", a), *vb = om.input("b", b);
    Value *vc = om.b.matmul(va, vb, ta, tb);
    GemmCase g;
    g.want = om.run(vc);
    g.a = a;
    g.b = b;
    g.c0 = Tensor(g.want.shape, t);
    if (accumulate)
      for (double &x : g.c0.data) x = runtime::roundToElement(interp::toElementType(t), dist(rng));
    AttrMap attrs = {{"transpose_a", ta}, {"transpose_b", tb}};
    ASSERT_EQ(makeGemmKernel(attrs, {t, as}, {t, bs}, {t, g.want.shape}, g.kernel), "");
    g.kernel.accumulate = accumulate;
    g.kernel.name = "g" + std::to_string(cases.size());
    cases.push_back(std::move(g));
  };
  add({5, 7}, {7, 3}, false, false, DType::F32, false);
  add({7, 5}, {7, 3}, true, false, DType::F32, false);
  add({5, 7}, {3, 7}, false, true, DType::F32, false);
  add({7, 5}, {3, 7}, true, true, DType::F32, false);
  add({2, 5, 7}, {7, 3}, false, false, DType::F32, false);    // B shared by the batch
  add({3, 2, 5, 7}, {4, 7}, false, true, DType::F32, true); // folded into one GEMM of 30 rows, B^T, accumulating
  add({2, 1, 5, 7}, {3, 7, 4}, false, false, DType::F32, false); // both broadcast: [2, 3, 5, 4]
  add({4, 6}, {6, 8}, false, false, DType::F32, true);
  add({3, 4, 6}, {3, 8, 6}, false, true, DType::F64, true);
  // 16-bit floats: f32 copies, one f32 GEMM, the result rounded once.
  add({2, 5, 7}, {7, 3}, false, false, DType::BF16, false);
  add({7, 5}, {3, 7}, true, true, DType::F16, false);
  add({4, 6}, {6, 8}, false, false, DType::BF16, true);

  planc::testing::ScratchDir dir;
  const std::string &d = dir.path;
  std::string text;
  llvm::raw_string_ostream os(text);
  renderPrelude(cpuLanguage(), os); // the 16-bit conversions
  renderGemmPrelude(os);
  os << "#include <cstdint>\n" << planc::testing::kReadFileHelper;
  for (const GemmCase &g : cases) renderGemmKernel(g.kernel, os);
  os << "int main(int, char **argv) {\n  std::string dir = argv[1];\n";
  for (size_t k = 0; k < cases.size(); ++k) {
    std::string p = "dir + \"/" + std::to_string(k);
    os << "  {\n    std::vector<char> a = readFile(" << p << ".a\"), b = readFile(" << p << ".b\"), c = readFile(" << p
       << ".c\");\n    " << cases[k].kernel.name << "(a.data(), b.data(), c.data());\n    writeFile(" << p
       << ".out\", c);\n  }\n";
    planc::testing::writeTensor(d + "/" + std::to_string(k) + ".a", cases[k].a);
    planc::testing::writeTensor(d + "/" + std::to_string(k) + ".b", cases[k].b);
    planc::testing::writeTensor(d + "/" + std::to_string(k) + ".c", cases[k].c0);
  }
  os << "  return 0;\n}\n";
  os.flush();
  ASSERT_TRUE(planc::testing::compileAndRun(text, d, {"-lopenblas"}));
  for (size_t k = 0; k < cases.size(); ++k) {
    const GemmCase &g = cases[k];
    Tensor got = planc::testing::readTensor(d + "/" + std::to_string(k) + ".out", g.want);
    ASSERT_EQ(got.data.size(), g.want.data.size()) << g.kernel.name;
    const double tol = g.want.dtype == DType::F64 ? 1e-13 : 1e-5 * double(g.kernel.k);
    // A 16-bit result is rounded (twice when it accumulates): a unit in
    // its last place either way.
    const double ulp = g.want.dtype == DType::BF16 ? 0x1p-8 : g.want.dtype == DType::F16 ? 0x1p-11 : 0.0;
    for (size_t i = 0; i < got.data.size(); ++i) {
      const double want = g.want.data[i] + g.c0.data[i];
      ASSERT_NEAR(got.data[i], want, tol + 2 * ulp * (std::fabs(want) + std::fabs(g.c0.data[i])))
          << g.kernel.name << " element " << i;
    }
  }
}

TEST(GemmTest, SaysWhyAMatmulHasNoLibraryCall) {
  GemmKernel g;
  EXPECT_EQ(makeGemmKernel({}, {DType::F8E4M3, {2, 2}}, {DType::F8E4M3, {2, 2}}, {DType::F8E4M3, {2, 2}}, g),
            "dtype fp8_e4m3 has no GEMM (f32, f64, bf16 and f16 only)");
  EXPECT_EQ(makeGemmKernel({}, {DType::F32, {2, 3}}, {DType::F32, {3, 2}}, {DType::F32, {2, 3}}, g),
            "a result of another shape than m x n");
}

} // namespace
