//===- tests/unit/ir/OpKernelTest.cpp - reference kernels on small cases -----===//
//
// Each kernel on a case small enough to check by hand (or against a loop in
// the test that is obviously the definition): broadcasting, matmul flags,
// normalisations, the loss, rotary positions, the dropout mask, the
// optimizer updates and schedules. Rounding to dtypes and the RNG are at the
// end with the interpreter's own behaviour.
//
//===----------------------------------------------------------------------===//

#include "OpTestHelpers.h"
#include "ir/ops/Formula.h"

#include <cmath>
#include <set>

using namespace planc;
using namespace planc::ir;
using namespace planc::ir::testing;

namespace {

void expectNear(const Tensor &t, const std::vector<double> &want, double tol = 1e-12) {
  ASSERT_EQ(t.data.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (t.data[i] == want[i]) continue; // also infinities
    EXPECT_NEAR(t.data[i], want[i], tol) << "element " << i;
  }
}

TEST(OpKernelTest, EveryOpHasAShapeRuleAKernelAndAFlopCount) {
  for (unsigned i = 0; i < unsigned(OpKind::NumOps); ++i) {
    const OpDef &def = opDef(OpKind(i));
    EXPECT_EQ(def.kind, OpKind(i));
    EXPECT_TRUE(def.infer && def.eval && def.flops) << spelling(OpKind(i));
  }
  // Ops that only appear in backward graphs or update state have no gradient.
  EXPECT_EQ(opDef(OpKind::LayerNormGrad).grad, nullptr);
  EXPECT_EQ(opDef(OpKind::AdamUpdate).grad, nullptr);
  EXPECT_NE(opDef(OpKind::MatMul).grad, nullptr);
}

// The kernel description (ir/KernelDesc.h): every op kind has a class and,
// in that class, what a code generator renders it from -- or says why it
// has nothing.
TEST(OpKernelTest, EveryOpHasAKernelDescriptionOrAReasonItHasNone) {
  for (unsigned i = 0; i < unsigned(OpKind::NumOps); ++i) {
    const OpKind kind = OpKind(i);
    const KernelDesc &k = opDef(kind).kernel;
    SCOPED_TRACE(spelling(kind));
    ASSERT_NE(k.cls, KernelClass::None);
    switch (k.cls) {
    case KernelClass::Elementwise:
      // One source of its formula: the op table's, each step's own
      // (fused_elementwise), or the identity of an op that only converts
      // between dtypes (cast).
      EXPECT_EQ(int(k.formula != nullptr) + int(k.formulaRule != nullptr) + int(k.convertsOnly), 1);
      EXPECT_TRUE(isElementwise(kind) || kind == OpKind::AdamUpdate || kind == OpKind::ClipScale ||
                  kind == OpKind::Cast || kind == OpKind::FusedElementwise);
      break;
    case KernelClass::Reduction:
      EXPECT_TRUE(k.rowReduction || k.sumDims || k.library.name);
      break;
    case KernelClass::Library: EXPECT_TRUE(k.library.name || k.none); break;
    case KernelClass::Communication: EXPECT_TRUE(exchangesData(kind)); break;
    default: break;
    }
    if (k.cls != KernelClass::Elementwise) {
      EXPECT_EQ(k.formula, nullptr);
      EXPECT_EQ(k.formulaRule, nullptr);
      EXPECT_FALSE(k.convertsOnly);
    }
    if (k.none) {
      EXPECT_EQ(k.library.name, nullptr) << "a kernel and a reason it has none";
    }
  }
  EXPECT_EQ(opDef(OpKind::MatMul).kernel.cls, KernelClass::Gemm);
  EXPECT_EQ(opDef(OpKind::ShardSlice).kernel.cls, KernelClass::Layout);
  EXPECT_STREQ(opDef(OpKind::Adam8bitUpdate).kernel.none, "no hand-written kernel");
  // Two ops of one signature differ in its variant alone.
  EXPECT_STREQ(opDef(OpKind::CausalMask).kernel.library.name, opDef(OpKind::MaskGrad).kernel.library.name);
  EXPECT_NE(opDef(OpKind::CausalMask).kernel.library.variant, opDef(OpKind::MaskGrad).kernel.library.variant);
}

// What a backend renders an elementwise step from: the op table's formula
// with the step's attribute values, a fused_elementwise's own formula, the
// identity for a cast; and why not, where the step's attributes hold none.
TEST(OpKernelTest, KernelFormulaOfEachKindOfElementwiseStep) {
  KernelFormula clip = kernelFormulaOf(OpKind::ClipScale, {{"max_norm", 2.0}});
  ASSERT_TRUE(clip.formula) << clip.error;
  EXPECT_EQ(clip.formula.get(), opDef(OpKind::ClipScale).kernel.formula);
  EXPECT_EQ(clip.attrValues, std::vector<double>{2.0});

  FormulaBuilder b;
  const Formula mulAdd = b.done(b.add(b.mul(b.input(0), b.input(1)), b.constant(1.0)));
  KernelFormula fused = kernelFormulaOf(OpKind::FusedElementwise,
                                        {{"formula", formulaText(mulAdd)}, {"ops", std::string("mul, add")}});
  ASSERT_TRUE(fused.formula) << fused.error;
  EXPECT_EQ(formulaText(*fused.formula), formulaText(mulAdd));
  EXPECT_EQ(fused.formula->inputs, 2u);
  EXPECT_EQ(evalFormulaAt(*fused.formula, fused.attrValues, {3.0, 4.0}), 13.0);

  KernelFormula cast = kernelFormulaOf(OpKind::Cast, {{"dtype", std::string("bf16")}});
  ASSERT_TRUE(cast.formula) << cast.error;
  EXPECT_EQ(cast.formula->inputs, 1u);
  EXPECT_EQ(evalFormulaAt(*cast.formula, cast.attrValues, {-2.5}), -2.5);

  KernelFormula malformed = kernelFormulaOf(OpKind::FusedElementwise, {{"formula", std::string("add(")}});
  EXPECT_FALSE(malformed.formula);
  EXPECT_NE(malformed.error, "");
  KernelFormula missing = kernelFormulaOf(OpKind::FusedElementwise, {});
  EXPECT_FALSE(missing.formula);
  EXPECT_NE(missing.error.find("formula"), std::string::npos) << missing.error;
  KernelFormula matmul = kernelFormulaOf(OpKind::MatMul, {});
  EXPECT_FALSE(matmul.formula);
  EXPECT_EQ(matmul.error, "no formula");
}

// A row reduction's stages and output come from its op: layer norm's on
// rows of 4 with a weight and bias read per column.
TEST(OpKernelTest, RowReductionRuleOfLayerNorm) {
  RowReduction r;
  const Shape x{3, 4}, w{4};
  ASSERT_EQ(opDef(OpKind::LayerNorm).kernel.rowReduction({}, {x, w, w}, x, r), "");
  EXPECT_EQ(r.rows, 3);
  EXPECT_EQ(r.length, 4);
  EXPECT_EQ(r.perColumn, (std::vector<bool>{false, true, true}));
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_TRUE(r.outputPerElement);
  // Mean 2.5, variance 1.25 of the row 1 2 3 4: the output of x = 4.
  EXPECT_DOUBLE_EQ(evalFormulaAt(r.stages[0].value, {}, {1, 0, 0}), 1); // the sum's term at x = 1
  const double y = evalFormulaAt(r.output, {}, {4, 2, 0.5, 10, 5});
  EXPECT_NEAR(y, (4 - 2.5) / std::sqrt(1.25 + 1e-5) * 2 + 0.5, 1e-12);
  EXPECT_EQ(opDef(OpKind::LayerNorm).kernel.rowReduction({}, {x, Shape{5}, w}, x, r),
            "a weight or bias of another length than the row");
  // reduce_max over a dim that is not the last: no row kernel.
  EXPECT_EQ(opDef(OpKind::ReduceMax).kernel.rowReduction({{"dims", std::vector<int64_t>{0}}}, {x}, Shape{4}, r),
            "a reduction over dims that are not the last ones");
}

// Data movement is a strided gather its op declares (KernelDesc::gather):
// exactly these kinds have one, all of the layout class; the layout ops
// without one read the rank's place instead (backend/c/Layout.h), which
// the op table says as picksStage or picksRankBlock.
TEST(OpKernelTest, EveryDataMovementOpDeclaresItsGather) {
  const std::set<OpKind> movers = {OpKind::Reshape, OpKind::BroadcastTo, OpKind::Transpose,
                                   OpKind::Slice,   OpKind::Pad,         OpKind::Fill};
  for (unsigned i = 0; i < unsigned(OpKind::NumOps); ++i) {
    const OpKind kind = OpKind(i);
    const KernelDesc &k = opDef(kind).kernel;
    SCOPED_TRACE(spelling(kind));
    EXPECT_EQ(k.gather != nullptr, movers.count(kind) == 1);
    if (k.gather) {
      EXPECT_EQ(k.cls, KernelClass::Layout);
    } else if (k.cls == KernelClass::Layout) {
      EXPECT_TRUE(picksStage(kind) || picksRankBlock(kind));
    }
    if (picksStage(kind) || picksRankBlock(kind)) {
      EXPECT_EQ(k.cls, KernelClass::Layout) << "the code generators render it as a gather";
      EXPECT_EQ(k.gather, nullptr) << "its gather depends on the rank, not only on shapes";
      EXPECT_FALSE(picksStage(kind) && picksRankBlock(kind)) << "one of the two rank-dependent gathers";
    }
  }
}

// Each gather reads the operand element the reference kernel reads.
TEST(OpKernelTest, GatherRulesOfTheDataMovementOps) {
  auto gatherOf = [](OpKind kind, const AttrMap &attrs, std::vector<Shape> operands, const Shape &result) {
    Gather g;
    EXPECT_EQ(opDef(kind).kernel.gather(attrs, operands, result, g), "") << spelling(kind);
    return g;
  };
  using Strides = std::vector<int64_t>;
  EXPECT_EQ(gatherOf(OpKind::Reshape, {}, {{2, 3}}, {3, 2}).strides, (Strides{2, 1}));
  // Result dim i reads operand dim perm[i] of [2, 3, 4] (strides 12, 4, 1).
  EXPECT_EQ(gatherOf(OpKind::Transpose, {{"perm", Strides{2, 0, -2}}}, {{2, 3, 4}}, {4, 2, 3}).strides,
            (Strides{1, 12, 4}));
  // A dim the operand lacks or has as 1 reads one element.
  EXPECT_EQ(gatherOf(OpKind::BroadcastTo, {}, {{3, 1}}, {2, 3, 4}).strides, (Strides{0, 1, 0}));
  Gather slice = gatherOf(OpKind::Slice, {{"dim", int64_t(-1)}, {"start", int64_t(1)}, {"end", int64_t(4)}},
                          {{2, 5}}, {2, 3});
  EXPECT_EQ(slice.strides, (Strides{5, 1}));
  EXPECT_EQ(slice.base, 1);
  EXPECT_EQ(slice.window, -1);
  Gather pad = gatherOf(OpKind::Pad, {{"dim", int64_t(0)}, {"before", int64_t(1)}, {"after", int64_t(2)}}, {{2, 3}},
                        {5, 3});
  EXPECT_EQ(pad.strides, (Strides{3, 1}));
  EXPECT_EQ(pad.base, -3) << "result row 1 reads operand row 0";
  EXPECT_EQ(pad.window, 0);
  EXPECT_EQ(pad.lo, 1);
  EXPECT_EQ(pad.hi, 3);
  EXPECT_EQ(pad.fill, 0.0);
  EXPECT_TRUE(pad.readsOperand);
  Gather fill = gatherOf(OpKind::Fill, {{"value", int64_t(3)}}, {}, {2, 2});
  EXPECT_FALSE(fill.readsOperand);
  EXPECT_EQ(fill.fill, 3.0);
  // Shapes the op cannot have: why there is no gather.
  Gather g;
  EXPECT_EQ(opDef(OpKind::Slice).kernel.gather({}, {}, {2}, g), "takes one operand");
  EXPECT_EQ(opDef(OpKind::Pad).kernel.gather({{"dim", int64_t(0)}}, {{2, 3}}, {5}, g), "a result of another rank");
  EXPECT_EQ(opDef(OpKind::BroadcastTo).kernel.gather({}, {{2, 3}}, {3}, g),
            "an operand of higher rank than the result");
}

TEST(OpKernelTest, BinaryOpsBroadcastAsNumPy) {
  OpModule t;
  Value *a = t.input("a", {2, 3}, {1, 2, 3, 4, 5, 6});
  Value *row = t.input("row", {3}, {10, 20, 30});
  Value *col = t.input("col", {2, 1}, {100, 200});
  expectNear(t.run(t.b.add(a, row)), {11, 22, 33, 14, 25, 36});
  expectNear(t.run(t.b.sub(col, row)), {90, 80, 70, 190, 180, 170}); // [2,1] - [3] -> [2,3]
  expectNear(t.run(t.b.mul(a, col)), {100, 200, 300, 800, 1000, 1200});
  expectNear(t.run(t.b.div(row, col)), {0.1, 0.2, 0.3, 0.05, 0.1, 0.15});
  EXPECT_EQ(t.b.add(col, row)->type.shape, (Shape{2, 3}));

  std::vector<TensorType> res;
  Value *bad = t.input("bad", {4}, {0, 0, 0, 0});
  EXPECT_EQ(inferResultTypes(OpKind::Add, {a, bad}, {}, res), "shapes [2, 3] and [4] do not broadcast");
}

/// op(a) @ op(b) by the definition, for the batch-broadcast check.
std::vector<double> referenceMatMul(const Tensor &a, const Tensor &b, bool ta, bool tb, Shape batch, int64_t batchA,
                                    int64_t batchB) {
  int64_t ra = a.rank(), rb = b.rank();
  int64_t m = ta ? a.shape[ra - 1] : a.shape[ra - 2], k = ta ? a.shape[ra - 2] : a.shape[ra - 1];
  int64_t n = tb ? b.shape[rb - 2] : b.shape[rb - 1];
  int64_t batches = 1;
  for (int64_t d : batch) batches *= d;
  std::vector<double> c;
  for (int64_t bi = 0; bi < batches; ++bi) {
    // The tests below broadcast a single batch dim only: a batch of 1 repeats.
    const double *pa = a.data.data() + (batchA == 1 ? 0 : bi) * m * k;
    const double *pb = b.data.data() + (batchB == 1 ? 0 : bi) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += (ta ? pa[p * m + i] : pa[i * k + p]) * (tb ? pb[j * k + p] : pb[p * n + j]);
        c.push_back(s);
      }
  }
  return c;
}

