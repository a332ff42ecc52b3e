//===- tests/unit/ir/MultiRankTest.cpp - every rank of a module in one process ===//
//
// Partitioned modules written by hand run on all ranks and are compared with
// the single-device result (Megatron's MLP), with sums and means worked out
// by hand (data parallel, groups of a 2x2 mesh), and with each other (a
// reduce_scatter then all_gather is an all_reduce; two all_to_alls undo each
// other). Everything is f64, so the comparisons hold to 1e-12.
//
//===----------------------------------------------------------------------===//

#include "MultiRank.h"
#include "ir/Parser.h"
#include "OpTestHelpers.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace planc;
using namespace planc::ir;

namespace {

using planc::ir::testing::parse;

MeshLayout meshOf(const Module &m) { return MeshLayout(m.mesh); }

/// Distinct, deterministic values: element i of the tensor keyed `k`.
Tensor filled(Shape shape, double k) {
  Tensor t(std::move(shape), DType::F64);
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = std::sin(1.3 * double(i) + 0.7 * k) + 0.1 * k;
  return t;
}

/// 1, 2, 3, ...: every element distinct and non-zero.
Tensor ramp(Shape shape) {
  Tensor t(std::move(shape), DType::F64);
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = double(i + 1);
  return t;
}

double maxAbsDiff(const Tensor &a, const Tensor &b) {
  EXPECT_EQ(a.shape, b.shape);
  if (a.shape != b.shape) return INFINITY;
  double d = 0;
  for (size_t i = 0; i < a.data.size(); ++i) d = std::max(d, std::abs(a.data[i] - b.data[i]));
  return d;
}

RankTensorMaps run(const Module &m, const RankTensorMaps &feeds) {
  auto out = interpretRanks(m, meshOf(m), feeds);
  if (!out) {
    ADD_FAILURE() << llvm::toString(out.takeError());
    return {};
  }
  return std::move(*out);
}

/// The first error of a run that must fail.
std::string runError(const Module &m, const RankTensorMaps &feeds) {
  auto out = interpretRanks(m, meshOf(m), feeds);
  if (out) return "";
  return llvm::toString(out.takeError());
}

/// Megatron's MLP: x replicated (or split over dp by rows), w1 split by
/// columns over tp, w2 by rows; the only communication is one all_reduce.
std::string megatronMlp(const std::string &mesh, const std::string &rows) {
  std::string x = rows.empty() ? "" : "{shard(0, " + rows + ")}";
  std::string xs = rows.empty() ? "" : "shard(0, " + rows + "), ";
  return "module @mlp mesh(" + mesh + ") {\n"
         "  param %w1 : f64[8, 16]{shard(1, tp)} init zeros\n"
         "  param %w2 : f64[16, 8]{shard(0, tp)} init zeros\n"
         "  input %x : f64[4, 8]" + x + "\n"
         "  %h = matmul(%x, %w1) {transpose_a = false, transpose_b = false} : f64[4, 16]{" + xs + "shard(1, tp)}\n"
         "  %g = gelu(%h) : f64[4, 16]{" + xs + "shard(1, tp)}\n"
         "  %p = matmul(%g, %w2) {transpose_a = false, transpose_b = false} : f64[4, 8]{" + xs + "partial(tp)}\n"
         "  %y = all_reduce(%p) {axis = \"tp\"} : f64[4, 8]" + x + "\n"
         "  return %y as \"y\"\n"
         "}\n";
}

const char *kSingleDeviceMlp = R"(module @mlp {
  param %w1 : f64[8, 16] init zeros
  param %w2 : f64[16, 8] init zeros
  input %x : f64[4, 8]
  %h = matmul(%x, %w1) {transpose_a = false, transpose_b = false} : f64[4, 16]
  %g = gelu(%h) : f64[4, 16]
  %y = matmul(%g, %w2) {transpose_a = false, transpose_b = false} : f64[4, 8]
  return %y as "y"
}
)";

