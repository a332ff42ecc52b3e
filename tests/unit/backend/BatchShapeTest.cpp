//===- tests/unit/backend/BatchShapeTest.cpp - the batch a model's inputs want -===//
//
// The shape comes from the model's `tokens` and `targets` inputs and the
// embedding table the tokens index; any other model is an error saying what
// the training data needs.
//
//===----------------------------------------------------------------------===//

#include "backend/interp/BatchShape.h"

#include "ir/IR.h"

#include <gtest/gtest.h>

using namespace planc;
using namespace planc::ir;
using namespace planc::interp;

namespace {

TEST(BatchShapeTest, BatchShapeComesFromTheModelsInputs) {
  Module m;
  m.name = "lm";
  Value *table = m.addParam("wte", TensorType({50, 8}, DType::F32));
  Value *tokens = m.addInput("tokens", TensorType({3, 8}, DType::I32));
  m.addInput("targets", TensorType({3, 8}, DType::I32));
  m.append(OpKind::Gather, {table, tokens}, {TensorType({3, 8, 8}, DType::F32)});
  auto shape = batchShapeOf(m);
  ASSERT_TRUE(bool(shape)) << llvm::toString(shape.takeError());
  EXPECT_EQ(shape->batch, 3);
  EXPECT_EQ(shape->seq, 8);
  EXPECT_EQ(shape->vocab, 50);
  EXPECT_EQ(shape->type, runtime::ElementType::I32);

  Module other;
  other.name = "regress";
  other.addInput("x", TensorType({3, 8}, DType::F32));
  std::string msg = llvm::toString(batchShapeOf(other).takeError());
  EXPECT_NE(msg.find("the training data fills 'input tokens : i32[batch, seq]' and 'input targets : i32[batch, seq]'; "
                     "model 'regress' has another input, 'x'"),
            std::string::npos)
      << msg;

  Module ragged;
  ragged.name = "ragged";
  ragged.addInput("tokens", TensorType({3, 8}, DType::I32));
  ragged.addInput("targets", TensorType({3, 7}, DType::I32));
  msg = llvm::toString(batchShapeOf(ragged).takeError());
  EXPECT_NE(msg.find("model 'ragged' has tokens i32[3, 8] but targets i32[3, 7]"), std::string::npos) << msg;

  Module noTargets;
  noTargets.name = "half";
  noTargets.addInput("tokens", TensorType({3, 8}, DType::I32));
  msg = llvm::toString(batchShapeOf(noTargets).takeError());
  EXPECT_NE(msg.find("model 'half' has no input 'targets'"), std::string::npos) << msg;
}

} // namespace
