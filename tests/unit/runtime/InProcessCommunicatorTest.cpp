//===- tests/unit/runtime/InProcessCommunicatorTest.cpp - every rank in one process -===//
//
// Each kind of collective against values worked out by hand (uneven
// reduce_scatter and all_gather, all_to_all, broadcast from a root that is not
// member 0, sums rounded once), messages matched by channel in order, and the
// errors: calls members disagree on, malformed calls, sizes that do not match,
// and what pending() says while ranks wait.
//
//===----------------------------------------------------------------------===//

#include "runtime/BlockExchange.h"
#include "runtime/ElementBits.h"
#include "runtime/InProcessCommunicator.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace planc::runtime;

namespace {

using Bytes = std::vector<uint8_t>;

Bytes bytesOf(ElementType t, const std::vector<double> &v) {
  Bytes b(v.size() * byteSize(t));
  encodeBuffer(t, v.data(), v.size(), b.data());
  return b;
}

std::vector<double> valuesOf(ElementType t, const Bytes &b) {
  std::vector<double> v(b.size() / byteSize(t));
  decodeBuffer(t, b.data(), v.size(), v.data());
  return v;
}

CollectiveCall call(CollectiveKind kind, std::vector<int64_t> group, std::vector<int64_t> shape,
                    ElementType type = ElementType::F32) {
  CollectiveCall c;
  c.kind = kind;
  c.type = type;
  c.group = std::move(group);
  c.shape = std::move(shape);
  return c;
}

/// Starts `c` on every member in member order with send[j] and a receive
/// buffer of the result's size; checks that only the last start completes
/// the call, and returns the receive buffers' values.
std::vector<std::vector<double>> runCollective(InProcessWorld &world, const CollectiveCall &c,
                                               const std::vector<std::vector<double>> &send) {
  size_t n = c.group.size();
  int64_t resultElements = 1;
  for (int64_t d : collectiveResultShape(c)) resultElements *= d;
  std::vector<Bytes> in(n), out(n);
  std::vector<Request> requests(n);
  for (size_t j = 0; j < n; ++j) {
    in[j] = bytesOf(c.type, send[j]);
    out[j] = Bytes(size_t(resultElements) * byteSize(c.type), 0xAB);
    std::string error;
    requests[j] = world.rank(c.group[j]).start(c, in[j].data(), out[j].data(), error);
    EXPECT_NE(requests[j], 0u) << error;
    EXPECT_EQ(error, "");
    for (size_t k = 0; k <= j; ++k) {
      if (j + 1 == n) break;
      std::string e;
      EXPECT_FALSE(world.rank(c.group[k]).test(requests[k], e)) << "member " << k << " done before the last started";
    }
  }
  std::vector<std::vector<double>> result;
  for (size_t j = 0; j < n; ++j) {
    std::string error = "unset";
    EXPECT_TRUE(world.rank(c.group[j]).test(requests[j], error));
    EXPECT_EQ(error, "");
    result.push_back(valuesOf(c.type, out[j]));
  }
  EXPECT_EQ(world.pending(), "");
  return result;
}

TEST(InProcessCommunicatorTest, AllReduceSumsInMemberOrderAndRoundsOnce) {
  InProcessWorld world(3);
  auto c = call(CollectiveKind::AllReduce, {0, 1, 2}, {2, 2});
  auto r = runCollective(world, c, {{1, 2, 3, 4}, {10, 20, 30, 40}, {100, 200, 300, 400}});
  for (const auto &v : r) EXPECT_EQ(v, (std::vector<double>{111, 222, 333, 444}));

  // bf16 keeps 8 significant bits: 256 + 1 rounds back to 256 step by step
  // (a tie, to even), but 256 + 1 + 1 = 258 is a bf16 value when rounded once.
  auto b = call(CollectiveKind::AllReduce, {0, 1, 2}, {1}, ElementType::BF16);
  for (const auto &v : runCollective(world, b, {{256}, {1}, {1}})) EXPECT_EQ(v, (std::vector<double>{258}));

  auto m = call(CollectiveKind::AllReduce, {2, 0}, {3});
  m.op = ReduceOp::Max;
  for (const auto &v : runCollective(world, m, {{1, -5, 7}, {3, -6, 2}})) EXPECT_EQ(v, (std::vector<double>{3, -5, 7}));
}

/// Runs `c` on two members whose receive buffer is their own input; the
/// two buffers afterwards.
std::pair<std::vector<double>, std::vector<double>> runInPlace(const CollectiveCall &c, const std::vector<double> &in0,
                                                               const std::vector<double> &in1) {
  InProcessWorld world(2);
  Bytes a = bytesOf(c.type, in0), b = bytesOf(c.type, in1);
  std::string error;
  Request ra = world.rank(0).start(c, a.data(), a.data(), error);
  Request rb = world.rank(1).start(c, b.data(), b.data(), error);
  EXPECT_TRUE(ra && rb) << error;
  EXPECT_TRUE(world.rank(0).test(ra, error));
  EXPECT_TRUE(world.rank(1).test(rb, error));
  return {valuesOf(c.type, a), valuesOf(c.type, b)};
}

TEST(InProcessCommunicatorTest, AllReduceInPlace) {
  auto [a, b] = runInPlace(call(CollectiveKind::AllReduce, {0, 1}, {2}), {1, 2}, {3, 5});
  EXPECT_EQ(a, (std::vector<double>{4, 7}));
  EXPECT_EQ(b, (std::vector<double>{4, 7}));
}

TEST(InProcessCommunicatorTest, UnevenReduceScatterPadsTheLastBlocks) {
  // [2, 4] blocks cut along dim 1 among 3 members: ceil(4 / 3) = 2 columns
  // each; member 2's columns 4 and 5 are past the end, so zeros.
  InProcessWorld world(3);
  auto c = call(CollectiveKind::ReduceScatter, {0, 1, 2}, {2, 4});
  c.dim = 1;
  EXPECT_EQ(collectiveResultShape(c), (std::vector<int64_t>{2, 2}));
  auto r = runCollective(world, c, {{1, 2, 3, 4, 5, 6, 7, 8}, {10, 20, 30, 40, 50, 60, 70, 80}, {0, 0, 0, 0, 0, 0, 0, 100}});
  // The sum is [[11, 22, 33, 44], [55, 66, 77, 188]].
  EXPECT_EQ(r[0], (std::vector<double>{11, 22, 55, 66}));
  EXPECT_EQ(r[1], (std::vector<double>{33, 44, 77, 188}));
  EXPECT_EQ(r[2], (std::vector<double>{0, 0, 0, 0}));

  // Along dim 0, 5 rows among 2 members: 3 rows, then 2 and a padding row.
  auto rows = call(CollectiveKind::ReduceScatter, {1, 0}, {5, 1});
  auto s = runCollective(world, rows, {{1, 2, 3, 4, 5}, {10, 20, 30, 40, 50}});
  EXPECT_EQ(s[0], (std::vector<double>{11, 22, 33})) << "member 0 is rank 1";
  EXPECT_EQ(s[1], (std::vector<double>{44, 55, 0}));
}

TEST(InProcessCommunicatorTest, LargeReductionsGoPieceByPiece) {
  // More elements than one piece of the streaming reduction (2^12), with a
  // remainder: every element summed in member order in f64 and rounded once.
  InProcessWorld world(3);
  const int64_t rows = 3, cols = 7001; // 21003 elements
  std::vector<std::vector<double>> send(3, std::vector<double>(size_t(rows * cols)));
  for (size_t j = 0; j < 3; ++j)
    for (size_t i = 0; i < send[j].size(); ++i) send[j][i] = double(float(0.1 * double(i % 97) + double(j) * 1e-3));
  auto sum = [&](size_t i) { return double(float(send[0][i] + send[1][i] + send[2][i])); };
  auto r = runCollective(world, call(CollectiveKind::AllReduce, {0, 1, 2}, {rows, cols}), send);
  for (size_t j = 0; j < 3; ++j)
    for (size_t i = 0; i < send[0].size(); i += 997) ASSERT_EQ(r[j][i], sum(i)) << "member " << j << ", element " << i;
  EXPECT_EQ(r[2].back(), sum(send[0].size() - 1));
  // Cut along dim 1: ceil(7001 / 3) = 2334 columns each, the last member's
  // last column past the end.
  auto c = call(CollectiveKind::ReduceScatter, {0, 1, 2}, {rows, cols});
  c.dim = 1;
  auto s = runCollective(world, c, send);
  for (size_t j = 0; j < 3; ++j)
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t k = 0; k < 2334; ++k) {
        const int64_t col = int64_t(j) * 2334 + k;
        const double want = col < cols ? sum(size_t(row * cols + col)) : 0.0;
        ASSERT_EQ(s[j][size_t(row * 2334 + k)], want) << "member " << j << ", row " << row << ", column " << col;
      }
}

