//===- tests/unit/passes/ShardingRulesTest.cpp - dim labels and resharding -------===//
//
// Two building blocks of the SPMD partitioner, tested alone on small parsed
// modules:
//  - dimLabelsOf (passes/ShardingRules.h): which dims of an op's operands and
//    results are the same dim, which are summed (a split there makes the
//    result partial) and which must stay whole;
//  - Resharder (passes/Reshard.h): the collective each layout change needs
//    (partial -> split: reduce_scatter; split -> other dim: all_to_all;
//    replicated -> split: shard_slice), memoisation, and - run on every rank
//    with ir::interpretRanks - that each resharded value still assembles to
//    the same global tensor (for a partial sum: the sum of distinct addends).
//
//===----------------------------------------------------------------------===//

#include "passes/Reshard.h"
#include "passes/ShardingRules.h"

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

/// The op defining value `name`.
const Op &opOf(const Module &m, const std::string &name) {
  const Value *v = m.lookup(name);
  EXPECT_NE(v, nullptr) << name;
  EXPECT_NE(v->def, nullptr) << name;
  return *v->def;
}

DimLabels labelsOf(const Module &m, const std::string &name) {
  std::optional<DimLabels> L = dimLabelsOf(opOf(m, name));
  EXPECT_TRUE(L.has_value()) << name;
  return L.value_or(DimLabels{});
}

bool summed(const DimLabels &L, int label) { return label >= 0 && L.summed[size_t(label)]; }
bool whole(const DimLabels &L, int label) { return label >= 0 && L.whole[size_t(label)]; }

const char *kOps = R"(module @ops mesh(tp = 2) {
  input %a : f64[4, 6]
  input %b : f64[8, 6]
  input %c : f64[6, 4]
  input %x : f64[2, 3, 8]
  input %w : f64[8]
  input %bias : f64[8]
  input %table : f64[10, 8]
  input %idx : i32[2, 3]
  %mm = matmul(%a, %b) {transpose_a = false, transpose_b = true} : f64[4, 8]
  %mt = matmul(%c, %b) {transpose_a = true, transpose_b = true} : f64[4, 8]
  %rmax = reduce_max(%x) {dims = [2], keepdim = true} : f64[2, 3, 1]
  %rsum = reduce_sum(%x) {dims = [0]} : f64[3, 8]
  %ln = layernorm(%x, %w, %bias) {eps = 1e-05} : f64[2, 3, 8]
  %g = gather(%table, %idx) : f64[2, 3, 8]
  %t = transpose(%x) {perm = [2, 0, 1]} : f64[8, 2, 3]
  return %mm as "mm"
}
)";

TEST(ShardingRulesTest, MatmulTransposeBSharesAndSumsK) {
  auto m = parse(kOps);
  ASSERT_TRUE(m);
  DimLabels L = labelsOf(*m, "mm"); // a [4, 6] . (b [8, 6])^T
  ASSERT_EQ(L.operands.size(), 2u);
  ASSERT_EQ(L.operands[0].size(), 2u);
  ASSERT_EQ(L.operands[1].size(), 2u);
  ASSERT_EQ(L.results[0].size(), 2u);
  int K = L.operands[0][1];
  EXPECT_EQ(L.operands[1][1], K) << "b is transposed: its dim 1 is the contraction";
  EXPECT_TRUE(summed(L, K));
  EXPECT_FALSE(whole(L, K));
  EXPECT_EQ(L.results[0][0], L.operands[0][0]) << "M comes from a's rows";
  EXPECT_EQ(L.results[0][1], L.operands[1][0]) << "N comes from b's rows (transposed)";
  EXPECT_FALSE(summed(L, L.results[0][0]));
  EXPECT_FALSE(summed(L, L.results[0][1]));
  EXPECT_NE(L.results[0][0], L.results[0][1]);
  EXPECT_TRUE(L.linearIn[0]);
  EXPECT_TRUE(L.linearIn[1]);
}

TEST(ShardingRulesTest, MatmulTransposeBoth) {
  auto m = parse(kOps);
  ASSERT_TRUE(m);
  DimLabels L = labelsOf(*m, "mt"); // (c [6, 4])^T . (b [8, 6])^T
  int K = L.operands[0][0];
  EXPECT_EQ(L.operands[1][1], K);
  EXPECT_TRUE(summed(L, K));
  EXPECT_EQ(L.results[0][0], L.operands[0][1]);
  EXPECT_EQ(L.results[0][1], L.operands[1][0]);
}