void expectMlpMatchesSingleDevice(const std::string &text) {
  SCOPED_TRACE(text);
  auto single = parse(kSingleDeviceMlp);
  auto split = parse(text);
  ASSERT_TRUE(single && split);
  llvm::Error bad = verify(*split);
  ASSERT_FALSE(bool(bad)) << llvm::toString(std::move(bad));
  TensorMap global = {{"x", filled({4, 8}, 1)}, {"w1", filled({8, 16}, 2)}, {"w2", filled({16, 8}, 3)}};
  auto expected = interpret(*single, global);
  ASSERT_TRUE(bool(expected)) << llvm::toString(expected.takeError());

  MeshLayout mesh = meshOf(*split);
  auto feeds = splitFeeds(*split, mesh, global);
  ASSERT_TRUE(bool(feeds)) << llvm::toString(feeds.takeError());
  RankTensorMaps local = run(*split, *feeds);
  ASSERT_EQ(int64_t(local.size()), mesh.numRanks());
  auto y = assembleOutputs(*split, mesh, local);
  ASSERT_TRUE(bool(y)) << llvm::toString(y.takeError());
  EXPECT_LT(maxAbsDiff(y->at("y"), expected->at("y")), 1e-12);
}

TEST(MultiRankTest, MegatronMlpMatchesSingleDevice) {
  expectMlpMatchesSingleDevice(megatronMlp("tp = 2", ""));
  expectMlpMatchesSingleDevice(megatronMlp("tp = 4", ""));
  // With data parallelism as well: each dp replica takes half of the rows.
  expectMlpMatchesSingleDevice(megatronMlp("dp = 2, tp = 2", "dp"));
}

TEST(MultiRankTest, LocalShapesDivideShardedDims) {
  MeshLayout mesh({2, 1, 4, 1, 1}); // dp = 2, tp = 4
  TensorType t({16, 8, 3}, DType::F32);
  t.sharding.dims[0] = {MeshAxis::DP, MeshAxis::TP};
  t.sharding.dims[1] = {};
  t.sharding.partial = {};
  EXPECT_EQ(localShape(t, mesh), (Shape{2, 8, 3}));
  // dp is major: rank 5 is (dp 1, tp 1), block 1 * 4 + 1 = 5 of 8.
  EXPECT_EQ(blockOffsets(t, mesh, 5), (std::vector<int64_t>{10, 0, 0}));
}

TEST(MultiRankTest, SplitAndAssembleRoundTrip) {
  MeshLayout mesh({2, 1, 2, 1, 1}); // dp = 2, tp = 2
  Tensor g = filled({4, 6}, 5);
  TensorType sharded({4, 6}, DType::F64);
  sharded.sharding.dims[0] = {MeshAxis::DP};
  sharded.sharding.dims[1] = {MeshAxis::TP};
  TensorType partial({4, 6}, DType::F64);
  partial.sharding.dims[0] = {MeshAxis::DP};
  partial.sharding.partial = {MeshAxis::TP};
  for (const TensorType &t : {sharded, partial, TensorType({4, 6}, DType::F64)}) {
    std::vector<Tensor> blocks = splitToRanks(g, t, mesh);
    auto back = assembleFromRanks(blocks, t, mesh);
    ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
    EXPECT_EQ(back->data, g.data) << toString(t);
  }
  // Replicated copies that disagree are reported, naming both ranks.
  std::vector<Tensor> copies = splitToRanks(g, TensorType({4, 6}, DType::F64), mesh);
  copies[3].data[0] += 1;
  auto bad = assembleFromRanks(copies, TensorType({4, 6}, DType::F64), mesh);
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()), "rank 3's copy of a replicated f64[4, 6] differs from rank 0's");
}

TEST(MultiRankTest, DataParallelMeanOfGradients) {
  auto m = parse(R"(module @dp mesh(dp = 4) {
  input %grad : f64[3, 5]{partial(dp)}
  %sum = all_reduce(%grad) {axis = "dp"} : f64[3, 5]
  %mean = scale(%sum) {factor = 0.25} : f64[3, 5]
  return %mean as "mean"
}
)");
  ASSERT_TRUE(m);
  RankTensorMaps feeds(4);
  Tensor mean({3, 5}, DType::F64);
  for (int r = 0; r < 4; ++r) {
    feeds[r]["grad"] = filled({3, 5}, r);
    for (size_t i = 0; i < mean.data.size(); ++i) mean.data[i] += feeds[r]["grad"].data[i] / 4;
  }
  RankTensorMaps out = run(*m, feeds);
  ASSERT_EQ(out.size(), 4u);
  for (int r = 0; r < 4; ++r) EXPECT_LT(maxAbsDiff(out[r]["mean"], mean), 1e-12) << "rank " << r;
}

