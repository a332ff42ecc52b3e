//===- tests/unit/ir/IRTest.cpp - types, modules and the builder -------------===//
//
// The data model under the textual form: dtype names and sizes, the spelling
// of types and shardings, op kinds from Ops.def, value naming in a module,
// attribute getters, the Builder typing ops through their OpDef, and the
// index of a step's outputs by role and path.
//
//===----------------------------------------------------------------------===//

#include "ir/Builder.h"
#include "ir/IR.h"
#include "ir/StepOutputs.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

using namespace planc;
using namespace planc::ir;

namespace {

TEST(IRTest, DTypesHaveNamesSizesAndClasses) {
  for (unsigned i = 0; i <= unsigned(DType::Bool); ++i) {
    DType t = DType(i);
    EXPECT_EQ(parseDType(spelling(t)), t) << spelling(t);
  }
  EXPECT_EQ(parseDType("float"), std::nullopt);
  EXPECT_STREQ(spelling(DType::F8E4M3), "fp8_e4m3") << "the .plan language's name";
  EXPECT_EQ(byteSize(DType::F64), 8u);
  EXPECT_EQ(byteSize(DType::BF16), 2u);
  EXPECT_EQ(byteSize(DType::F8E5M2), 1u);
  EXPECT_EQ(byteSize(DType::U16), 2u);
  EXPECT_EQ(byteSize(DType::Bool), 1u);
  EXPECT_TRUE(isFloat(DType::F8E4M3));
  EXPECT_FALSE(isFloat(DType::I32));
  EXPECT_TRUE(isInteger(DType::U32));
  EXPECT_FALSE(isInteger(DType::Bool));
  EXPECT_FALSE(isInteger(DType::F16));
}

TEST(IRTest, TypesPrintShapeDTypeAndSharding) {
  TensorType t({4, 64}, DType::BF16);
  EXPECT_EQ(toString(t), "bf16[4, 64]");
  EXPECT_EQ(t.numel(), 256);
  EXPECT_EQ(t.bytes(), 512u);
  EXPECT_TRUE(t.sharding.isReplicated());
  t.sharding.dims[1] = {MeshAxis::DP, MeshAxis::TP};
  EXPECT_FALSE(t.sharding.isReplicated());
  EXPECT_EQ(toString(t), "bf16[4, 64]{shard(1, dp+tp)}");
  t.sharding.dims[0] = {MeshAxis::PP};
  t.sharding.partial = {MeshAxis::CP};
  EXPECT_EQ(toString(t.sharding), "{shard(0, pp), shard(1, dp+tp), partial(cp)}");
  TensorType scalar({}, DType::F32);
  EXPECT_EQ(toString(scalar), "f32[]");
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(TensorType({3, 0}, DType::F32).numel(), 0);
  EXPECT_EQ(TensorType({int64_t(1) << 40, int64_t(1) << 40}, DType::F32).numel(), INT64_MAX) << "saturates";
}

TEST(IRTest, OpKindsComeFromOpsDef) {
  EXPECT_STREQ(spelling(OpKind::MatMul), "matmul");
  EXPECT_STREQ(spelling(OpKind::LayerNormGrad), "layernorm_grad");
  EXPECT_EQ(parseOpKind("all_reduce"), OpKind::AllReduce);
  EXPECT_EQ(parseOpKind("MatMul"), std::nullopt);
  for (unsigned k = 0; k < unsigned(OpKind::NumOps); ++k) EXPECT_EQ(parseOpKind(spelling(OpKind(k))), OpKind(k));
}

TEST(IRTest, ModuleNamesValuesUniquely) {
  Module m;
  Value *x = m.addInput("x", TensorType({2}, DType::F32));
  EXPECT_EQ(x->name, "x");
  EXPECT_EQ(x->kind, Value::Kind::Input);
  EXPECT_EQ(m.uniqueName("x"), "x.1");
  Op *op = m.append(OpKind::Neg, {x}, {x->type}, {}, "x");
  EXPECT_EQ(op->result()->name, "x.1");
  EXPECT_EQ(op->result()->def, op);
  EXPECT_EQ(m.append(OpKind::Neg, {x}, {x->type}, {}, "x")->result()->name, "x.2");
  EXPECT_EQ(m.append(OpKind::Neg, {x}, {x->type})->result()->name, "0") << "unnamed values are numbered";
  EXPECT_EQ(m.append(OpKind::Neg, {x}, {x->type})->result()->name, "1");
  EXPECT_EQ(m.lookup("x.2"), m.ops[1]->result());
  EXPECT_EQ(m.lookup("nope"), nullptr);

  // Three results named after the hint; rename gives each its own.
  Op *grad = m.append(OpKind::LayerNormGrad, {x, x, x, x}, {x->type, x->type, x->type}, {}, "d");
  EXPECT_EQ(grad->results[0]->name, "d");
  EXPECT_EQ(grad->results[1]->name, "d.1");
  EXPECT_TRUE(m.rename(grad->results[1], "dw"));
  EXPECT_FALSE(m.rename(grad->results[2], "dw")) << "taken";
  EXPECT_FALSE(m.rename(grad->results[2], ""));
  EXPECT_EQ(m.lookup("dw"), grad->results[1]);
  EXPECT_EQ(m.lookup("d.1"), nullptr);

  m.outputs.push_back({"out", grad->results[0]});
  EXPECT_EQ(m.output("out"), grad->results[0]);
  EXPECT_EQ(m.output("other"), nullptr);
}

TEST(IRTest, AttributeGettersReadTheirKindOrGiveTheDefault) {
  Op op;
  op.attrs = {{"i", int64_t(3)}, {"f", 0.5}, {"b", true}, {"s", std::string("tp")},
              {"l", std::vector<int64_t>{1, 2}}};
  EXPECT_TRUE(op.has("i"));
  EXPECT_FALSE(op.has("missing"));
  EXPECT_EQ(op.getInt("i"), 3);
  EXPECT_EQ(op.getInt("f", -1), -1) << "a float is not read as an integer";
  EXPECT_EQ(op.getFloat("f"), 0.5);
  EXPECT_EQ(op.getFloat("i"), 3.0) << "an integer reads as a float";
  EXPECT_EQ(op.getFloat("missing", 7.0), 7.0);
  EXPECT_TRUE(op.getBool("b"));
  EXPECT_EQ(op.getString("s"), "tp");
  EXPECT_EQ(op.getString("i", "none"), "none");
  EXPECT_EQ(op.getInts("l"), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(op.getInts("i").empty());
}

TEST(IRTest, BuilderTypesOpsAndStampsLocationAndPath) {
  Module m;
  Builder b(m);
  Value *x = m.addInput("x", TensorType({2, 3}, DType::F32));
  Value *w = m.addParam("w", TensorType({3, 4}, DType::F32));
  b.loc = {"t.plan", 4, 2};
  b.path = "blocks.0.mlp";
  Value *y = b.matmul(x, w);
  EXPECT_EQ(y->type, TensorType({2, 4}, DType::F32));
  EXPECT_EQ(y->def->loc, b.loc);
  EXPECT_EQ(y->def->path, "blocks.0.mlp");
  {
    Op other;
    other.loc = {"u.plan", 9, 9};
    other.path = "head";
    BuilderScope scope(b, other);
    EXPECT_EQ(b.neg(y)->def->path, "head");
  }
  EXPECT_EQ(b.path, "blocks.0.mlp") << "the scope restores the builder";

  EXPECT_EQ(b.reshape(y, {2, 4}), y) << "no op for a reshape to the same shape";
  EXPECT_EQ(b.sumTo(y, {2, 4}), y);
  Value *r = b.reshape(y, {8});
  EXPECT_EQ(r->def->kind, OpKind::Reshape);
  EXPECT_EQ(r->type.shape, Shape({8}));
  Value *s = b.sumTo(y, {4});
  EXPECT_EQ(s->def->kind, OpKind::SumTo);
  EXPECT_EQ(s->type.shape, Shape({4}));
  m.outputs.push_back({"s", s});
  EXPECT_FALSE(bool(verify(m)));
}

TEST(IRTest, BuilderStopsOnAnOpThatDoesNotType) {
  Module m;
  Builder b(m);
  Value *x = m.addInput("x", TensorType({2, 3}, DType::F32));
  b.loc = {"t.plan", 4, 2};
  b.path = "lin";
  EXPECT_DEATH(b.matmul(x, x), "t.plan:4:2: internal error: cannot build 'matmul' in 'lin': .*%x : f32\\[2, 3\\]");
}

TEST(IRTest, OutputIndexFindsWhatOutputForFinds) {
  Module m;
  Value *w = m.addParam("w", TensorType({2}, DType::F32));
  Value *b = m.addParam("b", TensorType({2}, DType::F32));
  m.outputs.push_back(gradientOutput("w", w));
  m.outputs.push_back(paramUpdateOutput("w", b));
  m.outputs.push_back(gradientOutput("w", b)); // a second of that role and path: the first wins
  m.outputs.push_back(gradientOutput("b", b));
  const OutputIndex index(m);
  for (OutputRole role : {OutputRole::ParamGradient, OutputRole::ParamUpdate, OutputRole::StateUpdate})
    for (const char *path : {"w", "b", "c"})
      EXPECT_EQ(index.find(role, path), m.outputFor(role, path)) << path;
  EXPECT_EQ(index.find(OutputRole::ParamGradient, "w"), &m.outputs[0]);
  EXPECT_EQ(index.find(OutputRole::ParamUpdate, "w")->value, b);
  EXPECT_EQ(index.find(OutputRole::StateUpdate, "w"), nullptr);
}

} // namespace