TEST(OpKernelTest, MatMulWithTransposesAndBatchBroadcast) {
  {
    OpModule t; // [2, 3] @ [3, 2] by hand
    Value *a = t.input("a", {2, 3}, {1, 2, 3, 4, 5, 6});
    Value *b = t.input("b", {3, 2}, {7, 8, 9, 10, 11, 12});
    expectNear(t.run(t.b.matmul(a, b)), {58, 64, 139, 154});
    expectNear(t.run(t.b.matmul(a, a, false, true)), {14, 32, 32, 77});                     // a a^T
    expectNear(t.run(t.b.matmul(a, a, true, false)), {17, 22, 27, 22, 29, 36, 27, 36, 45}); // a^T a
  }
  Random rng(3);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      OpModule t;
      // op(a) [2, 3, 4] (batch 2), op(b) [1, 4, 5] (batch 1, broadcast).
      Shape as = ta ? Shape{2, 4, 3} : Shape{2, 3, 4}, bs = tb ? Shape{1, 5, 4} : Shape{1, 4, 5};
      Tensor av = tensor(as, rng.normal(24)), bv = tensor(bs, rng.normal(20));
      Value *a = t.input("a", av), *b = t.input("b", bv);
      Value *c = t.b.matmul(a, b, ta, tb);
      EXPECT_EQ(c->type.shape, (Shape{2, 3, 5}));
      expectNear(t.run(c), referenceMatMul(av, bv, ta, tb, {2}, 2, 1));
    }
  OpModule t;
  Value *x = t.input("x", {2, 3, 4}, rng.normal(24));
  Value *w = t.input("w", {4, 5}, rng.normal(20));
  EXPECT_EQ(t.b.matmul(x, w)->type.shape, (Shape{2, 3, 5})) << "x [b, s, h] @ w [h, f]";
  std::vector<TensorType> res;
  EXPECT_EQ(inferResultTypes(OpKind::MatMul, {x, x}, {}, res),
            "contracted dims differ: 4 of [2, 3, 4] and 3 of [2, 3, 4]");
  EXPECT_EQ(opDef(OpKind::MatMul).flops(*t.m.ops[0]), 2.0 * 2 * 3 * 5 * 4);
  EXPECT_EQ(opBytes(*t.m.ops[0]), 8.0 * (24 + 20 + 30)) << "f64 operands and result";
}