TEST(MultiRankTest, ReduceScatterThenAllGatherIsAllReduce) {
  auto m = parse(R"(module @rs mesh(tp = 4) {
  input %p : f64[8, 6]{partial(tp)}
  %a = all_reduce(%p) {axis = "tp"} : f64[8, 6]
  %s = reduce_scatter(%p) {axis = "tp", dim = 0} : f64[8, 6]{shard(0, tp)}
  %g = all_gather(%s) {axis = "tp", dim = 0} : f64[8, 6]
  return %a as "a", %s as "s", %g as "g"
}
)");
  ASSERT_TRUE(m);
  RankTensorMaps feeds(4);
  for (int r = 0; r < 4; ++r) feeds[r]["p"] = filled({8, 6}, r);
  RankTensorMaps out = run(*m, feeds);
  ASSERT_EQ(out.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_LT(maxAbsDiff(out[r]["g"], out[r]["a"]), 1e-12) << "rank " << r;
    EXPECT_EQ(out[r]["s"].shape, (Shape{2, 6})) << "rank " << r; // each keeps its quarter
  }
}

TEST(MultiRankTest, AllToAllMovesTheSplitAndBack) {
  auto m = parse(R"(module @a2a mesh(ep = 4) {
  input %x : f64[8, 12]{shard(0, ep)}
  %y = all_to_all(%x) {axis = "ep", concat_dim = 0, split_dim = 1} : f64[8, 12]{shard(1, ep)}
  %z = all_to_all(%y) {axis = "ep", concat_dim = 1, split_dim = 0} : f64[8, 12]{shard(0, ep)}
  return %y as "y", %z as "z"
}
)");
  ASSERT_TRUE(m);
  MeshLayout mesh = meshOf(*m);
  Tensor x = filled({8, 12}, 9);
  auto feeds = splitFeeds(*m, mesh, {{"x", x}});
  ASSERT_TRUE(bool(feeds)) << llvm::toString(feeds.takeError());
  RankTensorMaps out = run(*m, *feeds);
  ASSERT_EQ(out.size(), 4u);
  // The same global value, split along the other dim, then back as it was.
  auto global = assembleOutputs(*m, mesh, out);
  ASSERT_TRUE(bool(global)) << llvm::toString(global.takeError());
  EXPECT_EQ(out[0]["y"].shape, (Shape{8, 3}));
  EXPECT_LT(maxAbsDiff(global->at("y"), x), 1e-12);
  for (int r = 0; r < 4; ++r) EXPECT_LT(maxAbsDiff(out[r]["z"], (*feeds)[r]["x"]), 1e-12) << "rank " << r;
}

TEST(MultiRankTest, BroadcastGivesEveryoneTheRoots) {
  auto m = parse(R"(module @b mesh(tp = 4) {
  input %x : f64[3]
  %y = broadcast(%x) {axis = "tp", root = 2} : f64[3]
  return %y as "y"
}
)");
  ASSERT_TRUE(m);
  RankTensorMaps feeds(4);
  for (int r = 0; r < 4; ++r) feeds[r]["x"] = filled({3}, r);
  RankTensorMaps out = run(*m, feeds);
  ASSERT_EQ(out.size(), 4u);
  for (int r = 0; r < 4; ++r) EXPECT_LT(maxAbsDiff(out[r]["y"], feeds[2]["x"]), 1e-12) << "rank " << r;
}

const char *kPipelineShift = R"(module @pp mesh(pp = 4) {
  input %x : f64[2, 3]
  send(%x) {axis = "pp", peer_offset = 1, tag = 7}
  %r = recv() {axis = "pp", dtype = "f64", peer_offset = -1, shape = [2, 3], tag = 7} : f64[2, 3]
  return %r as "r"
}
)";

TEST(MultiRankTest, SendRecvPairAlongPipeline) {
  auto m = parse(kPipelineShift);
  ASSERT_TRUE(m);
  RankTensorMaps feeds(4);
  for (int r = 0; r < 4; ++r) feeds[r]["x"] = filled({2, 3}, r);
  RankTensorMaps out = run(*m, feeds);
  ASSERT_EQ(out.size(), 4u);
  // Stage s receives what stage s - 1 sent; the offsets wrap, so stage 0
  // hears from the last stage.
  for (int s = 0; s < 4; ++s) EXPECT_LT(maxAbsDiff(out[s]["r"], feeds[(s + 3) % 4]["x"]), 1e-12) << "stage " << s;
}

