//===- tests/unit/backend/RowReductionTest.cpp - row kernels, compiled, compared -===//
//
// The row reductions (backend/c/RowReduction.h) rendered for the CPU,
// compiled, run on random inputs and compared with the interpreter's op:
// f32 within 2e-6 relative to the row's scale (stages accumulate in f64,
// elements are f32), bf16 within one unit in its last place.
//
//===----------------------------------------------------------------------===//

#include "backend/c/RowReduction.h"

#include "CompiledProgram.h"
#include "OpTestHelpers.h"

#include <cmath>
#include <random>

using namespace planc;
using namespace planc::backend;
using namespace planc::ir;

namespace {

struct RowCase {
  RowKernel kernel;
  std::vector<Tensor> inputs;
  Tensor want;
};

TEST(RowReductionTest, CompiledRowsEqualTheInterpreter) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  std::vector<RowCase> cases;
  auto add = [&](OpKind kind, std::vector<Shape> shapes, DType t, AttrMap attrs) {
    ir::testing::OpModule om;
    RowCase c;
    std::vector<Value *> operands;
    std::vector<KernelBuffer> buffers;
    for (size_t i = 0; i < shapes.size(); ++i) {
      Tensor x(shapes[i], t);
      for (double &v : x.data) v = runtime::roundToElement(interp::toElementType(t), dist(rng));
      if (kind == OpKind::SoftmaxGrad && i == 0) // y: a softmax's output, positive
        for (double &v : x.data) v = runtime::roundToElement(interp::toElementType(t), std::fabs(v) / 4);
      operands.push_back(om.input("x" + std::to_string(i), x));
      buffers.push_back({t, shapes[i]});
      c.inputs.push_back(x);
    }
    c.want = om.run(om.b.value(kind, operands, attrs));
    ASSERT_EQ(makeRowKernel(kind, attrs, buffers, {c.want.dtype, c.want.shape}, c.kernel), "") << spelling(kind);
    c.kernel.name = "r" + std::to_string(cases.size()) + "_" + cIdentifier(spelling(kind));
    cases.push_back(std::move(c));
  };
  for (DType t : {DType::F32, DType::BF16}) {
    add(OpKind::Softmax, {{3, 4, 7}}, t, {{"dim", int64_t(-1)}});
    add(OpKind::LogSoftmax, {{5, 9}}, t, {{"dim", int64_t(1)}});
    add(OpKind::SoftmaxGrad, {{4, 6}, {4, 6}}, t, {{"dim", int64_t(-1)}});
    add(OpKind::LayerNorm, {{5, 16}, {16}, {16}}, t, {{"eps", 1e-5}});
    add(OpKind::RmsNorm, {{2, 3, 8}, {8}}, t, {{"eps", 1e-6}});
    add(OpKind::ReduceSum, {{3, 5}}, t, {{"dims", std::vector<int64_t>{-1}}, {"keepdim", false}});
    add(OpKind::ReduceMean, {{2, 3, 4}}, t, {{"dims", std::vector<int64_t>{1, 2}}, {"keepdim", true}});
    add(OpKind::ReduceMax, {{6, 2}}, t, {{"dims", std::vector<int64_t>{1}}, {"keepdim", false}});
  }