TEST(OpKernelTest, ReductionsSumToAndBroadcastTo) {
  OpModule t;
  Value *x = t.input("x", {2, 3}, {1, 5, 3, 4, 2, 6});
  expectNear(t.run(t.b.value(OpKind::ReduceSum, {x}, {{"dims", std::vector<int64_t>{1}}})), {9, 12});
  Value *mean = t.b.value(OpKind::ReduceMean, {x}, {{"dims", std::vector<int64_t>{0}}, {"keepdim", true}});
  EXPECT_EQ(mean->type.shape, (Shape{1, 3}));
  expectNear(t.run(mean), {2.5, 3.5, 4.5});
  expectNear(t.run(t.b.value(OpKind::ReduceMax, {x}, {{"dims", std::vector<int64_t>{-1}}})), {5, 6});
  expectNear(t.run(t.b.value(OpKind::ReduceSum, {x}, {{"dims", std::vector<int64_t>{0, 1}}})), {21});
  expectNear(t.run(t.b.sumTo(x, {3})), {5, 7, 9});
  expectNear(t.run(t.b.sumTo(x, {2, 1})), {9, 12});
  Value *col = t.input("col", {2, 1}, {1, 2});
  expectNear(t.run(t.b.value(OpKind::BroadcastTo, {col}, {{"shape", Shape{2, 2, 3}}})),
             {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2});
}

