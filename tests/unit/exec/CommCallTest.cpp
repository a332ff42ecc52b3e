//===- tests/unit/exec/CommCallTest.cpp - communication steps as calls ----===//
//
// exec::commCallOf, the one reading of a communication step's attributes
// that the interpreter and the CPU backend share: messages and collectives
// of the hand-built plans, negative dims normalised, and the steps it turns
// down with their reason.

#include "ExecTestPlans.h"

#include "exec/CommCall.h"

#include <gtest/gtest.h>

using namespace planc;
using namespace planc::exec;
using namespace planc::exec::testplans;

namespace {

TEST(CommCallTest, MessagesNameTheirBufferPeerAndTag) {
  ExecutionPlan plan = pipelinePlan();
  std::string why;
  std::optional<CommCall> send = commCallOf(plan.programs[0], 1, why);
  ASSERT_TRUE(send) << why;
  EXPECT_EQ(send->kind, CommCall::Kind::Send);
  EXPECT_EQ(send->axis, MeshAxis::PP);
  EXPECT_EQ(send->input, 2);
  EXPECT_EQ(send->output, -1);
  EXPECT_EQ(send->block, 2);
  EXPECT_EQ(send->peerOffset, 1);
  EXPECT_EQ(send->tag, 0);
  EXPECT_EQ(send->outputBytes, 16u); // f32[1, 4]

  std::optional<CommCall> recv = commCallOf(plan.programs[1], 0, why);
  ASSERT_TRUE(recv) << why;
  EXPECT_EQ(recv->kind, CommCall::Kind::Recv);
  EXPECT_EQ(recv->input, -1);
  EXPECT_EQ(recv->output, 1);
  EXPECT_EQ(recv->block, 1);
  EXPECT_EQ(recv->peerOffset, -1);
}

TEST(CommCallTest, CollectivesReadTheirAttributes) {
  ExecutionPlan plan = pipelinePlan();
  std::string why;
  std::optional<CommCall> sum = commCallOf(plan.programs[0], 4, why);
  ASSERT_TRUE(sum) << why;
  EXPECT_EQ(sum->kind, CommCall::Kind::Collective);
  EXPECT_EQ(sum->collective, CommCall::Collective::AllReduce);
  EXPECT_EQ(sum->reduce, CommCall::Reduce::Sum);
  EXPECT_EQ(sum->axis, MeshAxis::DP);
  EXPECT_EQ(sum->input, 4);
  EXPECT_EQ(sum->output, 5);
  EXPECT_EQ(sum->outputBytes, 64u); // f32[4, 4]

  // An all_gather of dim -2 over dp: dim 0, the output's rows gathered.
  RankProgram &p = plan.programs[0];
  p.steps[4] = comm(step(ir::OpKind::AllGather, ir::Work::Forward, 0, {2}, {4}, {{"axis", "dp"}, {"dim", int64_t(-2)}}), 2);
  std::optional<CommCall> gather = commCallOf(p, 4, why);
  ASSERT_TRUE(gather) << why;
  EXPECT_EQ(gather->collective, CommCall::Collective::AllGather);
  EXPECT_EQ(gather->dim, 0);
  EXPECT_EQ(gather->gatheredRows, 4);
  EXPECT_EQ(gather->block, 2);

  p.steps[4] = comm(step(ir::OpKind::AllReduce, ir::Work::Backward, -1, {4}, {5}, {{"axis", "tp"}, {"reduce", "max"}}), 2);
  std::optional<CommCall> max = commCallOf(p, 4, why);
  ASSERT_TRUE(max) << why;
  EXPECT_EQ(max->reduce, CommCall::Reduce::Max);
  EXPECT_EQ(max->axis, MeshAxis::TP);

  p.steps[4] = comm(step(ir::OpKind::AllToAll, ir::Work::Forward, 0, {2}, {3},
                         {{"axis", "dp"}, {"split_dim", int64_t(-1)}, {"concat_dim", int64_t(0)}}),
                    2);
  std::optional<CommCall> swap = commCallOf(p, 4, why);
  ASSERT_TRUE(swap) << why;
  EXPECT_EQ(swap->collective, CommCall::Collective::AllToAll);
  EXPECT_EQ(swap->splitDim, 1);
  EXPECT_EQ(swap->concatDim, 0);
}

TEST(CommCallTest, StepsNoCallRunsSayWhy) {
  ExecutionPlan plan = pipelinePlan();
  RankProgram &p = plan.programs[0];
  std::string why;
  p.steps[4].attrs = ir::AttrMap{};
  EXPECT_FALSE(commCallOf(p, 4, why));
  EXPECT_EQ(why, "the step names no mesh axis");

  p.steps[4] = comm(step(ir::OpKind::AllReduce, ir::Work::Backward, -1, {4, 0}, {5}, {{"axis", "dp"}}), 2);
  EXPECT_FALSE(commCallOf(p, 4, why));
  EXPECT_EQ(why, "a collective reads one buffer and writes one");

  p.steps[1] = comm(step(ir::OpKind::Send, ir::Work::Forward, 0, {}, {}, {{"axis", "pp"}}), 0);
  EXPECT_FALSE(commCallOf(p, 1, why));
  EXPECT_EQ(why, "a message moves one buffer");

  p.steps[0] = step(ir::OpKind::MatMul, ir::Work::Forward, 0, {1}, {2}, {{"axis", "dp"}});
  EXPECT_FALSE(commCallOf(p, 0, why));
  EXPECT_EQ(why, "no communicator call runs this op");
}

} // namespace
