//===- tests/unit/backend/CFamilyTest.cpp - formulas rendered, compiled, compared -===//
//
// The elementwise kernel descriptions (ir/ops/Formula.h) are the
// interpreter's reference kernels and the code generators' input: here each
// is rendered for the CPU (backend/c/CFamily.h), compiled by the system C++
// compiler, run on random inputs and compared with the interpreter's kernel
// on the same inputs -- f32 within a few ulps, bf16 and f16 within one unit
// of their last place (the generated code computes in f32 and rounds once
// more than the interpreter, which rounds from f64).
//
//===----------------------------------------------------------------------===//

#include "backend/c/CFamily.h"
#include "backend/c/RankPlace.h"
#include "backend/interp/TensorAdapters.h"
#include "ir/OpDef.h"
#include "ir/ops/Formula.h"
#include "runtime/ElementBits.h"

#include "CompiledProgram.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

using namespace planc;
using namespace planc::backend;
using namespace planc::ir;

namespace {

TEST(FormulaTest, EveryElementwiseArithmeticOpHasOne) {
  // Elementwise ops a formula does not say: a cast's rounding, dropout's
  // mask, select's boolean, the loss-scaling and finiteness checks.
  for (unsigned k = 0; k < unsigned(OpKind::NumOps); ++k) {
    OpKind kind = OpKind(k);
    if (!opDef(kind).has(kElementwise)) continue;
    bool exempt = kind == OpKind::Cast || kind == OpKind::Dropout || kind == OpKind::Select ||
                  kind == OpKind::FusedElementwise; // its formula is its attribute
    if (!exempt) {
      EXPECT_NE(formulaOf(kind), nullptr) << spelling(kind);
    }
  }
  for (OpKind kind : {OpKind::GeluGrad, OpKind::SiluGrad, OpKind::SigmoidGrad, OpKind::TanhGrad, OpKind::ReluGrad})
    EXPECT_NE(formulaOf(kind), nullptr) << spelling(kind);
  EXPECT_EQ(formulaOf(OpKind::MatMul), nullptr);
}

TEST(FormulaTest, ValuesAreTheClosedForms) {
  const double k = std::sqrt(2.0 / M_PI);
  for (double x : {-3.5, -1.0, -0.25, 0.0, 0.5, 2.0, 40.0, -40.0}) {
    double gelu = 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
    EXPECT_DOUBLE_EQ(evalFormulaAt(*formulaOf(OpKind::Gelu), {}, {x}), gelu) << x;
    double s = 1.0 / (1.0 + std::exp(-x));
    EXPECT_NEAR(evalFormulaAt(*formulaOf(OpKind::Sigmoid), {}, {x}), s, 1e-15) << x;
    EXPECT_NEAR(evalFormulaAt(*formulaOf(OpKind::SiluGrad), {}, {x, 2.0}), 2.0 * s * (1 + x * (1 - s)), 1e-14) << x;
    EXPECT_EQ(evalFormulaAt(*formulaOf(OpKind::Relu), {}, {x}), x < 0 ? 0.0 : x);
    EXPECT_EQ(evalFormulaAt(*formulaOf(OpKind::ReluGrad), {}, {x, 3.0}), x > 0 ? 3.0 : 0.0);
  }
  EXPECT_TRUE(std::isnan(evalFormulaAt(*formulaOf(OpKind::Relu), {}, {NAN})));
  // Attributes are read by name, in Formula::attrs() order.
  const Formula &scale = *formulaOf(OpKind::Scale);
  ASSERT_EQ(scale.attrs().size(), 1u);
  EXPECT_EQ(evalFormulaAt(scale, attrValues(scale, {{"factor", 0.25}}), {8.0}), 2.0);
  EXPECT_EQ(evalFormulaAt(scale, attrValues(scale, {{"factor", int64_t(3)}}), {2.0}), 6.0);
}

TEST(FormulaTest, EvaluatesBroadcastOperands) {
  Tensor a({3, 1}, DType::F64), b({4}, DType::F64), out({3, 4}, DType::F64);
  for (size_t i = 0; i < 3; ++i) a.data[i] = double(i + 1);
  for (size_t j = 0; j < 4; ++j) b.data[j] = 10.0 * double(j);
  evalFormula(*formulaOf(OpKind::Sub), {}, {&a, &b}, out);
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 4; ++j) EXPECT_EQ(out.data[i * 4 + j], double(i + 1) - 10.0 * double(j));
}

