//===- tests/unit/backend/RankPlaceTest.cpp - a rank's block place as C, compiled -===//
//
// backend/c/RankPlace.h renders where a rank's block lies as C expressions
// over planc_mesh_coord. Here they are compiled into one program that sets
// the coordinates of every rank of several meshes in turn and prints each
// dim's offset and data rows; both must equal ir/LocalBlocks.h's
// blockOffsets and dataShape for that rank: even and uneven (padded)
// splits, a dim split over two and three axes, axes of size 1.
//
//===----------------------------------------------------------------------===//

#include "backend/c/RankPlace.h"
#include "ir/LocalBlocks.h"
#include "ir/MeshLayout.h"

#include "CompiledProgram.h"

#include <fstream>

using namespace planc;
using namespace planc::backend;
using namespace planc::ir;

namespace {

struct PlaceCase {
  std::string label;
  MeshSizes mesh;
  TensorType type;
};

/// A type of `shape` with `dims[d]` the axes splitting dim d (major first).
TensorType split(Shape shape, std::vector<std::vector<MeshAxis>> dims) {
  TensorType t(std::move(shape), DType::F32);
  for (size_t d = 0; d < dims.size(); ++d) t.sharding.dims[d] = dims[d];
  return t;
}

MeshSizes sizes(int64_t dp, int64_t pp, int64_t tp, int64_t cp = 1, int64_t ep = 1) { return {dp, pp, tp, cp, ep}; }

TEST(RankPlaceTest, CompiledOffsetsAndDataRowsEqualLocalBlocks) {
  const MeshAxis DP = MeshAxis::DP, PP = MeshAxis::PP, TP = MeshAxis::TP, CP = MeshAxis::CP, EP = MeshAxis::EP;
  const std::vector<PlaceCase> cases = {
      {"b_qkv over tp then dp", sizes(2, 2, 2), split({192}, {{TP, DP}})},
      {"a table over tp and its columns over dp", sizes(2, 2, 2), split({256, 64}, {{TP}, {DP}})},
      {"7 rows over dp 3 (padded)", sizes(3, 1, 1), split({7, 5}, {{DP}})},
      {"10 over tp 2 then dp 3 (padded)", sizes(3, 1, 2), split({10}, {{TP, DP}})},
      {"columns over tp 3, rows whole", sizes(1, 1, 3), split({4, 12}, {{}, {TP}})},
      {"three axes on one dim", sizes(2, 1, 2, 3), split({24, 6}, {{DP, CP, TP}})},
      {"ep then dp, uneven", sizes(2, 1, 1, 1, 3), split({9}, {{EP, DP}})},
      {"a block all padding: 2 rows over dp 3", sizes(3, 2, 1), split({2, 3}, {{DP}})},
      {"pp and an axis of size 1", sizes(1, 3, 1), split({6, 4}, {{PP}, {TP}})},
      {"not split", sizes(2, 2, 2), split({5, 3}, {})},
  };

  planc::testing::ScratchDir dir;
  std::string source;
  llvm::raw_string_ostream os(source);
  os << "#include <cstdint>\n#include <cstdio>\n#include <string>\n\n";
  renderMeshCoordPrelude(cpuLanguage(), os);
  os << "int main(int, char **argv) {\n  FILE *f = fopen((std::string(argv[1]) + \"/places\").c_str(), \"w\");\n";
  for (const PlaceCase &c : cases) {
    const MeshLayout layout(c.mesh);
    for (int64_t r = 0; r < layout.numRanks(); ++r) {
      const MeshCoords coords = layout.coordinates(r);
      os << "  // " << c.label << ", rank " << r << "\n";
      for (unsigned a = 0; a < kNumMeshAxes; ++a) os << "  planc_mesh_coord[" << a << "] = " << coords[a] << ";\n";
      for (size_t d = 0; d < c.type.rank(); ++d)
        os << "  fprintf(f, \"%lld %lld\\n\", (long long)" << blockOffsetExpr(c.type, d, c.mesh) << ", (long long)"
           << dataRowsExpr(c.type, d, c.mesh) << ");\n";
    }
  }
  os << "  fclose(f);\n  return 0;\n}\n";
  os.flush();
  ASSERT_TRUE(planc::testing::compileAndRun(source, dir.path));

  std::ifstream in(dir.path + "/places");
  for (const PlaceCase &c : cases) {
    const MeshLayout layout(c.mesh);
    for (int64_t r = 0; r < layout.numRanks(); ++r) {
      const std::vector<int64_t> offsets = blockOffsets(c.type, layout, r);
      const Shape data = dataShape(c.type, layout, r);
      for (size_t d = 0; d < c.type.rank(); ++d) {
        long long offset = -1, rows = -1;
        ASSERT_TRUE(in >> offset >> rows) << c.label << ": the program printed too little";
        EXPECT_EQ(offset, offsets[d]) << c.label << ", rank " << r << ", dim " << d << "\n" << source;
        EXPECT_EQ(rows, data[d]) << c.label << ", rank " << r << ", dim " << d;
      }
    }
  }
}

TEST(RankPlaceTest, ConstantsWhereNothingDependsOnTheRank) {
  const MeshSizes mesh = sizes(2, 1, 2);
  TensorType whole(Shape{8, 4}, DType::F32);
  EXPECT_EQ(blockOffsetExpr(whole, 0, mesh), "0");
  EXPECT_EQ(dataRowsExpr(whole, 1, mesh), "4");
  EXPECT_FALSE(isSplitOverMesh(whole, mesh));
  // Split over an axis of one rank: still the whole dim, at 0.
  TensorType overPp = split({8, 4}, {{MeshAxis::PP}});
  EXPECT_EQ(blockOffsetExpr(overPp, 0, mesh), "0");
  EXPECT_FALSE(isSplitOverMesh(overPp, mesh));
  // An even split: a constant number of rows, the offset by the coordinate.
  TensorType overTp = split({8, 4}, {{MeshAxis::TP}});
  EXPECT_EQ(blockOffsetExpr(overTp, 0, mesh), "(planc_mesh_coord[2] * 4)");
  EXPECT_EQ(dataRowsExpr(overTp, 0, mesh), "4");
  EXPECT_TRUE(isSplitOverMesh(overTp, mesh));
}

} // namespace