TEST(InProcessCommunicatorTest, ReduceScatterIntoItsOwnInput) {
  // A member's result written over its own input: every input is read first.
  auto [a, b] = runInPlace(call(CollectiveKind::ReduceScatter, {0, 1}, {4}), {1, 2, 3, 4}, {10, 20, 30, 40});
  EXPECT_EQ(a, (std::vector<double>{11, 22, 3, 4}));
  EXPECT_EQ(b, (std::vector<double>{33, 44, 30, 40}));
}

TEST(InProcessCommunicatorTest, UnevenAllGatherDropsThePadding) {
  // The inverse of the first scatter above: [2, 2] blocks along dim 1, the
  // result keeps 4 of the 6 gathered columns (member 2's are padding).
  InProcessWorld world(3);
  auto c = call(CollectiveKind::AllGather, {0, 1, 2}, {2, 2});
  c.dim = 1;
  c.gatheredRows = 4;
  EXPECT_EQ(collectiveResultShape(c), (std::vector<int64_t>{2, 4}));
  auto r = runCollective(world, c, {{1, 2, 5, 6}, {3, 4, 7, 8}, {-1, -1, -1, -1}});
  for (const auto &v : r) EXPECT_EQ(v, (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}));

  // Along dim 0 with a padding row inside member 1's block: 3 + 2 rows.
  auto rows = call(CollectiveKind::AllGather, {0, 1}, {3});
  rows.gatheredRows = 5;
  for (const auto &v : runCollective(world, rows, {{1, 2, 3}, {4, 5, 0}})) EXPECT_EQ(v, (std::vector<double>{1, 2, 3, 4, 5}));

  // Bytes move unchanged: an i64 no f64 holds survives.
  auto wide = call(CollectiveKind::AllGather, {0, 1}, {1}, ElementType::I64);
  wide.gatheredRows = 2;
  int64_t big = (int64_t(1) << 53) + 1, out[2] = {0, 0}, out1[2] = {0, 0}, other = -3;
  std::string error;
  Request a = world.rank(0).start(wide, &big, out, error);
  Request b = world.rank(1).start(wide, &other, out1, error);
  ASSERT_TRUE(a && b) << error;
  EXPECT_TRUE(world.rank(0).test(a, error) && world.rank(1).test(b, error));
  EXPECT_EQ(out[0], big);
  EXPECT_EQ(out[1], -3);
  EXPECT_EQ(out1[0], big);
}