TEST(OpKernelTest, SoftmaxRowsSumToOne) {
  Random rng(5);
  OpModule t;
  Value *x = t.input("x", {3, 4, 5}, rng.normal(60));
  for (int64_t dim : {-1, 0, 1}) {
    Tensor y = t.run(t.b.value(OpKind::Softmax, {x}, {{"dim", dim}}));
    Tensor sums = t.run(t.b.value(OpKind::ReduceSum, {t.b.value(OpKind::Softmax, {x}, {{"dim", dim}})},
                                  {{"dims", std::vector<int64_t>{dim}}}));
    for (double s : sums.data) EXPECT_NEAR(s, 1.0, 1e-14) << "dim " << dim;
    for (double v : y.data) EXPECT_GT(v, 0.0);
  }
  // log_softmax is the log of softmax; large logits do not overflow.
  Value *big = t.input("big", {1, 3}, {1000, 1001, 1002});
  Tensor ls = t.run(t.b.value(OpKind::LogSoftmax, {big}, {{"dim", int64_t(1)}}));
  double lse = 1002 + std::log(std::exp(-2.0) + std::exp(-1.0) + 1.0);
  expectNear(ls, {1000 - lse, 1001 - lse, 1002 - lse});
}

TEST(OpKernelTest, LayerNormGivesMeanZeroVarianceOne) {
  Random rng(7);
  OpModule t;
  Value *x = t.input("x", {4, 16}, rng.uniform(64, -3, 5));
  Value *w = t.input("w", {16}, std::vector<double>(16, 1.0));
  Value *b = t.input("b", {16}, std::vector<double>(16, 0.0));
  Tensor y = t.run(t.b.value(OpKind::LayerNorm, {x, w, b}, {{"eps", 0.0}}));
  for (int r = 0; r < 4; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < 16; ++i) mean += y.data[r * 16 + i] / 16;
    for (int i = 0; i < 16; ++i) var += (y.data[r * 16 + i] - mean) * (y.data[r * 16 + i] - mean) / 16;
    EXPECT_NEAR(mean, 0.0, 1e-14);
    EXPECT_NEAR(var, 1.0, 1e-12) << "biased variance, as torch";
  }
  // rmsnorm: mean square 1.
  Tensor r = t.run(t.b.value(OpKind::RmsNorm, {x, w}, {{"eps", 0.0}}));
  for (int row = 0; row < 4; ++row) {
    double ms = 0;
    for (int i = 0; i < 16; ++i) ms += r.data[row * 16 + i] * r.data[row * 16 + i] / 16;
    EXPECT_NEAR(ms, 1.0, 1e-12);
  }
}

TEST(OpKernelTest, CrossEntropyOfUniformLogitsIsLogV) {
  OpModule t;
  const int64_t V = 7;
  Value *logits = t.input("logits", {2, 3, V}, std::vector<double>(2 * 3 * V, 0.25));
  Value *targets = t.input("targets", {2, 3}, {0, 1, 2, 3, 4, 6}, DType::I64);
  Value *loss = t.b.value(OpKind::CrossEntropy, {logits, targets});
  EXPECT_EQ(loss->type, TensorType({}, DType::F64));
  expectNear(t.run(loss), {std::log(double(V))}, 1e-14);
  // One confident row: mean of log V (5 rows) and of logsumexp - 10 (1 row).
  OpModule u;
  std::vector<double> l(2 * V, 0.0);
  l[V + 2] = 10;
  Value *lv = u.input("logits", {2, V}, l, DType::F32);
  Value *tv = u.input("targets", {2}, {0, 2}, DType::I32);
  Value *f32loss = u.b.value(OpKind::CrossEntropy, {lv, tv});
  EXPECT_EQ(f32loss->type.dtype, DType::F32) << "narrow logits give an f32 loss";
  double confident = std::log(std::exp(10.0) + (V - 1)) - 10;
  expectNear(u.run(f32loss), {double(float((std::log(double(V)) + confident) / 2))}, 0);
}

TEST(OpKernelTest, RopeInverseUndoesRope) {
  Random rng(11);
  OpModule t;
  Tensor xv = tensor({2, 5, 3, 8}, rng.normal(240));
  Value *x = t.input("x", xv);
  Value *y = t.b.value(OpKind::Rope, {x}, {{"theta", 10000.0}});
  Value *back = t.b.value(OpKind::Rope, {y}, {{"theta", 10000.0}, {"inverse", true}});
  expectNear(t.run(back), xv.data, 1e-13);
  Tensor yv = t.run(y);
  // Position 0 is not rotated; every pair keeps its length.
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t s = 0; s < 5; ++s)
      for (int64_t n = 0; n < 3; ++n)
        for (int64_t i = 0; i < 4; ++i) {
          int64_t base = ((b * 5 + s) * 3 + n) * 8;
          double a0 = xv.data[base + i], b0 = xv.data[base + i + 4];
          double a1 = yv.data[base + i], b1 = yv.data[base + i + 4];
          EXPECT_NEAR(a0 * a0 + b0 * b0, a1 * a1 + b1 * b1, 1e-12);
          if (s == 0) {
            EXPECT_EQ(a0, a1);
          }
        }
  // Position 1, pair 0 turns by 1 radian (frequency theta^0 = 1).
  OpModule u;
  Value *one = u.input("x", {1, 2, 1, 2}, {1, 0, 1, 0});
  expectNear(u.run(u.b.value(OpKind::Rope, {one}, {})), {1, 0, std::cos(1.0), std::sin(1.0)});
}

