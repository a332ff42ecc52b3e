//===- tests/unit/analysis/CommSummaryTest.cpp - collectives per rank, rank programs ===//
//
// A hand-written partitioned module on a 2 x 2 mesh (dp, tp): the message
// sizes S (local blocks; an all_gather's gathered output, a reduce_scatter's
// whole input) and the bytes each rank sends by the ring formulas, worked out
// by hand; pipeline-stage ops counted on their stage's ranks only; and the
// per-rank program (local types, local attributes, groups).
//
//===----------------------------------------------------------------------===//

#include "analysis/CommSummary.h"

#include "ir/Parser.h"
#include "OpTestHelpers.h"
#include "ir/Printer.h"

#include <gtest/gtest.h>

using namespace planc;
using namespace planc::ir;

namespace {

using planc::ir::testing::parse;

// x: [4, 8] split over dp (rows) and tp (cols); local block [2, 4].
// y = x @ w is a partial sum over tp: local block [2, 6] f32 = 48 bytes.
const char *kModule = R"(
module @t mesh(dp = 2, tp = 2) {
  param %w : f32[8, 6]{shard(0, tp)} init normal(0.02) path "mlp.w"
  input %x : f32[4, 8]{shard(0, dp), shard(1, tp)}
  %y = matmul(%x, %w) : f32[4, 6]{shard(0, dp), partial(tp)} path "mlp"
  %z = all_reduce(%y) {axis = "tp"} : f32[4, 6]{shard(0, dp)} path "mlp"
  %s = reduce_scatter(%y) {axis = "tp", dim = 1} : f32[4, 6]{shard(0, dp), shard(1, tp)} path "mlp"
  %g = all_gather(%s) {axis = "tp", dim = 1} : f32[4, 6]{shard(0, dp)} path "mlp"
  %a = all_gather(%w) {axis = "tp", dim = 0, phase = "backward"} : f32[8, 6] path "mlp.w"
  %m = all_reduce(%y) {axis = "tp", reduce = "max", phase = "optimizer"} : f32[4, 6]{shard(0, dp)}
  %t = all_to_all(%s) {axis = "tp", split_dim = 0, concat_dim = 1} : f32[4, 6]{shard(0, dp+tp)}
  %k = shard_slice(%z) {axis = "tp", dim = 1} : f32[4, 6]{shard(0, dp), shard(1, tp)}
  %b = broadcast(%z) {axis = "dp", root = 0} : f32[4, 6]{shard(0, dp)}
  %r = reshape(%z) {shape = [24]} : f32[24]{shard(0, dp)}
  return %g as "g", %a as "a", %k as "k", %r as "r"
}
)";

TEST(CommSummaryTest, PaddedZeroShardsSendTheirPadding) {
  // ZeRO over dp = 3 of 7 rows: shards of ceil(7 / 3) = 3 rows, the last
  // padded. The ring moves n = 3 shards of [3, 2] f32 = 72 bytes, not the
  // 56 of the data: (n - 1) / n * 72 = 48 sent per rank, both ways.
  auto m = parse(R"(
module @z mesh(dp = 3) {
  input %g : f32[7, 2]{partial(dp)}
  %s = reduce_scatter(%g) {axis = "dp", dim = 0} : f32[7, 2]{shard(0, dp)}
  %w = all_gather(%s) {axis = "dp", dim = 0} : f32[7, 2]
  return %w as "w"
}
)");
  ASSERT_TRUE(m);
  CommSummary s = summarizeComm(*m, MeshLayout(m->mesh));
  ASSERT_EQ(s.lists.size(), 1u);
  ASSERT_EQ(s.lists[0].ops.size(), 2u);
  for (const CommOp &op : s.lists[0].ops) {
    EXPECT_EQ(op.messageBytes, 72u) << spelling(op.kind);
    EXPECT_DOUBLE_EQ(op.sentBytes, 48) << spelling(op.kind);
  }
}