TEST(InProcessCommunicatorTest, AllToAllSendsPieceJToMemberJ) {
  InProcessWorld world(2);
  auto c = call(CollectiveKind::AllToAll, {0, 1}, {2, 4});
  c.splitDim = 1;
  c.concatDim = 0;
  EXPECT_EQ(collectiveResultShape(c), (std::vector<int64_t>{4, 2}));
  auto r = runCollective(world, c, {{0, 1, 2, 3, 4, 5, 6, 7}, {10, 11, 12, 13, 14, 15, 16, 17}});
  EXPECT_EQ(r[0], (std::vector<double>{0, 1, 4, 5, 10, 11, 14, 15}));
  EXPECT_EQ(r[1], (std::vector<double>{2, 3, 6, 7, 12, 13, 16, 17}));

  // Split and concat along the same dim: a transpose of row blocks.
  auto same = call(CollectiveKind::AllToAll, {0, 1}, {4});
  auto t = runCollective(world, same, {{1, 2, 3, 4}, {5, 6, 7, 8}});
  EXPECT_EQ(t[0], (std::vector<double>{1, 2, 5, 6}));
  EXPECT_EQ(t[1], (std::vector<double>{3, 4, 7, 8}));
}

TEST(InProcessCommunicatorTest, BroadcastCopiesTheRootMembersBlock) {
  InProcessWorld world(3);
  auto c = call(CollectiveKind::Broadcast, {2, 0, 1}, {3});
  c.root = 1; // member 1 is rank 0
  auto r = runCollective(world, c, {{1, 1, 1}, {7, 8, 9}, {0, 0, 0}});
  for (const auto &v : r) EXPECT_EQ(v, (std::vector<double>{7, 8, 9}));
}