TEST(ShardingRulesTest, ReduceMaxDimsAreWholeNotSummed) {
  auto m = parse(kOps);
  ASSERT_TRUE(m);
  DimLabels L = labelsOf(*m, "rmax");
  ASSERT_EQ(L.operands[0].size(), 3u);
  int R = L.operands[0][2];
  EXPECT_TRUE(whole(L, R)) << "a max is not a sum of per-rank maxima";
  EXPECT_FALSE(summed(L, R));
  EXPECT_EQ(L.results[0][0], L.operands[0][0]);
  EXPECT_EQ(L.results[0][1], L.operands[0][1]);
  EXPECT_EQ(L.results[0][2], DimLabels::kNone) << "a kept reduced dim is size 1: never split";
  EXPECT_FALSE(L.linearIn[0]);
}

TEST(ShardingRulesTest, ReduceSumDimsAreSummed) {
  auto m = parse(kOps);
  ASSERT_TRUE(m);
  DimLabels L = labelsOf(*m, "rsum");
  EXPECT_TRUE(summed(L, L.operands[0][0]));
  EXPECT_FALSE(whole(L, L.operands[0][0]));
  ASSERT_EQ(L.results[0].size(), 2u);
  EXPECT_EQ(L.results[0][0], L.operands[0][1]);
  EXPECT_EQ(L.results[0][1], L.operands[0][2]);
  EXPECT_TRUE(L.linearIn[0]);
}

TEST(ShardingRulesTest, LayernormLastDimWhole) {
  auto m = parse(kOps);
  ASSERT_TRUE(m);
  DimLabels L = labelsOf(*m, "ln");
  ASSERT_EQ(L.operands.size(), 3u);
  int H = L.operands[0][2];
  EXPECT_TRUE(whole(L, H));
  EXPECT_EQ(L.operands[1], std::vector<int>{H}) << "the weight runs along the normalised dim";
  EXPECT_EQ(L.operands[2], std::vector<int>{H});
  EXPECT_FALSE(whole(L, L.operands[0][0]));
  EXPECT_FALSE(whole(L, L.operands[0][1]));
  EXPECT_FALSE(summed(L, L.operands[0][0]));
  EXPECT_EQ(L.results[0], L.operands[0]);
}

TEST(ShardingRulesTest, GatherTableRowsSummed) {
  auto m = parse(kOps);
  ASSERT_TRUE(m);
  DimLabels L = labelsOf(*m, "g"); // table [10, 8], idx [2, 3] -> [2, 3, 8]
  ASSERT_EQ(L.operands[0].size(), 2u);
  ASSERT_EQ(L.operands[1].size(), 2u);
  int rows = L.operands[0][0];
  EXPECT_TRUE(summed(L, rows)) << "a vocab-split table: each rank adds its rows";
  for (int r : L.results[0]) EXPECT_NE(r, rows);
  EXPECT_EQ(L.results[0], (std::vector<int>{L.operands[1][0], L.operands[1][1], L.operands[0][1]}));
  EXPECT_TRUE(L.linearIn[0]);
  EXPECT_FALSE(L.linearIn[1]);
}

TEST(ShardingRulesTest, TransposePermutesLabels) {
  auto m = parse(kOps);
  ASSERT_TRUE(m);
  DimLabels L = labelsOf(*m, "t"); // perm [2, 0, 1]
  const auto &in = L.operands[0];
  EXPECT_EQ(L.results[0], (std::vector<int>{in[2], in[0], in[1]}));
  for (int l : in) {
    EXPECT_FALSE(whole(L, l));
    EXPECT_FALSE(summed(L, l));
  }
  EXPECT_TRUE(L.linearIn[0]);
}

//===----------------------------------------------------------------------===//
// Resharder
//===----------------------------------------------------------------------===//

const char *kValues = R"(module @values mesh(tp = 2) {
  input %p : f64[4, 6]{partial(tp)}
  input %s0 : f64[4, 6]{shard(0, tp)}
  input %r : f64[4, 6]
  return
}
)";

Sharding split(size_t rank, size_t dim) {
  Sharding s = Sharding::replicated(rank);
  s.dims[dim] = {MeshAxis::TP};
  return s;
}