TEST(MultiRankTest, UnmatchedSendOrRecvIsAnError) {
  RankTensorMaps feeds(2);
  for (int r = 0; r < 2; ++r) feeds[r]["x"] = filled({2, 3}, r);
  // The tags differ: the receive waits for a message that never comes.
  auto wrongTag = parse(R"(module @pp mesh(pp = 2) {
  input %x : f64[2, 3]
  send(%x) {axis = "pp", peer_offset = 1, tag = 7}
  %r = recv() {axis = "pp", dtype = "f64", peer_offset = -1, shape = [2, 3], tag = 8} : f64[2, 3]
  return %r as "r"
}
)");
  ASSERT_TRUE(wrongTag);
  EXPECT_NE(runError(*wrongTag, feeds).find("rank 0 receives from rank 1 with tag 8, which has sent it nothing"),
            std::string::npos);
  auto neverReceived = parse(R"(module @pp mesh(pp = 2) {
  input %x : f64[2, 3]
  send(%x) {axis = "pp", peer_offset = 1, tag = 7}
  return
}
)");
  ASSERT_TRUE(neverReceived);
  EXPECT_EQ(runError(*neverReceived, feeds), "rank 1 sent rank 0 a message with tag 7 that was never received");
}

TEST(MultiRankTest, GroupsOfATwoByTwoMesh) {
  // Ranks 0..3 are (dp, tp) = (0,0) (0,1) (1,0) (1,1): tp groups {0,1} {2,3},
  // dp groups {0,2} {1,3}. Each rank contributes its own number.
  auto m = parse(R"(module @g mesh(dp = 2, tp = 2) {
  input %x : f64[1]{partial(dp+tp)}
  %t = all_reduce(%x) {axis = "tp"} : f64[1]{partial(dp)}
  %d = all_reduce(%x) {axis = "dp"} : f64[1]{partial(tp)}
  %all = all_reduce(%t) {axis = "dp"} : f64[1]
  return %t as "t", %d as "d", %all as "all"
}
)");
  ASSERT_TRUE(m);
  RankTensorMaps feeds(4);
  for (int r = 0; r < 4; ++r) {
    feeds[r]["x"] = Tensor({1}, DType::F64);
    feeds[r]["x"].data[0] = r;
  }
  RankTensorMaps out = run(*m, feeds);
  ASSERT_EQ(out.size(), 4u);
  const double tp[] = {1, 1, 5, 5}, dp[] = {2, 4, 2, 4};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(out[r]["t"].data[0], tp[r]) << "rank " << r;
    EXPECT_EQ(out[r]["d"].data[0], dp[r]) << "rank " << r;
    EXPECT_EQ(out[r]["all"].data[0], 6) << "rank " << r;
  }
}

TEST(MultiRankTest, ShapeAttributesAreLocalOnEveryRank) {
  // reshape's `shape` is the global one; every rank reshapes its block to the
  // local shape of the result, so the assembled result is the global reshape.
  auto m = parse(R"(module @r mesh(tp = 4) {
  input %x : f64[8, 6]{shard(0, tp)}
  %y = reshape(%x) {shape = [8, 3, 2]} : f64[8, 3, 2]{shard(0, tp)}
  return %y as "y"
}
)");
  ASSERT_TRUE(m);
  Tensor x = ramp({8, 6});
  auto feeds = splitFeeds(*m, meshOf(*m), {{"x", x}});
  ASSERT_TRUE(bool(feeds)) << llvm::toString(feeds.takeError());
  auto out = interpretRanks(*m, meshOf(*m), *feeds);
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  auto y = assembleOutputs(*m, meshOf(*m), *out);
  ASSERT_TRUE(bool(y)) << llvm::toString(y.takeError());
  EXPECT_EQ(y->at("y").shape, (Shape{8, 3, 2}));
  EXPECT_EQ(y->at("y").data, x.data);
}

TEST(MultiRankTest, ResultThatDoesNotFitTheBlockIsAnError) {
  // A replicated result of a split operand: the block has a quarter of the
  // elements the result needs on every rank, and the run says so.
  auto m = parse(R"(module @r mesh(tp = 4) {
  input %x : f64[8, 6]{shard(0, tp)}
  %y = reshape(%x) {shape = [48]} : f64[48]
  return %y as "y"
}
)");
  ASSERT_TRUE(m);
  auto feeds = splitFeeds(*m, meshOf(*m), {{"x", filled({8, 6}, 0)}});
  ASSERT_TRUE(bool(feeds)) << llvm::toString(feeds.takeError());
  std::string e = runError(*m, *feeds);
  EXPECT_NE(e.find("'reshape' defining %y"), std::string::npos) << e;
  EXPECT_NE(e.find("its attributes do not fit the local shapes"), std::string::npos) << e;
}

