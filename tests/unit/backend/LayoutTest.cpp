//===- tests/unit/backend/LayoutTest.cpp - data movement kernels, compiled, compared -===//
//
// Each data-movement kernel (backend/c/Layout.h) rendered for the CPU,
// compiled, run and compared with the interpreter's op on the same input:
// bit-exact, in f32, bf16 and i32; accumulating ones in f32, f64, bf16 and
// f16. (shard_slice and stage_merge, which read the rank's place, are
// tested for ranks of a mesh in RankKernelsTest.cpp.)
//
//===----------------------------------------------------------------------===//

#include "backend/c/Layout.h"

#include "CompiledProgram.h"
#include "OpTestHelpers.h"

#include <random>

using namespace planc;
using namespace planc::backend;
using namespace planc::ir;

namespace {

struct LayoutCase {
  LayoutKernel kernel;
  Tensor input, want;
};

TEST(LayoutTest, CompiledGathersEqualTheInterpreter) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> dist(-1000, 1000);
  std::vector<LayoutCase> cases;
  auto add = [&](OpKind kind, Shape in, DType t, AttrMap attrs) {
    ir::testing::OpModule om;
    Tensor x(in, t);
    for (double &v : x.data) v = t == DType::I32 ? double(dist(rng)) : double(dist(rng)) / 64.0;
    Value *vx = om.input("x", x);
    LayoutCase c;
    c.want = om.run(om.b.value(kind, kind == OpKind::Fill ? std::vector<Value *>{} : std::vector<Value *>{vx}, attrs));
    c.input = x;
    KernelBuffer ib{t, in}, ob{c.want.dtype, c.want.shape};
    ASSERT_EQ(makeLayoutKernel(kind, attrs, kind == OpKind::Fill ? nullptr : &ib, ob, c.kernel), "") << spelling(kind);
    c.kernel.name = "l" + std::to_string(cases.size()) + "_" + cIdentifier(spelling(kind));
    cases.push_back(std::move(c));
  };
  for (DType t : {DType::F32, DType::BF16, DType::I32}) {
    add(OpKind::Transpose, {2, 3, 4}, t, {{"perm", std::vector<int64_t>{2, 0, 1}}});
    add(OpKind::Transpose, {2, 3, 4, 5}, t, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
    add(OpKind::Slice, {4, 6}, t, {{"dim", int64_t(1)}, {"start", int64_t(2)}, {"end", int64_t(5)}});
    add(OpKind::Slice, {4, 6}, t, {{"dim", int64_t(-2)}, {"start", int64_t(1)}, {"end", int64_t(3)}});
    add(OpKind::Pad, {3, 4}, t, {{"dim", int64_t(1)}, {"before", int64_t(2)}, {"after", int64_t(1)}});
    add(OpKind::Pad, {3, 4}, t, {{"dim", int64_t(0)}, {"before", int64_t(0)}, {"after", int64_t(2)}});
    add(OpKind::Reshape, {2, 6}, t, {{"shape", std::vector<int64_t>{3, 4}}});
    add(OpKind::BroadcastTo, {3, 1}, t, {{"shape", std::vector<int64_t>{2, 3, 5}}});
    // Copied as contiguous rows (Layout.cpp's row path): a row broadcast,
    // a slice and a pad beside dims of size 1, a transpose of 1000-element
    // rows (parallel), a reshape over dims of size 1.
    add(OpKind::BroadcastTo, {3}, t, {{"shape", std::vector<int64_t>{2, 4, 3}}});
    add(OpKind::Slice, {4, 6, 1}, t, {{"dim", int64_t(1)}, {"start", int64_t(1)}, {"end", int64_t(4)}});
    add(OpKind::Pad, {2, 1, 3}, t, {{"dim", int64_t(2)}, {"before", int64_t(1)}, {"after", int64_t(2)}});
    add(OpKind::Pad, {2, 3, 1}, t, {{"dim", int64_t(2)}, {"before", int64_t(0)}, {"after", int64_t(1)}});
    add(OpKind::Transpose, {3, 8, 1000}, t, {{"perm", std::vector<int64_t>{1, 0, 2}}});
    add(OpKind::Reshape, {1, 6, 1, 2}, t, {{"shape", std::vector<int64_t>{3, 1, 4}}});
  }
  add(OpKind::Fill, {}, DType::F32, {{"value", 0.1}, {"shape", std::vector<int64_t>{2, 3}}, {"dtype", std::string("f32")}});
  add(OpKind::Fill, {}, DType::BF16, {{"value", -2.7}, {"shape", std::vector<int64_t>{4}}, {"dtype", std::string("bf16")}});

  planc::testing::ScratchDir dir;
  std::string source;
  llvm::raw_string_ostream os(source);
  os << "#include <cstdint>\n" << planc::testing::kReadFileHelper;
  for (const LayoutCase &c : cases) renderLayoutKernel(c.kernel, cpuLanguage(), os);
  os << "int main(int, char **argv) {\n  std::string dir = argv[1];\n";
  for (size_t k = 0; k < cases.size(); ++k) {
    const std::string f = "dir + \"/" + std::to_string(k);
    const LayoutCase &c = cases[k];
    os << "  {\n    std::vector<char> in = readFile(" << f << ".in\"), out("
       << c.want.data.size() * byteSize(c.want.dtype) << ");\n    " << c.kernel.name << "(" << (c.kernel.hasInput ? "in.data(), " : "") << "out.data());\n"
       << "    writeFile(" << f << ".out\", out);\n  }\n";
    planc::testing::writeTensor(dir.path + "/" + std::to_string(k) + ".in", c.input);
  }
  os << "  return 0;\n}\n";
  os.flush();
  ASSERT_TRUE(planc::testing::compileAndRun(source, dir.path));
  for (size_t k = 0; k < cases.size(); ++k) {
    Tensor got = planc::testing::readTensor(dir.path + "/" + std::to_string(k) + ".out", cases[k].want);
    ASSERT_EQ(got.data.size(), cases[k].want.data.size()) << cases[k].kernel.name;
    for (size_t i = 0; i < got.data.size(); ++i)
      ASSERT_EQ(got.data[i], cases[k].want.data[i]) << cases[k].kernel.name << " element " << i << "\n" << source;
  }
}

// A step that sums micro-batches into one gradient accumulates: the moved
// element added to what the result holds, in the float dtypes, exactly as
// the interpreter's rounded result added to the buffer and rounded again.
TEST(LayoutTest, AccumulatingGathersAddToTheResult) {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> dist(-4.0, 4.0);
  struct Case {
    LayoutKernel kernel;
    Tensor input, before, want;
  };
  std::vector<Case> cases;
  auto random = [&](Shape shape, DType t) {
    Tensor x(std::move(shape), t);
    for (double &v : x.data) v = runtime::roundToElement(interp::toElementType(t), dist(rng));
    return x;
  };
  auto add = [&](OpKind kind, Shape in, DType t, AttrMap attrs) {
    ir::testing::OpModule om;
    Case c;
    c.input = random(in, t);
    Tensor moved = om.run(om.b.value(kind, {om.input("x", c.input)}, attrs));
    c.before = random(moved.shape, t);
    c.want = moved;
    for (size_t i = 0; i < c.want.data.size(); ++i) c.want.data[i] += c.before.data[i];
    roundToDType(c.want);
    KernelBuffer ib{t, in}, ob{t, moved.shape};
    ASSERT_EQ(makeLayoutKernel(kind, attrs, &ib, ob, c.kernel), "") << spelling(kind);
    ASSERT_EQ(accumulateLayout(c.kernel), "") << spelling(kind);
    c.kernel.name = "a" + std::to_string(cases.size()) + "_" + cIdentifier(spelling(kind));
    cases.push_back(std::move(c));
  };
  for (DType t : {DType::F32, DType::F64, DType::BF16, DType::F16}) {
    add(OpKind::Transpose, {64, 3}, t, {{"perm", std::vector<int64_t>{1, 0}}});
    add(OpKind::Transpose, {2, 3, 4, 5}, t, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
    add(OpKind::Pad, {3, 4}, t, {{"dim", int64_t(1)}, {"before", int64_t(2)}, {"after", int64_t(1)}});
    add(OpKind::Slice, {4, 6}, t, {{"dim", int64_t(1)}, {"start", int64_t(2)}, {"end", int64_t(5)}});
    add(OpKind::Reshape, {2, 6}, t, {{"shape", std::vector<int64_t>{3, 4}}});
  }
  add(OpKind::BroadcastTo, {3, 1}, DType::F32, {{"shape", std::vector<int64_t>{2, 3, 5}}});

  planc::testing::ScratchDir dir;
  std::string source;
  llvm::raw_string_ostream os(source);
  renderPrelude(cpuLanguage(), os); // the 16-bit conversions
  os << planc::testing::kReadFileHelper;
  for (const Case &c : cases) renderLayoutKernel(c.kernel, cpuLanguage(), os);
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
    Tensor got = planc::testing::readTensor(dir.path + "/" + std::to_string(k) + ".out", cases[k].want);
    ASSERT_EQ(got.data.size(), cases[k].want.data.size()) << cases[k].kernel.name;
    for (size_t i = 0; i < got.data.size(); ++i)
      ASSERT_EQ(got.data[i], cases[k].want.data[i]) << cases[k].kernel.name << " element " << i << "\n" << source;
  }
}

TEST(LayoutTest, SaysWhatCannotAccumulate) {
  LayoutKernel k;
  KernelBuffer ints{DType::I32, {2, 2}};
  ASSERT_EQ(makeLayoutKernel(OpKind::Reshape, {}, &ints, ints, k), "");
  EXPECT_EQ(accumulateLayout(k), "an accumulating data movement of i32");
  KernelBuffer floats{DType::F32, {2, 2}};
  ASSERT_EQ(makeLayoutKernel(OpKind::Fill, {{"value", 1.0}}, nullptr, floats, k), "");
  EXPECT_EQ(accumulateLayout(k), "an accumulating fill");
  EXPECT_FALSE(k.accumulate);
}

TEST(LayoutTest, SaysWhatIsNotDataMovement) {
  LayoutKernel k;
  KernelBuffer x{DType::F32, {2, 2}};
  EXPECT_EQ(makeLayoutKernel(OpKind::Gelu, {}, &x, x, k), "not data movement");
  KernelBuffer y{DType::BF16, {2, 2}};
  EXPECT_EQ(makeLayoutKernel(OpKind::Reshape, {}, &x, y, k), "changes the dtype");
}

} // namespace
