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

std::vector<char> bytesOf(const Tensor &t) {
  runtime::ElementType e = interp::toElementType(t.dtype);
  std::vector<char> bytes(t.data.size() * runtime::byteSize(e));
  runtime::encodeBuffer(e, t.data.data(), t.data.size(), bytes.data());
  return bytes;
}

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
  add({2, 1, 5, 7}, {3, 7, 4}, false, false, DType::F32, false); // both broadcast: [2, 3, 5, 4]
  add({4, 6}, {6, 8}, false, false, DType::F32, true);
  add({3, 4, 6}, {3, 8, 6}, false, true, DType::F64, true);

  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("planc-gemm", dir));
  const std::string d(dir);
  std::string text;
  llvm::raw_string_ostream os(text);
  renderGemmPrelude(os);
  os << "#include <cstdint>\n#include <fstream>\n#include <iterator>\n#include <string>\n#include <vector>\n";
  for (const GemmCase &g : cases) renderGemmKernel(g.kernel, os);
  os << "static std::vector<char> readFile(const std::string &p) {\n"
        "  std::ifstream f(p, std::ios::binary);\n"
        "  return std::vector<char>(std::istreambuf_iterator<char>(f), {});\n}\n"
        "int main(int, char **argv) {\n  std::string dir = argv[1];\n";
  for (size_t k = 0; k < cases.size(); ++k) {
    std::string p = "dir + \"/" + std::to_string(k);
    os << "  {\n    std::vector<char> a = readFile(" << p << ".a\"), b = readFile(" << p << ".b\"), c = readFile(" << p
       << ".c\");\n    " << cases[k].kernel.name << "(a.data(), b.data(), c.data());\n"
       << "    std::ofstream(" << p << ".out\", std::ios::binary).write(c.data(), long(c.size()));\n  }\n";
    for (auto [suffix, t] : {std::pair<const char *, const Tensor *>{".a", &cases[k].a}, {".b", &cases[k].b},
                             {".c", &cases[k].c0}}) {
      std::vector<char> bytes = bytesOf(*t);
      std::ofstream(d + "/" + std::to_string(k) + suffix, std::ios::binary).write(bytes.data(), long(bytes.size()));
    }
  }
  os << "  return 0;\n}\n";
  os.flush();
  std::ofstream(d + "/gemm.cpp") << text;

  auto cxx = llvm::sys::findProgramByName(PLANC_TEST_CXX);
  ASSERT_TRUE(bool(cxx));
  std::string err, exe = d + "/gemm";
  ASSERT_EQ(llvm::sys::ExecuteAndWait(*cxx, {*cxx, "-std=c++17", "-O2", "-Wall", "-Werror", "-o", exe, d + "/gemm.cpp",
                                             "-lopenblas"},
                                      llvm::None, {}, 0, 0, &err),
            0)
      << err << "\n" << text;
  ASSERT_EQ(llvm::sys::ExecuteAndWait(exe, {exe, d}, llvm::None, {}, 0, 0, &err), 0) << err;

  for (size_t k = 0; k < cases.size(); ++k) {
    const GemmCase &g = cases[k];
    runtime::ElementType e = interp::toElementType(g.want.dtype);
    std::ifstream f(d + "/" + std::to_string(k) + ".out", std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
    ASSERT_EQ(bytes.size(), g.want.data.size() * runtime::byteSize(e)) << g.kernel.name;
    std::vector<double> got(g.want.data.size());
    runtime::decodeBuffer(e, bytes.data(), got.size(), got.data());
    const double tol = g.want.dtype == DType::F64 ? 1e-13 : 1e-5 * double(g.kernel.k);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], g.want.data[i] + g.c0.data[i], tol) << g.kernel.name << " element " << i;
  }
  llvm::sys::fs::remove_directories(dir);
}

TEST(GemmTest, SaysWhyAMatmulHasNoLibraryCall) {
  GemmKernel g;
  EXPECT_EQ(makeGemmKernel({}, {DType::BF16, {2, 2}}, {DType::BF16, {2, 2}}, {DType::BF16, {2, 2}}, g),
            "dtype bf16 has no BLAS GEMM (f32 and f64 only)");
  EXPECT_EQ(makeGemmKernel({}, {DType::F32, {2, 3}}, {DType::F32, {3, 2}}, {DType::F32, {2, 3}}, g),
            "a result of another shape than m x n");
}

} // namespace