TEST(CFamilyTest, LiteralsAreExact) {
  for (double v : {0.1, -2.5, 1e-300, 3.0e38, 0.044715, std::sqrt(2.0 / M_PI)}) {
    EXPECT_EQ(std::strtod(floatLiteral(v, true).c_str(), nullptr), v);
    std::string f = floatLiteral(v, false);
    ASSERT_EQ(f.back(), 'f');
    EXPECT_EQ(float(std::strtod(f.substr(0, f.size() - 1).c_str(), nullptr)), float(v));
  }
  EXPECT_EQ(floatLiteral(INFINITY, false), "INFINITY");
  EXPECT_EQ(floatLiteral(-INFINITY, true), "-(double)INFINITY");
}

TEST(CFamilyTest, IdentifiersAndCommentsAreSafe) {
  std::vector<std::string> hostile = {"blocks.0.attn", "a\"b", "a\\b", "*/ int x; /*", "?\?/", "line\nbreak",
                                      "$(rm -rf /)", "na\xc3\xafve", "", "0lead", "a_x2E", "a.", "a_"};
  std::set<std::string> seen;
  for (const std::string &s : hostile) {
    std::string id = cIdentifier(s);
    ASSERT_FALSE(id.empty());
    EXPECT_FALSE(id[0] >= '0' && id[0] <= '9') << id;
    for (char c : id) EXPECT_TRUE(std::isalnum((unsigned char)c) || c == '_') << id;
    EXPECT_TRUE(seen.insert(id).second) << "two names give " << id;
    std::string comment = cComment(s);
    EXPECT_EQ(comment.find("*/"), std::string::npos) << comment;
    EXPECT_EQ(comment.find("/*"), std::string::npos) << comment;
    EXPECT_EQ(comment.find("??"), std::string::npos) << comment;
    for (char c : comment) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << comment;
    EXPECT_TRUE(comment.empty() || comment.back() != '\\' || comment.size() >= 2) << comment;
  }
}

/// One kernel of the compiled test program with its inputs.
struct Case {
  ElementwiseKernel kernel;
  std::vector<Tensor> inputs; // f64 values, already rounded to their dtypes
  Tensor initial;             // the output's bytes before (accumulate)
};

size_t numel(const Shape &s) {
  size_t n = 1;
  for (int64_t d : s) n *= size_t(d);
  return n;
}

std::vector<char> bytesOf(const Tensor &t) {
  runtime::ElementType e = interp::toElementType(t.dtype);
  std::vector<char> bytes(t.data.size() * runtime::byteSize(e));
  runtime::encodeBuffer(e, t.data.data(), t.data.size(), bytes.data());
  return bytes;
}

class CompiledKernels : public ::testing::Test {
protected:
  void add(OpKind kind, std::vector<KernelBuffer> in, KernelBuffer out, AttrMap attrs = {}, bool accumulate = false) {
    Case c;
    std::string why = makeElementwiseKernel(kind, attrs, in, out, c.kernel);
    ASSERT_EQ(why, "") << spelling(kind);
    c.kernel.name = "k" + std::to_string(cases.size()) + "_" + cIdentifier(spelling(kind));
    c.kernel.accumulate = accumulate;
    c.kernel.comment = "test of " + std::string(spelling(kind));
    // Positive operands where the function wants them.
    bool positive = kind == OpKind::Log || kind == OpKind::Sqrt || kind == OpKind::Rsqrt || kind == OpKind::Pow;
    std::uniform_real_distribution<double> dist(positive ? 0.1 : -3.0, 3.0);
    for (const KernelBuffer &b : in) {
      Tensor t(b.shape, b.dtype);
      for (double &x : t.data) x = runtime::roundToElement(interp::toElementType(b.dtype), dist(rng));
      c.inputs.push_back(std::move(t));
    }
    c.initial = Tensor(out.shape, out.dtype);
    for (double &x : c.initial.data) x = accumulate ? runtime::roundToElement(interp::toElementType(out.dtype), dist(rng)) : 0;
    cases.push_back(std::move(c));
  }