TEST(InProcessCommunicatorTest, CollectivesOfAGroupMatchInOrder) {
  InProcessWorld world(2);
  auto a = call(CollectiveKind::AllReduce, {0, 1}, {1});
  auto b = call(CollectiveKind::Broadcast, {0, 1}, {1});
  float x0 = 1, y0 = 2, x1 = 10, y1 = 20, ox0, oy0, ox1, oy1;
  std::string error;
  Request ra0 = world.rank(0).start(a, &x0, &ox0, error);
  Request rb0 = world.rank(0).start(b, &y0, &oy0, error);
  EXPECT_NE(world.pending().find("rank 0: broadcast f32[1] root 0 on group {0, 1}, waiting for rank 1"),
            std::string::npos)
      << world.pending();
  Request ra1 = world.rank(1).start(a, &x1, &ox1, error);
  Request rb1 = world.rank(1).start(b, &y1, &oy1, error);
  ASSERT_TRUE(ra0 && rb0 && ra1 && rb1) << error;
  for (auto [rank, req] : {std::pair{0, ra0}, {0, rb0}, {1, ra1}, {1, rb1}}) EXPECT_TRUE(world.rank(rank).test(req, error));
  EXPECT_EQ(ox0, 11);
  EXPECT_EQ(ox1, 11);
  EXPECT_EQ(oy0, 2);
  EXPECT_EQ(oy1, 2);
}

TEST(InProcessCommunicatorTest, MembersThatStartDifferentCallsAreErrors) {
  InProcessWorld world(2);
  float in[4] = {1, 2, 3, 4}, out[4];
  std::string error;
  Request r0 = world.rank(0).start(call(CollectiveKind::AllReduce, {0, 1}, {4}), in, out, error);
  ASSERT_NE(r0, 0u);
  EXPECT_EQ(world.rank(1).start(call(CollectiveKind::AllReduce, {0, 1}, {3}), in, out, error), 0u);
  EXPECT_EQ(error, "rank 1 starts all_reduce f32[3] on group {0, 1}, but rank 0 started all_reduce f32[4] on group "
                   "{0, 1} as the same collective of the group: the block's shape differs");
  EXPECT_EQ(world.rank(1).start(call(CollectiveKind::AllReduce, {0, 1}, {4}, ElementType::F16), in, out, error), 0u);
  EXPECT_NE(error.find("the element type differs"), std::string::npos) << error;
  EXPECT_EQ(world.rank(1).start(call(CollectiveKind::Broadcast, {0, 1}, {4}), in, out, error), 0u);
  EXPECT_NE(error.find("the kind differs"), std::string::npos) << error;
  EXPECT_EQ(world.rank(1).start(call(CollectiveKind::AllReduce, {1, 0}, {4}), in, out, error), 0u);
  EXPECT_NE(error.find("the group (or its order) differs"), std::string::npos) << error;
  auto max = call(CollectiveKind::AllReduce, {0, 1}, {4});
  max.op = ReduceOp::Max;
  EXPECT_EQ(world.rank(1).start(max, in, out, error), 0u);
  EXPECT_NE(error.find("the reduction differs"), std::string::npos) << error;
  // The failed starts changed nothing: the matching call still completes it.
  float in1[4] = {10, 20, 30, 40};
  Request r1 = world.rank(1).start(call(CollectiveKind::AllReduce, {0, 1}, {4}), in1, in1, error);
  ASSERT_NE(r1, 0u) << error;
  EXPECT_TRUE(world.rank(0).test(r0, error));
  EXPECT_EQ(out[3], 44);
  EXPECT_EQ(in1[0], 11);
}

