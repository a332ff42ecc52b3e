//===- tests/unit/ir/OpFactsTest.cpp - the facts of the op table -------------===//
//
// Every op kind has its facts in the op table (ir/OpDef.h), and the
// predicates passes ask agree with the lists the passes used to keep
// themselves: the kinds of each fact are spelled out here, so a new op that
// should have a fact and lacks it (or the reverse) fails here.
//
//===----------------------------------------------------------------------===//

#include "analysis/CommSummary.h"
#include "ir/OpDef.h"

#include <gtest/gtest.h>

#include <set>

using namespace planc;
using namespace planc::ir;

namespace {

std::vector<OpKind> allKinds() {
  std::vector<OpKind> kinds;
  for (size_t i = 0; i < size_t(OpKind::NumOps); ++i) kinds.push_back(OpKind(i));
  return kinds;
}

/// The kinds for which `pred` holds.
std::set<OpKind> kindsWhere(bool (*pred)(OpKind)) {
  std::set<OpKind> out;
  for (OpKind k : allKinds())
    if (pred(k)) out.insert(k);
  return out;
}

using S = std::set<OpKind>;

TEST(OpFacts, EveryKindHasItsEntry) {
  for (OpKind k : allKinds()) {
    const OpDef &def = opDef(k);
    EXPECT_EQ(def.kind, k) << spelling(k);
    EXPECT_TRUE(def.infer && def.eval && def.flops) << spelling(k);
    int operands = operandCount(k);
    if (!def.operandRoles.empty() && operands >= 0) EXPECT_EQ(def.operandRoles.size(), size_t(operands)) << spelling(k);
    if (def.has(kInPlace)) {
      ASSERT_EQ(def.inPlaceOf.size(), resultCount(k)) << spelling(k);
      for (int i : def.inPlaceOf) EXPECT_TRUE(i >= -1 && (operands < 0 || i < operands)) << spelling(k);
    } else {
      EXPECT_TRUE(def.inPlaceOf.empty()) << spelling(k);
    }
  }
}

TEST(OpFacts, CommunicationKinds) {
  const S collectives{OpKind::AllReduce, OpKind::ReduceScatter, OpKind::AllGather, OpKind::AllToAll,
                      OpKind::Broadcast};
  const S messages{OpKind::Send, OpKind::Recv};
  EXPECT_EQ(kindsWhere(isCollective), collectives);
  EXPECT_EQ(kindsWhere(isPointToPoint), messages);
  EXPECT_EQ(kindsWhere(isReducingCollective), (S{OpKind::AllReduce, OpKind::ReduceScatter}));
  S exchanges = collectives;
  exchanges.insert(messages.begin(), messages.end());
  EXPECT_EQ(kindsWhere(exchangesData), exchanges);
  // What canonicalize keeps though unused: every rank issues these in order.
  EXPECT_EQ(kindsWhere(hasSideEffect), exchanges);
  EXPECT_EQ(kindsWhere(picksRankBlock), S{OpKind::ShardSlice});
  EXPECT_EQ(kindsWhere(picksStage), S{OpKind::StageMerge});
  S communication = exchanges;
  communication.insert(OpKind::ShardSlice);
  EXPECT_EQ(kindsWhere(isCommunication), communication);
}

TEST(OpFacts, ElementwiseAndZeroKeeping) {
  const S elementwise{OpKind::Neg,      OpKind::Exp,         OpKind::Log,      OpKind::Sqrt,    OpKind::Rsqrt,
                      OpKind::Tanh,     OpKind::Relu,        OpKind::Gelu,     OpKind::Silu,    OpKind::Sigmoid,
                      OpKind::Abs,      OpKind::Pow,         OpKind::Scale,    OpKind::AddScalar, OpKind::Add,
                      OpKind::Sub,      OpKind::Mul,         OpKind::Div,      OpKind::GeluGrad, OpKind::SiluGrad,
                      OpKind::SigmoidGrad, OpKind::TanhGrad, OpKind::ReluGrad, OpKind::Cast,    OpKind::Select,
                      OpKind::FusedElementwise};
  EXPECT_EQ(kindsWhere(isElementwise), elementwise);
  // The ops sharding propagation lets run on a zero-padded ZeRO shard.
  EXPECT_EQ(kindsWhere(keepsPaddingZero), (S{OpKind::Cast, OpKind::Transpose, OpKind::Neg, OpKind::Scale, OpKind::Add,
                                             OpKind::Sub, OpKind::Mul, OpKind::Select}));
  EXPECT_EQ(kindsWhere(isView), S{OpKind::Reshape});
}

TEST(OpFacts, UpdatesAndTheirOperandRoles) {
  EXPECT_EQ(kindsWhere(isOptimizerUpdate), (S{OpKind::SgdUpdate, OpKind::AdamUpdate, OpKind::Adam8bitUpdate}));
  EXPECT_EQ(kindsWhere(isInPlace),
            (S{OpKind::SgdUpdate, OpKind::AdamUpdate, OpKind::Adam8bitUpdate, OpKind::LossScaleUpdate}));
  using R = OperandRole;
  EXPECT_EQ(opDef(OpKind::SgdUpdate).operandRoles,
            (std::vector<R>{R::Parameter, R::Gradient, R::State, R::HyperParameter}));
  EXPECT_EQ(opDef(OpKind::AdamUpdate).operandRoles,
            (std::vector<R>{R::Parameter, R::Gradient, R::State, R::State, R::HyperParameter, R::HyperParameter}));
  EXPECT_EQ(opDef(OpKind::Adam8bitUpdate).operandRoles,
            (std::vector<R>{R::Parameter, R::Gradient, R::BlockState, R::BlockState, R::BlockState, R::BlockState,
                            R::HyperParameter, R::HyperParameter}));
  // Each result is the next value of the operand with the same role.
  EXPECT_EQ(opDef(OpKind::SgdUpdate).inPlaceOf, (std::vector<int>{0, 2}));
  EXPECT_EQ(opDef(OpKind::AdamUpdate).inPlaceOf, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(opDef(OpKind::Adam8bitUpdate).inPlaceOf, (std::vector<int>{0, 2, 3, 4, 5}));
  EXPECT_EQ(opDef(OpKind::LossScaleUpdate).inPlaceOf, (std::vector<int>{0, 1}));
  // Every other op has no roles: all its operands are data.
  for (OpKind k : allKinds())
    if (!isOptimizerUpdate(k)) EXPECT_EQ(opDef(k).roleOf(0), R::Data) << spelling(k);
}

TEST(OpFacts, ShapeAttributes) {
  std::set<std::pair<OpKind, std::string>> shapes, rows;
  for (OpKind k : allKinds()) {
    if (const char *a = opDef(k).shapeAttr) shapes.insert({k, a});
    if (const char *a = opDef(k).rowsAttr) rows.insert({k, a});
  }
  EXPECT_EQ(shapes, (std::set<std::pair<OpKind, std::string>>{{OpKind::Reshape, "shape"},
                                                               {OpKind::BroadcastTo, "shape"},
                                                               {OpKind::SumTo, "shape"},
                                                               {OpKind::Fill, "shape"},
                                                               {OpKind::Recv, "shape"}}));
  EXPECT_EQ(rows, (std::set<std::pair<OpKind, std::string>>{{OpKind::ScatterAdd, "rows"}}));
}

TEST(OpFacts, WireBytesOfEachCommunication) {
  // Ring formulas: all_reduce 2(n-1)/n S; reduce_scatter, all_gather,
  // all_to_all (n-1)/n S; broadcast and send S; nothing else sends.
  for (OpKind k : allKinds()) {
    double sent = sentBytes(k, 4, 1000);
    switch (k) {
    case OpKind::AllReduce: EXPECT_DOUBLE_EQ(sent, 1500); break;
    case OpKind::ReduceScatter: case OpKind::AllGather: case OpKind::AllToAll: EXPECT_DOUBLE_EQ(sent, 750); break;
    case OpKind::Broadcast: case OpKind::Send: EXPECT_DOUBLE_EQ(sent, 1000); break;
    default: EXPECT_EQ(sent, 0) << spelling(k); EXPECT_EQ(opDef(k).wireBytes, nullptr) << spelling(k);
    }
  }
}

TEST(OpFacts, DimLabelsWhereThePartitionerHasNoExpansion) {
  // The ops without a sharding rule: those the partitioner expands itself
  // (passes/ShardingHandlers.cpp), the communication it inserts, and the
  // ones it keeps whole.
  const S noRule{OpKind::Reshape,      OpKind::VocabCeStats,
                 OpKind::VocabCeGrad,  OpKind::GlobalNorm,    OpKind::SgdUpdate,     OpKind::AdamUpdate,
                 OpKind::Adam8bitUpdate, OpKind::AllReduce,   OpKind::ReduceScatter, OpKind::AllGather,
                 OpKind::AllToAll,     OpKind::Send,          OpKind::Recv,          OpKind::Broadcast,
                 OpKind::ShardSlice,   OpKind::StageMerge,    OpKind::AllFinite,     OpKind::LossScaleUpdate};
  S have;
  for (OpKind k : allKinds())
    if (!opDef(k).dimLabels) have.insert(k);
  EXPECT_EQ(have, noRule);
}

} // namespace
