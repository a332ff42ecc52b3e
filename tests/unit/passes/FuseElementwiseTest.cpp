//===- tests/unit/passes/FuseElementwiseTest.cpp - the fuse-elementwise pass -===//
//
// Training steps of tiny-gpt, tiny-llama and a GPT with dropout, in f64,
// with and without elementwise fusion: the fused step has fused_elementwise
// ops whose members are gone, every group's intermediate had one reader,
// and the interpreter gives the same loss, gradients and updates. The
// formula text round-trips; a malformed one is an error naming the node.
//
//===----------------------------------------------------------------------===//

#include "StepTestHelpers.h"

#include "ir/OpDef.h"
#include "ir/ops/Formula.h"
#include "passes/FuseElementwise.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace planc;
using namespace planc::ir;
using namespace planc::testing;

namespace {

std::string example(const char *name) { return sourceDir() + "/examples/" + name; }

std::unique_ptr<Module> step(const std::string &file, const std::string &fusion) {
  std::unique_ptr<Module> m = lower(file, true);
  if (!m) return nullptr;
  Settings s{{"optimizer", "adamw"}, {"fusion", fusion}};
  if (llvm::Error e = runPasses(*m, "canonicalize,autodiff,optimizer,canonicalize,fuse-elementwise", s)) {
    ADD_FAILURE() << llvm::toString(std::move(e));
    return nullptr;
  }
  return m;
}

class FuseElementwiseEquivalence : public ::testing::TestWithParam<const char *> {};

TEST_P(FuseElementwiseEquivalence, FusedStepEqualsTheUnfusedOne) {
  auto unfused = step(example(GetParam()), "none");
  auto fused = step(example(GetParam()), "elementwise");
  ASSERT_TRUE(unfused && fused);
  // What the analysis said of the unfused step is what the pass did.
  ElementwiseFusionAnalysis a = findElementwiseFusions(*unfused);
  ASSERT_FALSE(a.groups.empty());
  size_t members = 0, fusedOps = 0;
  for (const ElementwiseFusion &g : a.groups) {
    members += g.ops.size();
    for (size_t i = 0; i + 1 < g.ops.size(); ++i) EXPECT_GT(g.intermediateBytes, 0);
  }
  for (const auto &op : fused->ops) fusedOps += op->kind == OpKind::FusedElementwise;
  EXPECT_EQ(fusedOps, a.groups.size());
  EXPECT_EQ(fused->ops.size(), unfused->ops.size() - members + a.groups.size());
  EXPECT_FALSE(a.refused.empty()); // values kept for backward do not fuse

  expectSameStep(*unfused, *fused, 256, 1e-12);

  // A fused op counts what its members counted: the step's FLOPs (and so
  // MFU) do not change with the fusion policy.
  auto flops = [](const Module &m) {
    double sum = 0;
    for (const auto &op : m.ops) sum += opDef(op->kind).flops(*op);
    return sum;
  };
  EXPECT_NEAR(flops(*fused), flops(*unfused), 1e-12 * flops(*unfused));
}

INSTANTIATE_TEST_SUITE_P(Models, FuseElementwiseEquivalence, ::testing::Values("tiny-gpt.plan", "tiny-llama.plan"));

TEST(FuseElementwise, NoneLeavesTheStepAlone) {
  auto m = step(example("tiny-gpt.plan"), "none");
  ASSERT_TRUE(m);
  for (const auto &op : m->ops) EXPECT_NE(op->kind, OpKind::FusedElementwise);
}

TEST(FormulaText, RoundTripsAComposedFormula) {
  FormulaBuilder b;
  int x = b.input(0), y = b.input(1);
  int act = inlineFormula(b, *formulaOf(OpKind::Gelu), {}, {x});
  int scaled = inlineFormula(b, *formulaOf(OpKind::Scale), {1.0 / 3.0}, {act});
  int out = inlineFormula(b, *formulaOf(OpKind::ReluGrad), {}, {scaled, y});
  Formula f = b.done(out);
  std::string text = formulaText(f);
  Formula back;
  ASSERT_EQ(parseFormulaText(text, back), "");
  EXPECT_EQ(formulaText(back), text);
  EXPECT_EQ(back.inputs, 2u);
  for (double v : {-2.5, -0.1, 0.0, 0.7, 3.0}) {
    double gelu = evalFormulaAt(*formulaOf(OpKind::Gelu), {}, {v});
    double want = evalFormulaAt(*formulaOf(OpKind::ReluGrad), {}, {gelu / 3.0, 1.5});
    EXPECT_EQ(evalFormulaAt(back, {}, {v, 1.5}), evalFormulaAt(f, {}, {v, 1.5}));
    EXPECT_NEAR(evalFormulaAt(back, {}, {v, 1.5}), want, 1e-15);
  }
}

TEST(FormulaText, MalformedTextNamesTheNode) {
  Formula f;
  EXPECT_EQ(parseFormulaText("input 0; frob 0", f), "node 1: unknown operation 'frob'");
  EXPECT_EQ(parseFormulaText("input 0; add 0", f), "node 1: add takes 2 operands");
  EXPECT_EQ(parseFormulaText("input 0; neg 3", f), "node 1 reads node 3, not an earlier one");
  EXPECT_EQ(parseFormulaText("const x1", f), "node 0: 'x1' is not a number");
  EXPECT_EQ(parseFormulaText("", f), "node 0 is empty");
}

TEST(FusedElementwiseOp, ChecksItsFormulaAgainstItsOperands) {
  std::vector<TensorType> res;
  AttrMap attrs = {{"formula", std::string("input 0; input 1; add 0 1")}, {"ops", std::string("add")},
                   {"dtype", std::string("f32")}};
  EXPECT_EQ(opDef(OpKind::FusedElementwise).infer({TensorType({4, 3}, DType::F32)}, attrs, res),
            "the formula reads 2 operands, the op has 1");
  EXPECT_EQ(opDef(OpKind::FusedElementwise)
                .infer({TensorType({4, 3}, DType::F32), TensorType({3}, DType::F32)}, attrs, res),
            "");
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].shape, (Shape{4, 3}));
  attrs["formula"] = std::string("input 0; sqrt");
  EXPECT_EQ(opDef(OpKind::FusedElementwise).infer({TensorType({4}, DType::F32)}, attrs, res),
            "formula: node 1: sqrt takes 1 operand");
}

} // namespace