TEST(InProcessCommunicatorTest, MalformedCallsAreErrors) {
  InProcessWorld world(4);
  float buf[8] = {};
  auto startError = [&](int64_t rank, const CollectiveCall &c) {
    std::string error;
    EXPECT_EQ(world.rank(rank).start(c, buf, buf, error), 0u);
    return error;
  };
  EXPECT_EQ(startError(3, call(CollectiveKind::AllReduce, {0, 1}, {2})),
            "rank 3 starts all_reduce f32[2] on group {0, 1}: rank 3 starts it but is not in the group");
  EXPECT_NE(startError(0, call(CollectiveKind::AllReduce, {0, 4}, {2})).find("rank 4 is not one of the world's 4"),
            std::string::npos);
  EXPECT_NE(startError(0, call(CollectiveKind::AllReduce, {0, 0}, {2})).find("lists rank 0 twice"), std::string::npos);
  EXPECT_NE(startError(0, call(CollectiveKind::AllReduce, {}, {2})).find("the group has no ranks"), std::string::npos);
  auto split = call(CollectiveKind::AllToAll, {0, 1, 2}, {4});
  EXPECT_NE(startError(0, split).find("split_dim 0 of the block does not cut into 3 pieces"), std::string::npos);
  auto gather = call(CollectiveKind::AllGather, {0, 1}, {2});
  gather.gatheredRows = 5;
  EXPECT_NE(startError(0, gather).find("the result's 5 rows are not 1 to the 4 the members' blocks hold"),
            std::string::npos);
  gather.gatheredRows = 0;
  EXPECT_NE(startError(0, gather).find("the result's 0 rows"), std::string::npos);
  auto scatter = call(CollectiveKind::ReduceScatter, {0, 1}, {2});
  scatter.dim = 1;
  EXPECT_NE(startError(0, scatter).find("dim 1 is not a dim of the block"), std::string::npos);
  auto bcast = call(CollectiveKind::Broadcast, {0, 1}, {2});
  bcast.root = 2;
  EXPECT_NE(startError(0, bcast).find("root 2 is not a member index (the group has 2)"), std::string::npos);
  EXPECT_EQ(world.pending(), "") << "no failed start is pending";
}