TEST(CommSummaryTest, MessageSizesAndRingBytes) {
  auto m = parse(kModule);
  ASSERT_TRUE(m);
  MeshLayout mesh(m->mesh);
  CommSummary s = summarizeComm(*m, mesh);
  // An SPMD program: every rank has the same list.
  ASSERT_EQ(s.lists.size(), 1u);
  EXPECT_EQ(s.lists[0].ranks, (std::vector<int64_t>{0, 1, 2, 3}));
  const auto &ops = s.lists[0].ops;
  ASSERT_EQ(ops.size(), 8u);
  struct Want {
    OpKind kind;
    const char *phase;
    uint64_t S;
    double sent;
  } want[] = {
      {OpKind::AllReduce, "forward", 48, 48},      // 2(n-1)/n * 48, n = 2
      {OpKind::ReduceScatter, "forward", 48, 24},  // the whole input [2, 6]
      {OpKind::AllGather, "forward", 48, 24},      // the gathered output [2, 6]
      {OpKind::AllGather, "backward", 192, 96},    // [8, 6] from [4, 6] each
      {OpKind::AllReduce, "optimizer", 48, 48},
      {OpKind::AllToAll, "forward", 24, 12},       // the operand's block [2, 3]
      {OpKind::ShardSlice, "forward", 48, 0},      // no communication
      {OpKind::Broadcast, "forward", 48, 48},      // S, over dp
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(ops[i].kind, want[i].kind);
    EXPECT_EQ(ops[i].phase, want[i].phase);
    EXPECT_EQ(ops[i].messageBytes, want[i].S);
    EXPECT_DOUBLE_EQ(ops[i].sentBytes, want[i].sent);
    EXPECT_EQ(ops[i].groupSize, 2);
  }
  EXPECT_EQ(ops[0].path, "mlp");
  EXPECT_EQ(ops[4].reduce, "max");
  EXPECT_EQ(ops[7].axis, MeshAxis::DP);
  EXPECT_EQ(ops[3].block, (Shape{8, 6}));

  std::string text;
  llvm::raw_string_ostream os(text);
  printCommSummary(s, os);
  os.flush();
  EXPECT_NE(text.find("ranks 0-3: 8 ops"), std::string::npos) << text;
  EXPECT_NE(text.find("all_reduce(max)"), std::string::npos) << text;
  EXPECT_NE(text.find("total: 8 ops, S 504 bytes, sent 300 bytes"), std::string::npos) << text;
}

TEST(CommSummaryTest, RingFormulas) {
  EXPECT_DOUBLE_EQ(sentBytes(OpKind::AllReduce, 4, 1000), 1500);
  EXPECT_DOUBLE_EQ(sentBytes(OpKind::ReduceScatter, 4, 1000), 750);
  EXPECT_DOUBLE_EQ(sentBytes(OpKind::AllGather, 8, 800), 700);
  EXPECT_DOUBLE_EQ(sentBytes(OpKind::AllToAll, 2, 100), 50);
  EXPECT_DOUBLE_EQ(sentBytes(OpKind::Broadcast, 4, 100), 100);
  EXPECT_DOUBLE_EQ(sentBytes(OpKind::Send, 2, 100), 100);
  EXPECT_DOUBLE_EQ(sentBytes(OpKind::Recv, 2, 100), 0);
  EXPECT_DOUBLE_EQ(sentBytes(OpKind::ShardSlice, 2, 100), 0);
  EXPECT_DOUBLE_EQ(sentBytes(OpKind::AllReduce, 1, 100), 0);
  EXPECT_DOUBLE_EQ(sentBytes(OpKind::AllReduce, 3, 4), 16.0 / 3);
  EXPECT_EQ(formatRanks({0, 1, 2, 5, 7, 8}), "0-2, 5, 7-8");
}

TEST(CommSummaryTest, PipelineStagesDifferByRank) {
  auto m = parse(R"(
module @p mesh(pp = 2) {
  input %x : f32[4, 8]
  send(%x) {axis = "pp", peer_offset = 1, pipeline_stage = 0, tag = 0}
  %r = recv() {axis = "pp", dtype = "f32", peer_offset = -1, pipeline_stage = 1, shape = [4, 8], tag = 0} : f32[4, 8]
  %y = all_reduce(%r) {axis = "pp"} : f32[4, 8]
  return %y as "y"
}
)");
  ASSERT_TRUE(m);
  CommSummary s = summarizeComm(*m, MeshLayout(m->mesh));
  ASSERT_EQ(s.lists.size(), 2u);
  EXPECT_EQ(s.lists[0].ranks, std::vector<int64_t>{0});
  ASSERT_EQ(s.lists[0].ops.size(), 2u);
  EXPECT_EQ(s.lists[0].ops[0].kind, OpKind::Send);
  EXPECT_DOUBLE_EQ(s.lists[0].ops[0].sentBytes, 128);
  EXPECT_EQ(s.lists[1].ranks, std::vector<int64_t>{1});
  EXPECT_EQ(s.lists[1].ops[0].kind, OpKind::Recv);
  EXPECT_EQ(s.lists[1].ops[0].messageBytes, 128u);
  EXPECT_DOUBLE_EQ(s.lists[1].ops[0].sentBytes, 0);
}

} // namespace
