//===- tests/unit/runtime/MeshRanksTest.cpp - the run time's rank rules ---===//
//
// runtime/MeshRanks.h restates the execution plan's rules for the ranks of a
// running mesh (it may not link the compiler): its coordinates, groups and
// peers must be ir/MeshLayout.h's and exec/Groups.h's on every mesh.

#include "runtime/MeshRanks.h"

#include "exec/Groups.h"
#include "ir/MeshLayout.h"

#include <gtest/gtest.h>

using namespace planc;

namespace {

std::array<int64_t, runtime::kMeshAxes> sizesOf(const std::array<int64_t, kNumMeshAxes> &s) {
  std::array<int64_t, runtime::kMeshAxes> out{};
  for (unsigned a = 0; a < kNumMeshAxes; ++a) out[a] = s[a];
  return out;
}

TEST(MeshRanksTest, AxesAreIndexedAsTheIR) {
  EXPECT_EQ(unsigned(MeshAxis::DP), unsigned(runtime::kDP));
  EXPECT_EQ(unsigned(MeshAxis::PP), unsigned(runtime::kPP));
  EXPECT_EQ(unsigned(MeshAxis::TP), unsigned(runtime::kTP));
  EXPECT_EQ(unsigned(MeshAxis::CP), unsigned(runtime::kCP));
  EXPECT_EQ(unsigned(MeshAxis::EP), unsigned(runtime::kEP));
  for (int a = 0; a < runtime::kMeshAxes; ++a) EXPECT_STREQ(runtime::meshAxisName(a), spelling(MeshAxis(a)));
}

TEST(MeshRanksTest, CoordinatesGroupsAndPeersAreTheCompilers) {
  const std::array<int64_t, kNumMeshAxes> meshes[] = {
      {2, 2, 2, 1, 1}, {3, 1, 2, 1, 1}, {1, 3, 1, 1, 1}, {2, 1, 1, 1, 1}, {1, 2, 4, 1, 1}, {3, 2, 1, 1, 1}};
  for (const auto &sizes : meshes) {
    const MeshLayout layout(sizes);
    const runtime::MeshRanks ranks(sizesOf(sizes));
    ASSERT_EQ(ranks.ranks(), layout.numRanks());
    exec::ExecutionPlan plan;
    plan.mesh = sizes;
    for (int64_t r = 0; r < layout.numRanks(); ++r) {
      MeshCoords c = layout.coordinates(r);
      std::array<int64_t, runtime::kMeshAxes> rc = ranks.coordinates(r);
      for (unsigned a = 0; a < kNumMeshAxes; ++a) EXPECT_EQ(rc[a], c[a]) << "rank " << r << " axis " << a;
      EXPECT_EQ(ranks.rankOf(rc), r);
      for (unsigned a = 0; a < kNumMeshAxes; ++a) {
        exec::Step collective;
        collective.kind = ir::OpKind::AllReduce;
        collective.attrs = ir::AttrMap{{"axis", std::string(spelling(MeshAxis(a)))}};
        EXPECT_EQ(ranks.group(r, int(a)), exec::groupOf(plan, collective, r)) << "rank " << r << " axis " << a;
        for (int64_t offset : {-1, 1, 2}) {
          exec::Step send;
          send.kind = ir::OpKind::Send;
          send.attrs = ir::AttrMap{{"axis", std::string(spelling(MeshAxis(a)))}, {"peer_offset", offset}};
          EXPECT_EQ(ranks.peer(r, int(a), offset), exec::peerOf(plan, send, r))
              << "rank " << r << " axis " << a << " offset " << offset;
        }
      }
    }
  }
}

TEST(MeshRanksTest, DescribesTheAxesLargerThanOne) {
  EXPECT_EQ(runtime::MeshRanks({2, 2, 2, 1, 1}).describe(), "dp=2 tp=2 pp=2");
  EXPECT_EQ(runtime::MeshRanks({1, 1, 1, 1, 1}).describe(), "one rank");
  EXPECT_EQ(runtime::MeshRanks({1, 3, 1, 1, 1}).describe(), "pp=3");
}

} // namespace