Tensor filled(Shape shape, double k) {
  Tensor t(std::move(shape), DType::F64);
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = std::sin(1.3 * double(i) + 0.7 * k) + 0.1 * k;
  return t;
}

TEST(ResharderTest, PartialToSplitIsReduceScatter) {
  auto m = parse(kValues);
  ASSERT_TRUE(m);
  Resharder r(*m);
  Value *p = m->lookup("p");
  Value *v = r.to(p, split(2, 1), OpStamp{});
  ASSERT_NE(v, nullptr) << r.error;
  ASSERT_NE(v->def, nullptr);
  EXPECT_EQ(v->def->kind, OpKind::ReduceScatter);
  EXPECT_EQ(v->def->getInt("dim"), 1);
  EXPECT_EQ(v->def->operands[0], p);
  EXPECT_EQ(v->type.sharding, split(2, 1));
  EXPECT_EQ(m->ops.size(), 1u);
  EXPECT_EQ(r.reducedOf(p), v);
}

TEST(ResharderTest, PartialToReplicatedIsAllReduce) {
  auto m = parse(kValues);
  ASSERT_TRUE(m);
  Resharder r(*m);
  Value *v = r.to(m->lookup("p"), Sharding::replicated(2), OpStamp{});
  ASSERT_NE(v, nullptr) << r.error;
  EXPECT_EQ(v->def->kind, OpKind::AllReduce);
  EXPECT_TRUE(v->type.sharding.isReplicated());
  // allReduceFirst (ZeRO-1): an all_reduce, then a local slice.
  Value *w = r.to(m->lookup("p"), split(2, 0), OpStamp{}, /*allReduceFirst=*/true);
  ASSERT_NE(w, nullptr) << r.error;
  EXPECT_EQ(w->def->kind, OpKind::ShardSlice);
  EXPECT_EQ(w->def->operands[0]->def->kind, OpKind::AllReduce);
}

TEST(ResharderTest, SplitToOtherDimIsAllToAll) {
  auto m = parse(kValues);
  ASSERT_TRUE(m);
  Resharder r(*m);
  Value *v = r.to(m->lookup("s0"), split(2, 1), OpStamp{});
  ASSERT_NE(v, nullptr) << r.error;
  EXPECT_EQ(v->def->kind, OpKind::AllToAll);
  EXPECT_EQ(v->def->getInt("split_dim"), 1);
  EXPECT_EQ(v->def->getInt("concat_dim"), 0);
  EXPECT_EQ(v->type.sharding, split(2, 1));
  EXPECT_EQ(m->ops.size(), 1u);
}

TEST(ResharderTest, ReplicatedToSplitIsShardSlice) {
  auto m = parse(kValues);
  ASSERT_TRUE(m);
  Resharder r(*m);
  Value *v = r.to(m->lookup("r"), split(2, 0), OpStamp{});
  ASSERT_NE(v, nullptr) << r.error;
  EXPECT_EQ(v->def->kind, OpKind::ShardSlice);
  EXPECT_EQ(v->def->getInt("dim"), 0);
  EXPECT_EQ(v->type.sharding, split(2, 0));
}

TEST(ResharderTest, SameLayoutIsNoOpAndUnreachableIsError) {
  auto m = parse(kValues);
  ASSERT_TRUE(m);
  Resharder r(*m);
  Value *s0 = m->lookup("s0");
  EXPECT_EQ(r.to(s0, split(2, 0), OpStamp{}), s0);
  EXPECT_TRUE(m->ops.empty());
  Sharding partial = Sharding::replicated(2);
  partial.partial = {MeshAxis::TP};
  EXPECT_EQ(r.to(m->lookup("r"), partial, OpStamp{}), nullptr) << "a replicated value is no partial sum";
  EXPECT_NE(r.error.find("partial"), std::string::npos) << r.error;
}

