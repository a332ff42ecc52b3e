//===- tests/unit/ir/ModuleCloneTest.cpp - Module::clone is a deep copy ------===//
//
// A clone shares nothing with its original, so changing one leaves the
// other as it was, and it names new values as the original would.
// (IRExamplesTest clones the training and partitioned steps of every example.)
//
//===----------------------------------------------------------------------===//

#include "ir/IR.h"
#include "ir/Printer.h"

#include <gtest/gtest.h>

using namespace planc;
using namespace planc::ir;

namespace {

/// A module with a field of every kind: a sharded parameter and input, a
/// multi-result op with renamed results, attributes, locations, paths,
/// outputs, a mesh and a remark.
std::unique_ptr<Module> smallModule() {
  auto m = std::make_unique<Module>();
  m->name = "small";
  m->mesh[unsigned(MeshAxis::TP)] = 2;
  m->remarks.push_back({DiagID::warn_constraint_reshards, {"t.plan", 3, 1}, {"a", "b", "c", "d"}});
  Value *w = m->addParam("w", TensorType({4, 8}, DType::F32));
  w->type.sharding.dims = {{}, {MeshAxis::TP}};
  w->path = "layer.w";
  w->loc = {"t.plan", 2, 5};
  w->frozen = true;
  Value *x = m->addInput("x", TensorType({2, 4}, DType::F32));
  Op *mm = m->append(OpKind::MatMul, {x, w}, {TensorType({2, 8}, DType::F32)}, {{"transpose_b", false}}, "y");
  mm->loc = {"t.plan", 4, 7};
  mm->path = "layer";
  Op *neg = m->append(OpKind::Neg, {mm->result()}, {TensorType({2, 8}, DType::F32)}, {}, "z");
  m->outputs.push_back({"z", neg->result()});
  return m;
}

TEST(ModuleCloneTest, ChangingTheCloneLeavesTheOriginal) {
  std::unique_ptr<Module> original = smallModule();
  const std::string before = toText(*original);
  std::unique_ptr<Module> copy = original->clone();
  ASSERT_EQ(toText(*copy), before);
  EXPECT_EQ(copy->mesh, original->mesh);
  ASSERT_EQ(copy->remarks.size(), 1u);
  EXPECT_EQ(copy->remarks[0].id, DiagID::warn_constraint_reshards);
  EXPECT_EQ(copy->remarks[0].args, original->remarks[0].args);

  // Nothing in the copy points into the original.
  for (const auto &op : copy->ops) {
    for (const Value *v : op->operands) EXPECT_EQ(copy->lookup(v->name), v);
    for (const Value *v : op->results) {
      EXPECT_EQ(copy->lookup(v->name), v);
      EXPECT_EQ(v->def, op.get());
    }
  }
  EXPECT_NE(copy->params[0], original->params[0]);
  EXPECT_EQ(copy->output("z"), copy->lookup("z"));

  copy->name = "changed";
  copy->params[0]->type = TensorType({4, 4}, DType::BF16);
  copy->params[0]->path = "other";
  copy->ops[0]->attrs["transpose_b"] = true;
  copy->ops[0]->loc.line = 9;
  ASSERT_TRUE(copy->rename(copy->lookup("y"), "y2"));
  copy->append(OpKind::Neg, {copy->lookup("z")}, {TensorType({2, 8}, DType::F32)}, {}, "z");
  copy->outputs.clear();
  copy->remarks.clear();
  copy->mesh[unsigned(MeshAxis::TP)] = 1;
  EXPECT_EQ(toText(*original), before);
  EXPECT_EQ(original->lookup("y2"), nullptr);
  EXPECT_NE(original->lookup("y"), nullptr);
  EXPECT_EQ(original->remarks.size(), 1u);
  EXPECT_EQ(original->mesh[unsigned(MeshAxis::TP)], 2);
}

TEST(ModuleCloneTest, TheCloneNamesNewValuesAsTheOriginalWould) {
  std::unique_ptr<Module> original = smallModule();
  // Free "y.1" once "y.2" is taken: the original's counter is past it.
  Value *y1 = original->addInput("y", TensorType({1}, DType::F32));
  Value *y2 = original->addInput("y", TensorType({1}, DType::F32));
  ASSERT_EQ(y1->name, "y.1");
  ASSERT_EQ(y2->name, "y.2");
  ASSERT_TRUE(original->rename(y1, "other"));
  ASSERT_EQ(original->uniqueName("y"), "y.3");
  std::unique_ptr<Module> copy = original->clone();
  EXPECT_EQ(copy->uniqueName("y"), original->uniqueName("y"));
  EXPECT_EQ(copy->uniqueName(""), original->uniqueName(""));
}

} // namespace