  planc::testing::ScratchDir dir;
  std::string source;
  llvm::raw_string_ostream os(source);
  renderPrelude(cpuLanguage(), os);
  os << planc::testing::kReadFileHelper;
  for (const RowCase &c : cases) renderRowKernel(c.kernel, cpuLanguage(), os);
  os << "int main(int, char **argv) {\n  std::string dir = argv[1];\n";
  for (size_t k = 0; k < cases.size(); ++k) {
    const RowCase &c = cases[k];
    const std::string f = "dir + \"/" + std::to_string(k);
    os << "  {\n";
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      os << "    std::vector<char> in" << i << " = readFile(" << f << ".in" << i << "\");\n";
      planc::testing::writeTensor(dir.path + "/" + std::to_string(k) + ".in" + std::to_string(i), c.inputs[i]);
    }
    os << "    std::vector<char> out(" << c.want.data.size() * byteSize(c.want.dtype) << ");\n    " << c.kernel.name
       << "(";
    for (size_t i = 0; i < c.inputs.size(); ++i) os << "in" << i << ".data(), ";
    os << "out.data());\n    writeFile(" << f << ".out\", out);\n  }\n";
  }
  os << "  return 0;\n}\n";
  os.flush();
  ASSERT_TRUE(planc::testing::compileAndRun(source, dir.path));
  for (size_t k = 0; k < cases.size(); ++k) {
    const RowCase &c = cases[k];
    Tensor got = planc::testing::readTensor(dir.path + "/" + std::to_string(k) + ".out", c.want);
    ASSERT_EQ(got.data.size(), c.want.data.size()) << c.kernel.name;
    const double ulp = c.want.dtype == DType::BF16 ? 0x1p-7 : 2e-6;
    for (size_t i = 0; i < got.data.size(); ++i)
      ASSERT_NEAR(got.data[i], c.want.data[i], ulp * std::max(1.0, std::fabs(c.want.data[i])))
          << c.kernel.name << " element " << i;
  }
}

// A folded step (backend::RenderOptions::foldProducers): x = a + bias + b
// computed in the first pass of the layer norm or softmax after it and
// written to operand 0's buffer; both x and the result equal the
// interpreter's add, add and norm. The buffer of x holds NaN bytes before.
TEST(RowReductionTest, AFoldedStepIsComputedInTheFirstPassAndWritten) {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  const Shape rows{3, 5, 40}, row{40};
  auto random = [&](const Shape &shape) {
    Tensor t(shape, DType::F32);
    for (double &v : t.data) v = double(float(dist(rng)));
    return t;
  };
  Tensor a = random(rows), bias = random(row), b = random(rows), w = random(row), beta = random(row);
  FormulaBuilder fb; // (a + bias) + b, as fused_elementwise composes it
  Formula sum = fb.done(fb.add(fb.input(2), fb.add(fb.input(0), fb.input(1))));
  struct Folded {
    RowKernel kernel;
    Tensor x, want;
  };
  std::vector<Folded> cases;
  for (OpKind kind : {OpKind::LayerNorm, OpKind::Softmax}) {
    ir::testing::OpModule om;
    Value *va = om.input("a", a), *vbias = om.input("bias", bias), *vb = om.input("b", b);
    Value *x = om.b.value(OpKind::Add, {vb, om.b.value(OpKind::Add, {va, vbias}, {})}, {});
    std::vector<Value *> operands{x};
    std::vector<KernelBuffer> buffers{{DType::F32, rows}};
    AttrMap attrs{{"dim", int64_t(-1)}};
    if (kind == OpKind::LayerNorm) {
      operands.push_back(om.input("w", w));
      operands.push_back(om.input("beta", beta));
      buffers.push_back({DType::F32, row});
      buffers.push_back({DType::F32, row});
      attrs = {{"eps", 1e-5}};
    }
    Folded f;
    f.want = om.run(om.b.value(kind, operands, attrs));
    f.x = om.run(x);
    ASSERT_EQ(makeRowKernel(kind, attrs, buffers, {DType::F32, rows}, f.kernel), "");
    f.kernel.prologue = std::make_shared<Formula>(sum);
    f.kernel.prologueInputs = {{DType::F32, rows}, {DType::F32, row}, {DType::F32, rows}};
    f.kernel.name = "folded" + std::to_string(cases.size());
    cases.push_back(std::move(f));
  }
  planc::testing::ScratchDir dir;
  std::string source;
  llvm::raw_string_ostream os(source);
  renderPrelude(cpuLanguage(), os);
  os << planc::testing::kReadFileHelper;
  for (const Folded &f : cases) renderRowKernel(f.kernel, cpuLanguage(), os);
  os << "#include <cmath>\nint main(int, char **argv) {\n  std::string dir = argv[1];\n"
     << "  std::vector<char> a = readFile(dir + \"/a\"), bias = readFile(dir + \"/bias\"), b = readFile(dir + \"/b\");\n"
     << "  std::vector<char> w = readFile(dir + \"/w\"), beta = readFile(dir + \"/beta\");\n";
  for (size_t k = 0; k < cases.size(); ++k) {
    const std::string n = std::to_string(k);
    os << "  {\n    std::vector<char> x(a.size()), out(a.size());\n"
       << "    for (size_t i = 0; i < x.size() / 4; ++i) ((float *)x.data())[i] = NAN;\n    " << cases[k].kernel.name
       << "(x.data(), " << (k == 0 ? "w.data(), beta.data(), " : "")
       << "a.data(), bias.data(), b.data(), out.data());\n"
       << "    writeFile(dir + \"/" << n << ".x\", x);\n    writeFile(dir + \"/" << n << ".out\", out);\n  }\n";
  }
  os << "  return 0;\n}\n";
  os.flush();
  for (auto [name, t] : {std::pair<const char *, Tensor *>{"a", &a}, {"bias", &bias}, {"b", &b}, {"w", &w},
                         {"beta", &beta}})
    planc::testing::writeTensor(dir.path + "/" + name, *t);
  ASSERT_TRUE(planc::testing::compileAndRun(source, dir.path));
  for (size_t k = 0; k < cases.size(); ++k) {
    Tensor x = planc::testing::readTensor(dir.path + "/" + std::to_string(k) + ".x", cases[k].x);
    Tensor out = planc::testing::readTensor(dir.path + "/" + std::to_string(k) + ".out", cases[k].want);
    for (size_t i = 0; i < x.data.size(); ++i) {
      // x: two f32 additions, as the unfused steps round them.
      ASSERT_EQ(x.data[i], double(float(float(a.data[i] + bias.data[i % 40]) + b.data[i])))
          << cases[k].kernel.name << " x " << i;
      ASSERT_NEAR(out.data[i], cases[k].want.data[i], 2e-6 * std::max(1.0, std::fabs(cases[k].want.data[i])))
          << cases[k].kernel.name << " element " << i;
    }
  }
}