TEST(OpKernelTest, DropoutMaskDependsOnlyOnSeedAndStream) {
  const int64_t n = 20000;
  OpModule t;
  Value *x = t.input("x", {n}, std::vector<double>(n, 1.0));
  auto dropout = [&](int64_t seed, int64_t stream) {
    return t.run(t.b.value(OpKind::Dropout, {x}, {{"p", 0.3}, {"seed", seed}, {"stream", stream}}));
  };
  Tensor a = dropout(42, 3), again = dropout(42, 3), other = dropout(42, 4);
  EXPECT_EQ(a.data, again.data);
  EXPECT_NE(a.data, other.data);
  int64_t zeros = 0, same = 0;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE(a.data[i] == 0 || std::fabs(a.data[i] - 1 / 0.7) < 1e-15) << "kept values scale by 1/(1-p)";
    zeros += a.data[i] == 0;
    same += (a.data[i] == 0) == (other.data[i] == 0);
  }
  EXPECT_NEAR(double(zeros) / n, 0.3, 0.01); // ~4.6 standard deviations
  EXPECT_LT(double(same) / n, 0.62) << "another stream is an independent mask (0.58 expected)";
  // The gradient rule applies the same mask.
  std::vector<Value *> d;
  const Op &op = *t.m.ops.back();
  opDef(OpKind::Dropout).grad(t.b, op, {x}, d);
  EXPECT_EQ(t.run(d[0]).data, t.run(op.results[0]).data);
}