  /// Renders every case into one program, compiles it, runs it in `dir`.
  void compileAndRun(const std::string &dir) {
    std::ofstream src(dir + "/kernels.cpp");
    std::string text;
    llvm::raw_string_ostream os(text);
    renderPrelude(cpuLanguage(), os);
    for (const Case &c : cases) renderElementwiseKernel(c.kernel, cpuLanguage(), os);
    os << "#include <fstream>\n#include <iterator>\n#include <string>\n#include <vector>\n";
    os << "static std::vector<char> readFile(const std::string &p) {\n"
          "  std::ifstream f(p, std::ios::binary);\n"
          "  return std::vector<char>(std::istreambuf_iterator<char>(f), {});\n}\n";
    os << "int main(int argc, char **argv) {\n  std::string dir = argv[1];\n";
    for (size_t k = 0; k < cases.size(); ++k) {
      const Case &c = cases[k];
      os << "  {\n";
      for (size_t j = 0; j < c.inputs.size(); ++j)
        os << "    std::vector<char> in" << j << " = readFile(dir + \"/" << k << ".in" << j << "\");\n";
      os << "    std::vector<char> out = readFile(dir + \"/" << k << ".init\");\n";
      os << "    " << c.kernel.name << "(";
      for (size_t j = 0; j < c.inputs.size(); ++j) os << "in" << j << ".data(), ";
      os << "out.data());\n";
      os << "    std::ofstream(dir + \"/" << k << ".out\", std::ios::binary).write(out.data(), long(out.size()));\n";
      os << "  }\n";
    }
    os << "  return 0;\n}\n";
    os.flush();
    src << text;
    src.close();
    source = text;
    for (size_t k = 0; k < cases.size(); ++k) {
      for (size_t j = 0; j < cases[k].inputs.size(); ++j) {
        std::vector<char> b = bytesOf(cases[k].inputs[j]);
        std::ofstream(dir + "/" + std::to_string(k) + ".in" + std::to_string(j), std::ios::binary)
            .write(b.data(), long(b.size()));
      }
      std::vector<char> b = bytesOf(cases[k].initial);
      std::ofstream(dir + "/" + std::to_string(k) + ".init", std::ios::binary).write(b.data(), long(b.size()));
    }
    auto cxx = llvm::sys::findProgramByName(PLANC_TEST_CXX);
    ASSERT_TRUE(bool(cxx)) << "no C++ compiler '" << PLANC_TEST_CXX << "'";
    std::string exe = dir + "/kernels";
    std::string err;
    int rc = llvm::sys::ExecuteAndWait(*cxx, {*cxx, "-std=c++17", "-O2", "-fopenmp", "-Wall", "-Werror", "-Wno-pass-failed",
                                              planc::testing::sourceInclude(), "-o", exe,
                                              dir + "/kernels.cpp"},
                                       llvm::None, {}, 0, 0, &err);
    ASSERT_EQ(rc, 0) << "the rendered kernels do not compile: " << err << "\n" << source;
    rc = llvm::sys::ExecuteAndWait(exe, {exe, dir}, llvm::None, {}, 0, 0, &err);
    ASSERT_EQ(rc, 0) << err;
  }

