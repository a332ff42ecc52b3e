//===- tests/unit/ir/MeshLayoutTest.cpp - ranks <-> mesh coordinates ---------===//
//
// tp varies fastest and dp slowest, rank -> coordinates -> rank is the
// identity, and every axis's groups partition the ranks.
//
//===----------------------------------------------------------------------===//

#include "ir/MeshLayout.h"

#include <gtest/gtest.h>

#include <set>

using namespace planc;

namespace {

MeshLayout make(int64_t dp, int64_t pp, int64_t tp, int64_t cp = 1, int64_t ep = 1) {
  std::array<int64_t, kNumMeshAxes> sizes{};
  sizes[unsigned(MeshAxis::DP)] = dp;
  sizes[unsigned(MeshAxis::PP)] = pp;
  sizes[unsigned(MeshAxis::TP)] = tp;
  sizes[unsigned(MeshAxis::CP)] = cp;
  sizes[unsigned(MeshAxis::EP)] = ep;
  return MeshLayout(sizes);
}

TEST(MeshLayoutTest, TensorParallelVariesFastest) {
  MeshLayout m = make(2, 2, 4);
  ASSERT_EQ(m.numRanks(), 16);
  MeshCoords c = m.coordinates(1);
  EXPECT_EQ(c[unsigned(MeshAxis::TP)], 1);
  EXPECT_EQ(c[unsigned(MeshAxis::PP)], 0);
  c = m.coordinates(4); // the first rank of the second pipeline stage
  EXPECT_EQ(c[unsigned(MeshAxis::TP)], 0);
  EXPECT_EQ(c[unsigned(MeshAxis::PP)], 1);
  c = m.coordinates(8); // the second model replica
  EXPECT_EQ(c[unsigned(MeshAxis::DP)], 1);
  EXPECT_EQ(c[unsigned(MeshAxis::PP)], 0);
}

TEST(MeshLayoutTest, RanksRoundTrip) {
  MeshLayout m = make(2, 3, 2, 2, 2);
  ASSERT_EQ(m.numRanks(), 48);
  for (int64_t r = 0; r < m.numRanks(); ++r) EXPECT_EQ(m.rankOf(m.coordinates(r)), r);
}

TEST(MeshLayoutTest, GroupsPartitionTheRanks) {
  MeshLayout m = make(2, 2, 4);
  auto tp = m.groups(MeshAxis::TP);
  ASSERT_EQ(tp.size(), 4u);
  EXPECT_EQ(tp[0], (std::vector<int64_t>{0, 1, 2, 3}));
  auto pp = m.groups(MeshAxis::PP);
  ASSERT_EQ(pp.size(), 8u);
  EXPECT_EQ(pp[0], (std::vector<int64_t>{0, 4}));
  auto dp = m.groups(MeshAxis::DP);
  ASSERT_EQ(dp.size(), 8u);
  EXPECT_EQ(dp[1], (std::vector<int64_t>{1, 9}));
  for (unsigned a = 0; a < kNumMeshAxes; ++a) {
    MeshAxis axis = MeshAxis(a);
    std::set<int64_t> seen;
    for (const auto &g : m.groups(axis)) {
      EXPECT_EQ(int64_t(g.size()), m.size(axis));
      // The members share every coordinate but this axis's.
      for (int64_t r : g) {
        EXPECT_TRUE(seen.insert(r).second);
        MeshCoords c = m.coordinates(r), first = m.coordinates(g[0]);
        c[a] = first[a] = 0;
        EXPECT_EQ(c, first);
      }
    }
    EXPECT_EQ(int64_t(seen.size()), m.numRanks());
  }
}

TEST(MeshLayoutTest, PrintsRanksAndGroups) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printMeshLayout(make(1, 2, 2), os);
  EXPECT_NE(os.str().find("rank 3: dp=0 pp=1 ep=0 cp=0 tp=1"), std::string::npos) << text;
  EXPECT_NE(text.find("tp (2 of 2): [0 1] [2 3]"), std::string::npos) << text;
  EXPECT_EQ(text.find("dp ("), std::string::npos) << "axes of one rank have no groups";
}

} // namespace