TEST(OpKernelTest, CausalMaskAndDataMovement) {
  OpModule t;
  Value *s = t.input("s", {2, 3}, {1, 2, 3, 4, 5, 6});
  double inf = std::numeric_limits<double>::infinity();
  expectNear(t.run(t.b.value(OpKind::CausalMask, {s})), {1, -inf, -inf, 4, 5, -inf});
  expectNear(t.run(t.b.value(OpKind::MaskGrad, {s})), {1, 0, 0, 4, 5, 0});
  expectNear(t.run(t.b.value(OpKind::Transpose, {s}, {{"perm", std::vector<int64_t>{1, 0}}})), {1, 4, 2, 5, 3, 6});
  expectNear(t.run(t.b.value(OpKind::Slice, {s}, {{"dim", int64_t(-1)}, {"start", int64_t(1)}, {"end", int64_t(3)}})),
             {2, 3, 5, 6});
  expectNear(t.run(t.b.value(OpKind::Pad, {s}, {{"dim", int64_t(0)}, {"before", int64_t(1)}, {"after", int64_t(0)}})),
             {0, 0, 0, 1, 2, 3, 4, 5, 6});
  expectNear(t.run(t.b.value(OpKind::Concat, {s, s}, {{"dim", int64_t(1)}})), {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
  expectNear(t.run(t.b.value(OpKind::RepeatInterleave, {s}, {{"repeats", int64_t(2)}, {"dim", int64_t(0)}})),
             {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
  expectNear(t.run(t.b.reshape(s, {3, 2})), {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(t.b.value(OpKind::Reshape, {s}, {{"shape", Shape{-1, 2}}})->type.shape, (Shape{3, 2}));
  Value *half = t.b.value(OpKind::Cast, {t.b.scale(s, 1.0 / 3)}, {{"dtype", std::string("bf16")}});
  EXPECT_EQ(t.run(half).data[0], roundTo(DType::BF16, 1.0 / 3)) << "a cast rounds";
  Value *table = t.input("table", {3, 2}, {0, 1, 10, 11, 20, 21});
  Value *idx = t.input("idx", {2, 2}, {2, 0, 2, 1}, DType::I64);
  Value *rows = t.b.value(OpKind::Gather, {table, idx});
  EXPECT_EQ(rows->type.shape, (Shape{2, 2, 2}));
  expectNear(t.run(rows), {20, 21, 0, 1, 20, 21, 10, 11});
  expectNear(t.run(t.b.value(OpKind::ScatterAdd, {idx, rows}, {{"rows", int64_t(3)}})), {0, 1, 10, 11, 40, 42});
}

TEST(OpKernelTest, RunTimeErrorsNameTheOp) {
  OpModule t;
  Value *table = t.input("table", {3, 2}, {0, 1, 2, 3, 4, 5});
  Value *idx = t.input("idx", {1}, {3}, DType::I32);
  t.m.outputs = {{"out", t.b.value(OpKind::Gather, {table, idx}, {}, "rows")}};
  llvm::Expected<TensorMap> r = interpret(t.m, t.feeds);
  ASSERT_FALSE(r);
  EXPECT_EQ(llvm::toString(r.takeError()), "op 'gather' defining %rows: index 3 is out of range [0, 3)");

  OpModule c;
  Value *x = c.input("x", {2}, {1, 2});
  c.m.outputs = {{"out", c.b.value(OpKind::AllReduce, {x}, {{"axis", std::string("tp")}}, "sum")}};
  r = interpret(c.m, c.feeds);
  ASSERT_FALSE(r);
  EXPECT_NE(llvm::toString(r.takeError()).find("collective 'all_reduce' outside a simulator"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

/// One adam_update over params p with gradients g; returns (p, m, v).
std::vector<Tensor> adamStep(const Tensor &p, const Tensor &g, const Tensor &m, const Tensor &v, double lr, double step,
                             AttrMap attrs) {
  OpModule t;
  Value *pv = t.input("p", p), *gv = t.input("g", g), *mv = t.input("m", m), *vv = t.input("v", v);
  Value *lrv = t.input("lr", {}, {lr}), *sv = t.input("step", {}, {step}, DType::I64);
  Op *op = t.b.create(OpKind::AdamUpdate, {pv, gv, mv, vv, lrv, sv}, std::move(attrs));
  t.m.outputs = {{"p", op->results[0]}, {"m", op->results[1]}, {"v", op->results[2]}};
  llvm::Expected<TensorMap> r = interpret(t.m, t.feeds);
  if (!r) {
    ADD_FAILURE() << llvm::toString(r.takeError());
    return {};
  }
  return {r->at("p"), r->at("m"), r->at("v")};
}

TEST(OpKernelTest, AdamWOneStepByHand) {
  // p = 1, g = 0.5, lr = 0.1, weight decay 0.01, betas (0.9, 0.999), eps 1e-8, step 1:
  // p' = 1 (1 - 0.1 * 0.01) = 0.999; m = 0.05, v = 0.00025; bias corrections 0.1 and 0.001:
  // p'' = 0.999 - (0.1 / 0.1) * 0.05 / (sqrt(0.00025) / sqrt(0.001) + 1e-8) = 0.999 - 0.05 / (0.5 + 1e-8).
  AttrMap adamw{{"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"weight_decay", 0.01}, {"decoupled", true}};
  Tensor p = tensor({1}, {1.0}), g = tensor({1}, {0.5}), z = tensor({1}, {0.0});
  std::vector<Tensor> r = adamStep(p, g, z, z, 0.1, 1, adamw);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_NEAR(r[0].data[0], 0.999 - 0.05 / (0.5 + 1e-8), 1e-15);
  EXPECT_NEAR(r[1].data[0], 0.05, 1e-16);
  EXPECT_NEAR(r[2].data[0], 0.00025, 1e-18);
  // Adam with L2 weight decay adds it to the gradient instead: g = 0.5 + 0.01 * 1.
  AttrMap adam = adamw;
  adam["decoupled"] = false;
  r = adamStep(p, g, z, z, 0.1, 1, adam);
  double m = 0.1 * 0.51, v = 0.001 * 0.51 * 0.51;
  EXPECT_NEAR(r[0].data[0], 1.0 - (0.1 / 0.1) * m / (std::sqrt(v) / std::sqrt(0.001) + 1e-8), 1e-15);
  // Step 3 from given moments: the bias corrections use the step.
  Tensor m0 = tensor({1}, {0.2}), v0 = tensor({1}, {0.04});
  r = adamStep(p, g, m0, v0, 0.01, 3, adamw);
  double m3 = 0.9 * 0.2 + 0.1 * 0.5, v3 = 0.999 * 0.04 + 0.001 * 0.25;
  double want = (1 - 0.01 * 0.01) -
                (0.01 / (1 - std::pow(0.9, 3))) * m3 / (std::sqrt(v3) / std::sqrt(1 - std::pow(0.999, 3)) + 1e-8);
  EXPECT_NEAR(r[0].data[0], want, 1e-15);
}

TEST(OpKernelTest, SgdWithMomentumAndNesterov) {
  OpModule t;
  Value *p = t.input("p", {2}, {1.0, -2.0}), *g = t.input("g", {2}, {0.5, 0.25});
  Value *buf = t.input("buf", {2}, {0.1, 0.0}), *lr = t.input("lr", {}, {0.1});
  Op *op =
      t.b.create(OpKind::SgdUpdate, {p, g, buf, lr}, {{"momentum", 0.9}, {"nesterov", true}, {"weight_decay", 0.1}});
  // d = g + 0.1 p = (0.6, 0.05); buf = 0.9 buf + d = (0.69, 0.05); nesterov: d + 0.9 buf.
  expectNear(t.run(op->results[1]), {0.69, 0.05});
  expectNear(t.run(op->results[0]), {1.0 - 0.1 * (0.6 + 0.9 * 0.69), -2.0 - 0.1 * (0.05 + 0.9 * 0.05)});
}

TEST(OpKernelTest, GlobalNormAndClipScale) {
  OpModule t;
  Value *a = t.input("a", {2}, {3, 0}), *b = t.input("b", {1, 1}, {4});
  Value *norm = t.b.value(OpKind::GlobalNorm, {a, b});
  expectNear(t.run(norm), {5});
  expectNear(t.run(t.b.value(OpKind::ClipScale, {norm}, {{"max_norm", 1.0}})), {1.0 / (5 + 1e-6)});
  expectNear(t.run(t.b.value(OpKind::ClipScale, {norm}, {{"max_norm", 10.0}})), {1.0});
}

TEST(OpKernelTest, LearningRateSchedules) {
  auto lrAt = [](const std::string &decay, double step) {
    OpModule t;
    Value *s = t.input("step", {}, {step}, DType::I64);
    AttrMap attrs{{"lr", 1e-3},     {"warmup", int64_t(10)}, {"decay_steps", int64_t(110)},
                  {"min_lr", 1e-4}, {"decay", decay},        {"dtype", std::string("f64")}};
    return t.run(t.b.value(OpKind::LrSchedule, {s}, attrs)).data[0];
  };
  EXPECT_DOUBLE_EQ(lrAt("cosine", 1), 1e-4) << "warmup is linear from step 1";
  EXPECT_DOUBLE_EQ(lrAt("cosine", 5), 5e-4);
  EXPECT_DOUBLE_EQ(lrAt("cosine", 10), 1e-3) << "the peak at the end of warmup";
  EXPECT_DOUBLE_EQ(lrAt("cosine", 60), 1e-4 + 9e-4 * 0.5) << "halfway through the decay";
  EXPECT_DOUBLE_EQ(lrAt("cosine", 35), 1e-4 + 9e-4 * 0.5 * (1 + std::cos(M_PI * 0.25)));
  EXPECT_DOUBLE_EQ(lrAt("cosine", 110), 1e-4);
  EXPECT_DOUBLE_EQ(lrAt("cosine", 500), 1e-4) << "min_lr after decay_steps";
  EXPECT_DOUBLE_EQ(lrAt("linear", 35), 1e-4 + 9e-4 * 0.75);
  EXPECT_DOUBLE_EQ(lrAt("linear", 110), 1e-4);
  EXPECT_DOUBLE_EQ(lrAt("constant", 5), 5e-4);
  EXPECT_DOUBLE_EQ(lrAt("constant", 1000), 1e-3);

  OpModule t;
  Value *s = t.input("step", {}, {1}, DType::I64);
  std::vector<TensorType> res;
  EXPECT_EQ(inferResultTypes(OpKind::LrSchedule, {s}, {{"lr", 1.0}, {"decay", std::string("step")}}, res),
            "missing attribute 'decay_steps'");
  EXPECT_EQ(inferResultTypes(OpKind::LrSchedule, {s},
                             {{"lr", 1.0}, {"decay", std::string("step")}, {"decay_steps", int64_t(5)}}, res),
            "decay must be constant, linear or cosine, got 'step'");
  EXPECT_EQ(inferResultTypes(OpKind::LrSchedule, {s}, {{"lr", 1.0}}, res), "");
  EXPECT_EQ(res[0], TensorType({}, DType::F32));
}

TEST(OpKernelTest, Adam8bitStaysCloseToAdam) {
  // Two blocks of 256 (the second partial), 30 steps of noisy gradients.
  const int64_t n = 400, block = 256, blocks = 2, steps = 30;
  Random rng(13);
  Tensor p = tensor({n}, rng.normal(n)), p8 = p;
  Tensor m = tensor({n}, std::vector<double>(n, 0.0)), v = m;
  Tensor mq({n}, DType::U8), vq({n}, DType::U8), ms({blocks}, DType::F32), vs({blocks}, DType::F32);
  AttrMap attrs{{"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"weight_decay", 0.01}, {"decoupled", true}};
  AttrMap attrs8 = attrs;
  attrs8["block"] = block;
  double lr = 1e-2;
  for (int64_t step = 1; step <= steps; ++step) {
    std::vector<double> gd = rng.normal(n);
    for (int64_t i = 0; i < n; ++i) gd[i] = 0.1 * gd[i] + 0.05 * p.data[i] * (i % 7 + 1); // mixed scales
    Tensor g = tensor({n}, gd);
    std::vector<Tensor> r = adamStep(p, g, m, v, lr, double(step), attrs);
    ASSERT_EQ(r.size(), 3u);
    p = r[0], m = r[1], v = r[2];

    OpModule t;
    std::vector<Value *> ins = {
        t.input("p", p8),  t.input("g", g),   t.input("mq", mq),       t.input("ms", ms),
        t.input("vq", vq), t.input("vs", vs), t.input("lr", {}, {lr}), t.input("step", {}, {double(step)}, DType::I64)};
    Op *op = t.b.create(OpKind::Adam8bitUpdate, ins, attrs8);
    ASSERT_EQ(op->results[1]->type, TensorType({n}, DType::U8));
    t.m.outputs = {{"p", op->results[0]},
                   {"mq", op->results[1]},
                   {"ms", op->results[2]},
                   {"vq", op->results[3]},
                   {"vs", op->results[4]}};
    llvm::Expected<TensorMap> out = interpret(t.m, t.feeds);
    ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
    p8 = out->at("p"), mq = out->at("mq"), ms = out->at("ms"), vq = out->at("vq"), vs = out->at("vs");
  }
  // Against how far the parameters moved, the 8-bit run stays within a few
  // percent on average (observed 1.6%) and element-wise (observed 5.5%:
  // requantising every step makes correlated rounding errors).
  Tensor p0 = tensor({n}, Random(13).normal(n));
  double moved = 0, maxMoved = 0, diff = 0, maxDiff = 0;
  for (int64_t i = 0; i < n; ++i) {
    moved += std::fabs(p.data[i] - p0.data[i]) / n;
    diff += std::fabs(p8.data[i] - p.data[i]) / n;
    maxMoved = std::max(maxMoved, std::fabs(p.data[i] - p0.data[i]));
    maxDiff = std::max(maxDiff, std::fabs(p8.data[i] - p.data[i]));
  }
  EXPECT_GT(moved, 0.1);
  EXPECT_LT(diff / moved, 0.03) << "mean difference " << diff << " of a mean movement of " << moved;
  EXPECT_LT(maxDiff / maxMoved, 0.1) << "max difference " << maxDiff << " of a movement of " << maxMoved;
  for (double code : mq.data) EXPECT_TRUE(code >= 0 && code <= 255 && code == std::floor(code));
}

//===----------------------------------------------------------------------===//
// Rounding, the RNG, the interpreter
//===----------------------------------------------------------------------===//

TEST(OpKernelTest, RoundToNearestEvenPerDType) {
  double inf = std::numeric_limits<double>::infinity();
  // bf16: 8 significant bits.
  EXPECT_EQ(roundTo(DType::BF16, 1.0 + 0x1p-8), 1.0) << "a tie goes to the even 1.0";
  EXPECT_EQ(roundTo(DType::BF16, 1.0 + 3 * 0x1p-8), 1.0 + 0x1p-6) << "a tie goes to the even 1 + 2^-6";
  EXPECT_EQ(roundTo(DType::BF16, 1.0 + 0x1p-8 + 0x1p-30), 1.0 + 0x1p-7) << "above the tie rounds up";
  EXPECT_EQ(roundTo(DType::BF16, -3.14159), -3.140625);
  EXPECT_EQ(roundTo(DType::BF16, 3.3895313892515355e38), 3.3895313892515355e38) << "largest finite";
  EXPECT_EQ(roundTo(DType::BF16, 3.4e38), inf);
  EXPECT_EQ(roundTo(DType::BF16, 0x1p-133), 0x1p-133) << "subnormal";
  EXPECT_EQ(roundTo(DType::BF16, 0x1p-135), 0.0);
  EXPECT_TRUE(std::signbit(roundTo(DType::BF16, -1e-300))) << "keeps the sign of zero";
  // f16, f32.
  EXPECT_EQ(roundTo(DType::F16, 65504), 65504);
  EXPECT_EQ(roundTo(DType::F16, 65519), 65504);
  EXPECT_EQ(roundTo(DType::F16, 65520), inf) << "the tie above the largest finite overflows";
  EXPECT_EQ(roundTo(DType::F16, 0x1p-24), 0x1p-24);
  EXPECT_EQ(roundTo(DType::F16, 2049), 2048) << "a tie to even";
  EXPECT_EQ(roundTo(DType::F32, 0.1), double(0.1f));
  EXPECT_EQ(roundTo(DType::F64, 0.1), 0.1);
  // fp8: e4m3 (no infinities, 448 the largest) and e5m2 (IEEE-like).
  EXPECT_EQ(roundTo(DType::F8E4M3, 448), 448);
  EXPECT_EQ(roundTo(DType::F8E4M3, 464), 448) << "the tie goes to the even 448";
  EXPECT_TRUE(std::isnan(roundTo(DType::F8E4M3, 480))) << "as torch.float8_e4m3fn";
  EXPECT_TRUE(std::isnan(roundTo(DType::F8E4M3, inf)));
  EXPECT_EQ(roundTo(DType::F8E4M3, 0.3), 0.3125);
  EXPECT_EQ(roundTo(DType::F8E4M3, 0x1p-9), 0x1p-9) << "smallest subnormal";
  EXPECT_EQ(roundTo(DType::F8E5M2, 57344), 57344);
  EXPECT_EQ(roundTo(DType::F8E5M2, 61440), inf);
  EXPECT_EQ(roundTo(DType::F8E5M2, 0.3), 0.3125);
  EXPECT_EQ(roundTo(DType::F8E5M2, 1.0 + 0x1p-3), 1.0) << "a tie to even with 2 mantissa bits";
  // Integers truncate toward zero, and wrap as a conversion through a wide integer.
  EXPECT_EQ(roundTo(DType::I32, -2.7), -2);
  EXPECT_EQ(roundTo(DType::I64, 3.9), 3);
  EXPECT_EQ(roundTo(DType::U8, 256), 0);
  EXPECT_EQ(roundTo(DType::U8, 255.9), 255);
  EXPECT_EQ(roundTo(DType::I32, 2147483648.0), -2147483648.0);
  EXPECT_EQ(roundTo(DType::Bool, 0.5), 1);
}

TEST(OpKernelTest, InterpreterChecksFeedsAndRoundsToDTypes) {
  Module m;
  Builder b(m);
  Value *x = m.addInput("x", TensorType({2}, DType::BF16));
  Value *w = m.addParam("w", TensorType({2}, DType::BF16));
  m.outputs = {{"y", b.value(OpKind::Mul, {x, w}, {}, "y")}};
  TensorMap feeds{{"x", tensor({2}, {1.0 / 3, 3.0})}};
  llvm::Expected<TensorMap> r = interpret(m, feeds);
  ASSERT_FALSE(r);
  EXPECT_EQ(llvm::toString(r.takeError()), "no value fed for parameter '%w'");
  feeds["w"] = tensor({3}, {1, 2, 3});
  r = interpret(m, feeds);
  ASSERT_FALSE(r);
  EXPECT_EQ(llvm::toString(r.takeError()), "parameter '%w' is bf16[2], but the value fed has shape [3]");
  feeds["w"] = tensor({2}, {3.0, 1.0 / 3});
  r = interpret(m, feeds);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  double third = roundTo(DType::BF16, 1.0 / 3);
  EXPECT_EQ(r->at("y").dtype, DType::BF16);
  EXPECT_EQ(r->at("y").data, (std::vector<double>{roundTo(DType::BF16, third * 3), roundTo(DType::BF16, 3 * third)}));
}

TEST(OpKernelTest, InitialParamsAreSeededPerPathNotPerOrder) {
  auto make = [](bool reversed) {
    auto m = std::make_unique<Module>();
    std::vector<std::pair<std::string, InitKind>> specs = {
        {"blocks.0.w", InitKind::Normal}, {"blocks.0.b", InitKind::Zeros}, {"ln.weight", InitKind::Ones}};
    if (reversed) std::reverse(specs.begin(), specs.end());
    for (auto &[path, init] : specs) {
      Value *p = m->addParam(path, TensorType({100, 100}, DType::F32));
      p->path = path;
      p->init = init;
      p->initStd = 0.02;
    }
    return m;
  };
  auto a = make(false), b = make(true);
  TensorMap pa = initialParams(*a, 7), pb = initialParams(*b, 7), other = initialParams(*a, 8);
  EXPECT_EQ(pa.at("blocks.0.w").data, pb.at("blocks.0.w").data);
  EXPECT_NE(pa.at("blocks.0.w").data, other.at("blocks.0.w").data);
  for (double v : pa.at("blocks.0.b").data) EXPECT_EQ(v, 0);
  for (double v : pa.at("ln.weight").data) EXPECT_EQ(v, 1);
  const std::vector<double> &w = pa.at("blocks.0.w").data;
  double mean = 0, var = 0;
  for (double v : w) mean += v / w.size();
  for (double v : w) var += (v - mean) * (v - mean) / w.size();
  EXPECT_NEAR(mean, 0, 4 * 0.02 / 100);
  EXPECT_NEAR(std::sqrt(var), 0.02, 0.02 * 0.03);
  EXPECT_EQ(w[0], roundTo(DType::F32, w[0])) << "rounded to the parameter's dtype";
}

} // namespace