  void compare(const std::string &dir) {
    for (size_t k = 0; k < cases.size(); ++k) {
      const Case &c = cases[k];
      const KernelBuffer &out = c.kernel.output;
      runtime::ElementType e = interp::toElementType(out.dtype);
      std::ifstream f(dir + "/" + std::to_string(k) + ".out", std::ios::binary);
      std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
      ASSERT_EQ(bytes.size(), numel(out.shape) * runtime::byteSize(e)) << c.kernel.name;
      std::vector<double> got(numel(out.shape));
      runtime::decodeBuffer(e, bytes.data(), got.size(), got.data());
      Tensor want(out.shape, out.dtype);
      std::vector<const Tensor *> in;
      for (const Tensor &t : c.inputs) in.push_back(&t);
      AttrMap attrs;
      std::vector<const char *> names = c.kernel.formula->attrs();
      for (size_t a = 0; a < names.size(); ++a) attrs[names[a]] = c.kernel.attrValues[a];
      evalFormula(*c.kernel.formula, attrs, in, want);
      // The unit in the last place of the result's type, relative.
      double ulp = out.dtype == DType::F64 ? 0x1p-52 : out.dtype == DType::F32 ? 0x1p-23
                   : out.dtype == DType::BF16 ? 0x1p-7 : 0x1p-10;
      double places = out.dtype == DType::F32 ? 8 : out.dtype == DType::F64 ? 64 : 1;
      for (size_t i = 0; i < got.size(); ++i) {
        double w = want.data[i] + (c.kernel.accumulate ? c.initial.data[i] : 0.0);
        w = runtime::roundToElement(e, w);
        double tol = places * ulp * std::max(std::fabs(w), 1.0) + (out.dtype == DType::F32 ? 1e-6 : 0.0);
        ASSERT_NEAR(got[i], w, tol) << c.kernel.name << " element " << i;
      }
    }
  }

  std::mt19937_64 rng{20261203};
  std::vector<Case> cases;
  std::string source;
};

TEST_F(CompiledKernels, EqualTheInterpreter) {
  const Shape s = {3, 4, 5};
  KernelBuffer f32{DType::F32, s};
  for (unsigned k = 0; k < unsigned(OpKind::NumOps); ++k) {
    const Formula *f = formulaOf(OpKind(k));
    if (!f || f->results.size() != 1) continue; // several results: AdamTest
    AttrMap attrs = {{"exponent", 1.5}, {"factor", -0.75}, {"value", 2.0}};
    add(OpKind(k), std::vector<KernelBuffer>(f->inputs, f32), f32, attrs);
  }
  // Broadcasting: a column and a row against the whole block.
  add(OpKind::Add, {{DType::F32, {3, 1, 5}}, {DType::F32, {4, 5}}}, f32);
  add(OpKind::Mul, {{DType::F32, {5}}, f32}, f32);
  add(OpKind::Div, {f32, {DType::F32, {}}}, f32);
  // A fused chain (what fuse-elementwise makes): gelu(x + bias) * y, its
  // formula composed, written as the op's attribute and read back.
  {
    FormulaBuilder b;
    int x = b.input(0), bias = b.input(1), y = b.input(2);
    int sum = inlineFormula(b, *formulaOf(OpKind::Add), {}, {x, bias});
    int act = inlineFormula(b, *formulaOf(OpKind::Gelu), {}, {sum});
    int prod = inlineFormula(b, *formulaOf(OpKind::Scale), {0.5}, {inlineFormula(b, *formulaOf(OpKind::Mul), {}, {act, y})});
    AttrMap fused = {{"formula", formulaText(b.done(prod))}, {"ops", std::string("add,gelu,mul,scale")},
                     {"dtype", std::string("f32")}};
    add(OpKind::FusedElementwise, {f32, {DType::F32, {5}}, f32}, f32, fused);
    KernelBuffer h{DType::BF16, s};
    fused["dtype"] = std::string("bf16");
    add(OpKind::FusedElementwise, {h, {DType::BF16, {5}}, h}, h, fused);
  }
  // Accumulating into the output, and the 16-bit and f64 dtypes.
  add(OpKind::Add, {f32, f32}, f32, {}, /*accumulate=*/true);
  for (DType t : {DType::BF16, DType::F16, DType::F64}) {
    KernelBuffer b{t, s};
    add(OpKind::Gelu, {b}, b);
    add(OpKind::Mul, {b, {t, {5}}}, b);
    add(OpKind::SiluGrad, {b, b}, b);
  }
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("planc-kernels", dir));
  compileAndRun(std::string(dir));
  compare(std::string(dir));
  llvm::sys::fs::remove_directories(dir);
}