TEST(ResharderTest, Memoised) {
  auto m = parse(kValues);
  ASSERT_TRUE(m);
  Resharder r(*m);
  Value *p = m->lookup("p");
  Value *a = r.to(p, split(2, 1), OpStamp{});
  Value *b = r.to(p, split(2, 1), OpStamp{});
  ASSERT_NE(a, nullptr) << r.error;
  EXPECT_EQ(a, b);
  EXPECT_EQ(m->ops.size(), 1u) << "the second request inserts nothing";
  // A different key (ZeRO-3's per-phase gathers) inserts the move again.
  Value *c = r.to(p, split(2, 1), OpStamp{}, false, "backward");
  EXPECT_NE(c, a);
  EXPECT_EQ(m->ops.size(), 2u);
  EXPECT_EQ(r.to(p, split(2, 1), OpStamp{}, false, "backward"), c);
  EXPECT_EQ(m->ops.size(), 2u);
}

TEST(ResharderTest, StampPlacesInsertedOps) {
  auto m = parse(kValues);
  ASSERT_TRUE(m);
  Resharder r(*m);
  OpStamp stamp;
  stamp.path = "blocks.0.mlp";
  stamp.attrs["phase"] = std::string("backward");
  Value *v = r.to(m->lookup("r"), split(2, 1), stamp);
  ASSERT_NE(v, nullptr) << r.error;
  EXPECT_EQ(v->def->path, "blocks.0.mlp");
  EXPECT_EQ(v->def->getString("phase", ""), "backward");
}

/// Every layout change, run on both ranks: the resharded values assemble to
/// the global tensor they started from. The partial input gets distinct
/// addends per rank, so a missing or doubled reduction shows.
TEST(ResharderTest, ReshardedValuesAssembleToTheSameTensor) {
  auto m = parse(kValues);
  ASSERT_TRUE(m);
  Resharder r(*m);
  Value *p = m->lookup("p"), *s0 = m->lookup("s0"), *rep = m->lookup("r");
  struct Case {
    const char *name;
    Value *from;
    Sharding to;
    OpKind kind;
  } cases[] = {
      {"p_rs", p, split(2, 1), OpKind::ReduceScatter},   {"p_ar", p, Sharding::replicated(2), OpKind::AllReduce},
      {"s0_a2a", s0, split(2, 1), OpKind::AllToAll},     {"s0_ag", s0, Sharding::replicated(2), OpKind::AllGather},
      {"r_slice0", rep, split(2, 0), OpKind::ShardSlice}, {"r_slice1", rep, split(2, 1), OpKind::ShardSlice},
  };
  for (const Case &c : cases) {
    Value *v = r.to(c.from, c.to, OpStamp{}, false, c.name);
    ASSERT_NE(v, nullptr) << c.name << ": " << r.error;
    EXPECT_EQ(v->def->kind, c.kind) << c.name;
    m->outputs.push_back({c.name, v});
  }
  ASSERT_FALSE(bool(verify(*m)));

  MeshLayout mesh(m->mesh);
  ASSERT_EQ(mesh.numRanks(), 2);
  TensorMap global{{"p", filled({4, 6}, 1)}, {"s0", filled({4, 6}, 2)}, {"r", filled({4, 6}, 3)}};
  auto feeds = splitFeeds(*m, mesh, global);
  ASSERT_TRUE(bool(feeds)) << llvm::toString(feeds.takeError());
  // Distinct addends of p: rank 0 holds a, rank 1 holds p - a.
  Tensor a = filled({4, 6}, 7);
  Tensor rest = global["p"];
  for (size_t i = 0; i < rest.data.size(); ++i) rest.data[i] -= a.data[i];
  (*feeds)[0]["p"] = a;
  (*feeds)[1]["p"] = rest;

  auto out = interpretRanks(*m, mesh, *feeds);
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  auto assembled = assembleOutputs(*m, mesh, *out);
  ASSERT_TRUE(bool(assembled)) << llvm::toString(assembled.takeError());
  for (const Case &c : cases) {
    const Tensor &want = global[c.from->name];
    const Tensor &have = assembled->at(c.name);
    ASSERT_EQ(have.shape, want.shape) << c.name;
    double d = 0;
    for (size_t i = 0; i < have.data.size(); ++i) d = std::max(d, std::abs(have.data[i] - want.data[i]));
    EXPECT_LT(d, 1e-12) << c.name;
  }
  // The local blocks have the split shapes: [4, 3] after a split of dim 1.
  EXPECT_EQ((*out)[1].at("p_rs").shape, (Shape{4, 3}));
  EXPECT_EQ((*out)[1].at("r_slice0").shape, (Shape{2, 6}));
}

} // namespace