TEST(InProcessCommunicatorTest, SendsAreEagerAndReceivesWaitForTheirSend) {
  InProcessWorld world(3);
  std::string error;
  int32_t a = 7, b = 8, got1 = 0, got2 = 0, other = 0;
  // Send first: complete at once, its bytes taken (the buffer may change
  // after); messages of a channel arrive in order.
  Request s1 = world.rank(0).send(2, /*tag=*/5, &a, 4, error);
  Request s2 = world.rank(0).send(2, 5, &b, 4, error);
  ASSERT_TRUE(s1 && s2) << error;
  a = -1, b = -2;
  EXPECT_EQ(world.pending(), "");
  // Another tag or another source is another channel.
  Request r0 = world.rank(2).recv(0, /*tag=*/6, &other, 4, error);
  Request rx = world.rank(2).recv(1, 5, &other, 4, error);
  Request r1 = world.rank(2).recv(0, 5, &got1, 4, error);
  Request r2 = world.rank(2).recv(0, 5, &got2, 4, error);
  ASSERT_TRUE(r0 && rx && r1 && r2) << error;
  for (auto [rank, req] : {std::pair{0, s1}, {0, s2}, {2, r1}, {2, r2}}) {
    error.clear();
    EXPECT_TRUE(world.rank(rank).test(req, error));
    EXPECT_EQ(error, "");
  }
  EXPECT_EQ(got1, 7);
  EXPECT_EQ(got2, 8);
  EXPECT_FALSE(world.rank(2).test(r0, error));
  EXPECT_EQ(world.pending(),
            "rank 2: recv of 4 bytes from rank 0, tag 6\nrank 2: recv of 4 bytes from rank 1, tag 5\n");
  // Recv first: pending until the send, which completes both.
  EXPECT_FALSE(world.rank(2).test(rx, error));
  int32_t c = 9;
  Request s3 = world.rank(1).send(2, 5, &c, 4, error);
  ASSERT_NE(s3, 0u);
  EXPECT_TRUE(world.rank(1).test(s3, error));
  EXPECT_TRUE(world.rank(2).test(rx, error));
  EXPECT_EQ(other, 9);
}

TEST(InProcessCommunicatorTest, MessageErrors) {
  InProcessWorld world(2);
  std::string error;
  double x = 1, y[2];
  // A size mismatch fails the receive; a send found waiting fails too (an
  // eager send already seen complete cannot be failed afterwards).
  Request s = world.rank(0).send(1, 0, &x, 8, error);
  Request r = world.rank(1).recv(0, 0, y, 16, error);
  ASSERT_TRUE(s && r) << error;
  EXPECT_TRUE(world.rank(0).test(s, error));
  EXPECT_EQ(error, "");
  EXPECT_TRUE(world.rank(1).test(r, error));
  EXPECT_EQ(error, "rank 0 sends 8 bytes to rank 1 with tag 0, which receives 16");
  error.clear();
  Request r2 = world.rank(1).recv(0, 3, y, 16, error);
  Request s2 = world.rank(0).send(1, 3, &x, 8, error);
  ASSERT_TRUE(s2 && r2) << error;
  EXPECT_TRUE(world.rank(0).test(s2, error));
  EXPECT_EQ(error, "rank 0 sends 8 bytes to rank 1 with tag 3, which receives 16");
  error.clear();
  EXPECT_TRUE(world.rank(1).test(r2, error));
  EXPECT_EQ(error, "rank 0 sends 8 bytes to rank 1 with tag 3, which receives 16");
  error.clear();

  EXPECT_EQ(world.rank(0).send(2, 0, &x, 8, error), 0u);
  EXPECT_EQ(error, "rank 0 starts a send of 8 bytes to rank 2, tag 0, which is not one of the world's 2 ranks");
  EXPECT_EQ(world.rank(0).recv(1, 0, nullptr, 8, error), 0u);
  EXPECT_NE(error.find("without a buffer"), std::string::npos) << error;

  // A request is tested by its rank, and seen complete once.
  Request t = world.rank(0).send(1, 1, &x, 8, error);
  EXPECT_TRUE(world.rank(1).test(t, error));
  EXPECT_NE(error.find("rank 1 tests request"), std::string::npos) << error;
  error.clear();
  Request u = world.rank(1).recv(0, 1, y, 8, error);
  EXPECT_TRUE(world.rank(1).test(u, error));
  EXPECT_TRUE(world.rank(0).test(t, error));
  EXPECT_EQ(error, "");
  EXPECT_TRUE(world.rank(0).test(t, error));
  EXPECT_NE(error.find("has already seen complete"), std::string::npos) << error;
  EXPECT_EQ(y[0], 1);
}

} // namespace