/// Compiles and runs `main` after the CPU prelude; returns its stdout.
std::string runWithPrelude(const std::string &body) {
  llvm::SmallString<128> dir;
  EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("planc-prelude", dir));
  std::string text;
  llvm::raw_string_ostream os(text);
  renderPrelude(cpuLanguage(), os);
  os << "#include <cstdio>\n" << body;
  os.flush();
  std::string src = std::string(dir) + "/p.cpp", exe = std::string(dir) + "/p", out = std::string(dir) + "/out";
  std::ofstream(src) << text;
  auto cxx = llvm::sys::findProgramByName(PLANC_TEST_CXX);
  EXPECT_TRUE(bool(cxx));
  if (!cxx) return "";
  std::string err;
  EXPECT_EQ(llvm::sys::ExecuteAndWait(*cxx, {*cxx, "-std=c++17", "-O2", "-Wall", "-Werror",
                                            planc::testing::sourceInclude(), "-o", exe, src},
                                      llvm::None, {}, 0, 0, &err),
            0)
      << err << text;
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::None, llvm::StringRef(out), llvm::None};
  EXPECT_EQ(llvm::sys::ExecuteAndWait(exe, {exe}, llvm::None, redirects, 0, 0, &err), 0) << err;
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  llvm::sys::fs::remove_directories(dir);
  return ss.str();
}

TEST(CFamilyTest, SixteenBitConversionsRoundToNearestEven) {
  // Floats exactly representable, so f32 -> 16 bits and the runtime's
  // f64 -> 16 bits must give the same bits: ties, subnormals, overflow, NaN.
  std::vector<float> values = {0.0f, -0.0f, 1.0f, 1.00390625f, 1.01171875f, 1.0009765625f, 1.0029296875f, 1.00048828125f, 1.00146484375f, 2049.0f, 2051.0f,
                               65504.0f, 65519.0f, 65520.0f, 1e6f, 3.3895314e38f, 3.39e38f, 5.9604645e-8f,
                               2.9802322e-8f, 8.940697e-8f, 6.1035156e-5f, 6.0975552e-5f, -2.5f, 1e-45f,
                               INFINITY, -INFINITY};
  std::string body = "int main() {\n  const float v[] = {";
  for (float v : values) body += floatLiteral(v, false) + ", ";
  body += "};\n  for (float x : v) std::printf(\"%u %u %a %a\\n\", unsigned(planc_f32_to_bf16(x)), "
          "unsigned(planc_f32_to_f16(x)), double(planc_bf16_to_f32(planc_f32_to_bf16(x))), "
          "double(planc_f16_to_f32(planc_f32_to_f16(x))));\n"
          "  std::printf(\"%u %u\\n\", unsigned(planc_f32_to_bf16(NAN) & 0x7fc0u), unsigned(planc_f32_to_f16(NAN) & 0x7e00u));\n"
          "  return 0;\n}\n";
  std::istringstream lines(runWithPrelude(body));
  for (float v : values) {
    unsigned bf, h;
    std::string bfBack, hBack;
    ASSERT_TRUE(bool(lines >> bf >> h >> bfBack >> hBack)) << v;
    EXPECT_EQ(uint64_t(bf), runtime::encodeElement(runtime::ElementType::BF16, v)) << v;
    EXPECT_EQ(uint64_t(h), runtime::encodeElement(runtime::ElementType::F16, v)) << v;
    EXPECT_EQ(std::strtod(bfBack.c_str(), nullptr), runtime::decodeElement(runtime::ElementType::BF16, bf)) << v;
    EXPECT_EQ(std::strtod(hBack.c_str(), nullptr), runtime::decodeElement(runtime::ElementType::F16, h)) << v;
  }
  unsigned bfNan, hNan;
  ASSERT_TRUE(bool(lines >> bfNan >> hNan));
  EXPECT_EQ(bfNan, 0x7fc0u);
  EXPECT_EQ(hNan, 0x7e00u);
}