TEST(RowReductionTest, CompiledSumsOverBroadcastDimsEqualTheInterpreter) {
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  struct SumCase {
    SumToKernel kernel;
    Tensor input, before, want;
  };
  std::vector<SumCase> cases;
  auto add = [&](OpKind kind, Shape in, DType t, AttrMap attrs, bool accumulate) {
    ir::testing::OpModule om;
    SumCase c;
    c.input = Tensor(in, t);
    for (double &v : c.input.data) v = runtime::roundToElement(interp::toElementType(t), dist(rng));
    c.want = om.run(om.b.value(kind, {om.input("x", c.input)}, attrs));
    c.before = Tensor(c.want.shape, t);
    if (accumulate)
      for (double &v : c.before.data) v = runtime::roundToElement(interp::toElementType(t), dist(rng));
    ASSERT_EQ(makeSumToKernel(kind, attrs, {t, in}, {c.want.dtype, c.want.shape}, c.kernel), "") << spelling(kind);
    c.kernel.accumulate = accumulate;
    c.kernel.name = "t" + std::to_string(cases.size());
    cases.push_back(std::move(c));
  };
  for (DType t : {DType::F32, DType::BF16}) {
    add(OpKind::SumTo, {4, 6, 16}, t, {{"shape", std::vector<int64_t>{16}}}, false);  // a bias's gradient
    add(OpKind::SumTo, {3, 5, 150}, t, {{"shape", std::vector<int64_t>{150}}}, true); // blocks of 64 columns and a rest
    add(OpKind::SumTo, {3, 5, 70}, t, {{"shape", std::vector<int64_t>{5, 70}}}, false);
    add(OpKind::SumTo, {2, 3, 4}, t, {{"shape", std::vector<int64_t>{3, 1}}}, false); // keeps a middle dim
    add(OpKind::SumTo, {2, 3, 4}, t, {{"shape", std::vector<int64_t>{2, 1, 4}}}, true);
    add(OpKind::ReduceSum, {3, 5}, t, {{"dims", std::vector<int64_t>{0}}, {"keepdim", false}}, false);
  }
  add(OpKind::SumTo, {5, 7}, DType::F64, {{"shape", std::vector<int64_t>{1, 7}}}, false);

  planc::testing::ScratchDir dir;
  std::string source;
  llvm::raw_string_ostream os(source);
  renderPrelude(cpuLanguage(), os);
  os << planc::testing::kReadFileHelper;
  for (const SumCase &c : cases) renderSumToKernel(c.kernel, cpuLanguage(), os);
  os << "int main(int, char **argv) {\n  std::string dir = argv[1];\n";
  for (size_t k = 0; k < cases.size(); ++k) {
    const std::string f = "dir + \"/" + std::to_string(k);
    os << "  {\n    std::vector<char> in = readFile(" << f << ".in\"), out = readFile(" << f << ".before\");\n    "
       << cases[k].kernel.name << "(in.data(), out.data());\n    writeFile(" << f << ".out\", out);\n  }\n";
    planc::testing::writeTensor(dir.path + "/" + std::to_string(k) + ".in", cases[k].input);
    planc::testing::writeTensor(dir.path + "/" + std::to_string(k) + ".before", cases[k].before);
  }
  os << "  return 0;\n}\n";
  os.flush();
  ASSERT_TRUE(planc::testing::compileAndRun(source, dir.path));
  for (size_t k = 0; k < cases.size(); ++k) {
    const SumCase &c = cases[k];
    Tensor got = planc::testing::readTensor(dir.path + "/" + std::to_string(k) + ".out", c.want);
    ASSERT_EQ(got.data.size(), c.want.data.size()) << c.kernel.name;
    runtime::ElementType e = interp::toElementType(c.want.dtype);
    for (size_t i = 0; i < got.data.size(); ++i) {
      // The same f64 sum in the same order, rounded once: equal, but for
      // bf16's rounding of the sum before adding to what was there.
      double w = runtime::roundToElement(e, c.want.data[i] + c.before.data[i]);
      double tol = c.want.dtype == DType::BF16 ? 0x1p-7 * std::max(1.0, std::fabs(w)) : 0.0;
      ASSERT_NEAR(got.data[i], w, tol) << c.kernel.name << " element " << i;
    }
  }
}

TEST(RowReductionTest, SaysWhatItDoesNotDescribe) {
  RowKernel k;
  KernelBuffer x{DType::F32, {3, 4}};
  EXPECT_EQ(makeRowKernel(OpKind::Softmax, {{"dim", int64_t(0)}}, {x}, x, k),
            "a softmax along another dim than the last");
  EXPECT_EQ(makeRowKernel(OpKind::ReduceSum, {{"dims", std::vector<int64_t>{0}}}, {x}, {DType::F32, {4}}, k),
            "a reduction over dims that are not the last ones");
  EXPECT_EQ(makeRowKernel(OpKind::SumTo, {}, {x}, x, k), "not a row reduction");
  SumToKernel t;
  EXPECT_EQ(makeSumToKernel(OpKind::SumTo, {}, x, {DType::F32, {3, 2}}, t),
            "a result that is not a sum over broadcast dims");
  EXPECT_EQ(makeSumToKernel(OpKind::SumTo, {}, x, {DType::BF16, {4}}, t), "changes the dtype");
  EXPECT_EQ(makeRowKernel(OpKind::Softmax, {}, {{DType::F64, {3, 4}}}, {DType::F64, {3, 4}}, k),
            "dtype f64 has no generated row kernel yet");
}

} // namespace