TEST(MultiRankTest, DropoutOfAShardedValueDrawsTheGlobalMask) {
  // The mask is drawn by global element index, so each block gets exactly
  // its part of the mask the whole value gets on one device.
  const char *text = R"(module @d mesh(tp = 2) {
  input %x : f64[4, 6]{shard(1, tp)}
  %y = dropout(%x) {p = 0.5, seed = 1, stream = 0} : f64[4, 6]{shard(1, tp)}
  return %y as "y"
}
)";
  auto m = parse(text);
  ASSERT_TRUE(m);
  Tensor x = ramp({4, 6});
  auto feeds = splitFeeds(*m, meshOf(*m), {{"x", x}});
  ASSERT_TRUE(bool(feeds)) << llvm::toString(feeds.takeError());
  auto out = interpretRanks(*m, meshOf(*m), *feeds, 7);
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  auto y = assembleOutputs(*m, meshOf(*m), *out);
  ASSERT_TRUE(bool(y)) << llvm::toString(y.takeError());
  auto single = interpret(*m, {{"x", x}}, 7);
  ASSERT_TRUE(bool(single)) << llvm::toString(single.takeError());
  EXPECT_EQ(y->at("y").data, single->at("y").data);
  int zeros = 0;
  for (double v : single->at("y").data) zeros += v == 0;
  EXPECT_GT(zeros, 3); // x has none; about half are dropped
}

TEST(MultiRankTest, GatherAlongTheWrongAxisIsAnError) {
  // tp is major on dim 0, so gathering over tp alone would interleave blocks.
  auto m = parse(R"(module @ag mesh(dp = 2, tp = 2) {
  input %x : f64[8, 2]{shard(0, tp+dp)}
  %y = all_gather(%x) {axis = "tp", dim = 0} : f64[8, 2]{shard(0, dp)}
  return %y as "y"
}
)");
  ASSERT_TRUE(m);
  auto feeds = splitFeeds(*m, meshOf(*m), {{"x", filled({8, 2}, 0)}});
  ASSERT_TRUE(bool(feeds)) << llvm::toString(feeds.takeError());
  std::string e = runError(*m, *feeds);
  EXPECT_NE(e.find("needs tp as the minor-most axis splitting dim 0"), std::string::npos) << e;
}

TEST(MultiRankTest, UnevenDpSplitsArePaddedBlocks) {
  // 7 rows over dp = 3: blocks of ceil(7 / 3) = 3 rows at 0, 3, 6; the last
  // holds one row of data and two of padding. Under tp (exact, major) each
  // tp part of 10 rows is cut over dp the same way: 4, 4, 2 rows.
  MeshLayout mesh({3, 1, 2, 1, 1}); // dp = 3, tp = 2
  TensorType t({7, 2}, DType::F64);
  t.sharding.dims[0] = {MeshAxis::DP};
  EXPECT_EQ(localShape(t, mesh), (Shape{3, 2}));
  EXPECT_TRUE(isPadded(t, mesh));
  EXPECT_EQ(blockOffsets(t, mesh, mesh.rankOf({2, 0, 0, 0, 0})), (std::vector<int64_t>{6, 0}));
  EXPECT_EQ(dataShape(t, mesh, mesh.rankOf({2, 0, 0, 0, 0})), (Shape{1, 2}));
  EXPECT_EQ(dataShape(t, mesh, mesh.rankOf({1, 0, 0, 0, 0})), (Shape{3, 2}));
  TensorType u({20}, DType::F64);
  u.sharding.dims[0] = {MeshAxis::TP, MeshAxis::DP};
  EXPECT_EQ(localShape(u, mesh), (Shape{4}));
  EXPECT_EQ(blockOffsets(u, mesh, mesh.rankOf({2, 0, 1, 0, 0}))[0], 18); // tp part 1 starts at 10
  EXPECT_EQ(dataShape(u, mesh, mesh.rankOf({2, 0, 1, 0, 0})), (Shape{2}));
  // Split and assembled back exactly; the padding is 0 and must stay 0.
  for (const TensorType &v : {t, u}) {
    Tensor g = ramp(v.shape);
    std::vector<Tensor> blocks = splitToRanks(g, v, mesh);
    int64_t last = mesh.rankOf({2, 0, 0, 0, 0});
    EXPECT_EQ(blocks[size_t(last)].data.back(), 0) << toString(v);
    auto back = assembleFromRanks(blocks, v, mesh);
    ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
    EXPECT_EQ(back->data, g.data) << toString(v);
    blocks[size_t(last)].data.back() = 1;
    auto bad = assembleFromRanks(blocks, v, mesh);
    ASSERT_FALSE(bool(bad));
    EXPECT_NE(llvm::toString(bad.takeError()).find("in its padding"), std::string::npos);
  }
  // A dp size larger than the dim: ranks past the data hold padding only.
  MeshLayout wide({6, 1, 1, 1, 1});
  TensorType w({4}, DType::F64);
  w.sharding.dims[0] = {MeshAxis::DP};
  EXPECT_EQ(localShape(w, wide), (Shape{1}));
  EXPECT_EQ(dataShape(w, wide, 5), (Shape{0}));
}