TEST(CFamilyTest, RendersTheCudaFlavourFromTheSameDescription) {
  ElementwiseKernel k;
  ASSERT_EQ(makeElementwiseKernel(OpKind::Gelu, {}, {{DType::BF16, {8, 16}}}, {DType::BF16, {8, 16}}, k), "");
  k.name = "k0_gelu";
  std::string cpu, cuda;
  llvm::raw_string_ostream c(cpu), g(cuda);
  renderElementwiseKernel(k, cpuLanguage(), c);
  renderElementwiseKernel(k, cudaLanguage(), g);
  EXPECT_NE(cpu.find("[[maybe_unused]] static void k0_gelu(const void *in0_, void *out_)"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("#pragma omp parallel for simd"), std::string::npos) << cpu;
  EXPECT_NE(cuda.find("__global__ void k0_gelu(const void *in0_, void *out_)"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("if (i >= n) return;"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("planc_f32_to_bf16("), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("// bf16[8, 16]"), std::string::npos) << cuda;
  // The arithmetic is the same text in both.
  size_t at = cpu.find("const float t0"), atG = cuda.find("const float t0");
  ASSERT_NE(at, std::string::npos);
  ASSERT_NE(atG, std::string::npos);
  EXPECT_EQ(cpu.substr(cpu.find("tanhf"), 20), cuda.substr(cuda.find("tanhf"), 20));
  std::string prelude;
  llvm::raw_string_ostream p(prelude);
  renderPrelude(cudaLanguage(), p);
  EXPECT_NE(prelude.find("[[maybe_unused]] static __host__ __device__ inline float planc_bf16_to_f32"), std::string::npos);
  // A kernel the renderer cannot make says why.
  EXPECT_EQ(makeElementwiseKernel(OpKind::MatMul, {}, {}, {}, k), "no formula");
  EXPECT_EQ(makeElementwiseKernel(OpKind::Neg, {}, {{DType::I32, {4}}}, {DType::I32, {4}}, k),
            "dtype i32 has no generated stores yet");
  EXPECT_EQ(makeElementwiseKernel(OpKind::Neg, {}, {{DType::F8E4M3, {4}}}, {DType::F32, {4}}, k),
            "dtype fp8_e4m3 has no generated loads yet");
  EXPECT_EQ(makeElementwiseKernel(OpKind::AdamUpdate, {}, std::vector<KernelBuffer>(6, {DType::F32, {4}}),
                                  {DType::F32, {4}}, k),
            "gives 3 results");
}

// The renderers read the language's data and never ask which language it
// is: a language of other spellings (a HIP-like one) comes out in them.
TEST(CFamilyTest, RendersWhateverTheLanguageSpells) {
  CLanguage other = cudaLanguage();
  other.name = "OTHER";
  other.kernelQualifier = "extern \"C\" __global__ ";
  other.helperQualifier = "static __device__ inline";
  other.threadIndex = "int64_t(hipBlockIdx_x) * hipBlockDim_x + hipThreadIdx_x";
  ElementwiseKernel k;
  ASSERT_EQ(makeElementwiseKernel(OpKind::Relu, {}, {{DType::F32, {64}}}, {DType::F32, {64}}, k), "");
  k.name = "k1_relu";
  std::string text;
  llvm::raw_string_ostream os(text);
  renderPrelude(other, os);
  renderElementwiseKernel(k, other, os);
  renderMeshCoordPrelude(other, os);
  os.flush();
  EXPECT_NE(text.find("static __device__ inline float planc_bf16_to_f32"), std::string::npos) << text;
  EXPECT_NE(text.find("extern \"C\" __global__ void k1_relu(const void *in0_, void *out_)"), std::string::npos) << text;
  EXPECT_NE(text.find("const int64_t i = int64_t(hipBlockIdx_x) * hipBlockDim_x + hipThreadIdx_x;"), std::string::npos)
      << text;
  EXPECT_NE(text.find("__constant__ int64_t planc_mesh_coord[5]"), std::string::npos) << text;
  EXPECT_EQ(text.find("blockIdx.x"), std::string::npos) << "CUDA's own spelling leaked: " << text;
  EXPECT_EQ(text.find("#pragma omp"), std::string::npos) << text;
  // The CPU's: a loop of the host's threads, the library and the GEMM there.
  EXPECT_TRUE(cpuLanguage().loops());
  EXPECT_FALSE(cudaLanguage().loops());
  EXPECT_EQ(cpuLanguage().noLibrary, nullptr);
  EXPECT_NE(cudaLanguage().noGemm, nullptr);
}

} // namespace