TEST(MultiRankTest, ZeroCollectivesOverADpThatDoesNotDivide) {
  // ZeRO over dp = 3 of a 7-row gradient: reduce-scattered into padded
  // shards, updated there (scale maps 0 to 0), gathered whole again. The
  // result is the single-device one, and shard_slice pads the same way.
  auto m = parse(R"(module @z mesh(dp = 3) {
  input %g : f64[7, 2]{partial(dp)}
  input %p : f64[7, 2]
  %s = reduce_scatter(%g) {axis = "dp", dim = 0} : f64[7, 2]{shard(0, dp)}
  %h = scale(%s) {factor = 0.5} : f64[7, 2]{shard(0, dp)}
  %q = shard_slice(%p) {axis = "dp", dim = 0} : f64[7, 2]{shard(0, dp)}
  %n = sub(%q, %h) : f64[7, 2]{shard(0, dp)}
  %w = all_gather(%n) {axis = "dp", dim = 0} : f64[7, 2]
  return %w as "w"
}
)");
  ASSERT_TRUE(m);
  llvm::Error bad = verify(*m);
  ASSERT_FALSE(bool(bad)) << llvm::toString(std::move(bad));
  Tensor g = filled({7, 2}, 1), p = filled({7, 2}, 2);
  MeshLayout mesh = meshOf(*m);
  RankTensorMaps feeds(3);
  for (int64_t r = 0; r < 3; ++r) { // three addends of g: g, g, g
    feeds[size_t(r)]["g"] = g;
    feeds[size_t(r)]["p"] = p;
  }
  RankTensorMaps out = run(*m, feeds);
  ASSERT_EQ(out.size(), 3u);
  for (int64_t r = 0; r < 3; ++r) {
    ASSERT_EQ(out[size_t(r)]["w"].shape, (Shape{7, 2}));
    for (size_t i = 0; i < p.data.size(); ++i)
      EXPECT_NEAR(out[size_t(r)]["w"].data[i], p.data[i] - 1.5 * g.data[i], 1e-12) << "rank " << r << ", " << i;
  }
}

TEST(MultiRankTest, AnOpThatWritesIntoThePaddingIsCaught) {
  // exp(0) = 1: run on a padded shard it would leave ones in the padding.
  auto m = parse(R"(module @e mesh(dp = 3) {
  input %x : f64[7]{shard(0, dp)}
  %y = exp(%x) : f64[7]{shard(0, dp)}
  return %y as "y"
}
)");
  ASSERT_TRUE(m);
  auto feeds = splitFeeds(*m, meshOf(*m), {{"x", filled({7}, 0)}});
  ASSERT_TRUE(bool(feeds)) << llvm::toString(feeds.takeError());
  std::string e = runError(*m, *feeds);
  EXPECT_NE(e.find("'exp' defining %y"), std::string::npos) << e;
  EXPECT_NE(e.find("leaves a value in the padding"), std::string::npos) << e;
}

TEST(MultiRankTest, CollectiveAloneStillFails) {
  // The single-device interpreter has no simulator: a collective is an error.
  auto m = parse(kPipelineShift);
  ASSERT_TRUE(m);
  auto out = interpret(*m, {{"x", filled({2, 3}, 0)}});
  ASSERT_FALSE(bool(out));
  EXPECT_NE(llvm::toString(out.takeError()).find("outside a simulator"), std::string::npos);
}

} // namespace
