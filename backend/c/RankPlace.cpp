//===- backend/c/RankPlace.cpp - where the running rank's block lies, as C ===//

#include "backend/c/RankPlace.h"

using namespace planc;
using namespace planc::backend;
using namespace planc::ir;

namespace {

/// How `dim` of `t` is cut (ir/LocalBlocks.cpp's dimBlock, without the
/// coordinates): the axes, the rows of each part the outer axes leave, and
/// the rows of one block.
struct DimCut {
  llvm::ArrayRef<MeshAxis> axes;
  int64_t part = 0, size = 0;
};

DimCut cutOf(const TensorType &t, size_t dim, const MeshSizes &mesh) {
  DimCut c;
  if (dim >= t.rank()) return c;
  c.part = c.size = t.shape[dim];
  if (dim >= t.sharding.dims.size() || t.sharding.dims[dim].empty()) return c;
  c.axes = t.sharding.dims[dim];
  int64_t outer = 1;
  for (MeshAxis a : c.axes.drop_back()) outer *= mesh[unsigned(a)];
  const int64_t m = mesh[unsigned(c.axes.back())];
  c.part = t.shape[dim] / outer;
  c.size = (c.part + m - 1) / m;
  return c;
}

/// "coord * k", or "coord" for k = 1.
std::string times(MeshAxis a, int64_t k) { return meshCoord(a) + (k == 1 ? "" : " * " + std::to_string(k)); }

} // namespace

void backend::renderMeshCoordPrelude(const CLanguage &lang, llvm::raw_ostream &os) {
  os << "// The rank's mesh coordinates, indexed by MeshAxis (ir/Mesh.h: dp, pp, tp, cp, ep); the executable sets\n"
     << "// them before the first step. Kernels of a block whose place depends on the rank read them.\n";
  os << lang.constantQualifier << " int64_t planc_mesh_coord[5] = {0, 0, 0, 0, 0};" << lang.constantNote << "\n\n";
}

bool backend::isSplitOverMesh(const TensorType &t, const MeshSizes &mesh) {
  for (const auto &axes : t.sharding.dims)
    for (MeshAxis a : axes)
      if (mesh[unsigned(a)] > 1) return true;
  return false;
}

std::string backend::meshCoord(MeshAxis axis) { return "planc_mesh_coord[" + std::to_string(unsigned(axis)) + "]"; }

std::string backend::blockOffsetExpr(const TensorType &t, size_t dim, const MeshSizes &mesh) {
  const DimCut c = cutOf(t, dim, mesh);
  if (c.axes.empty()) return "0";
  // offset = outerIndex * part + minor * size, outerIndex the outer axes'
  // coordinates read as the digits of a number (major first): each outer
  // axis steps by part times the sizes of the outer axes after it. An axis
  // of size 1 has coordinate 0 and adds nothing.
  std::string e;
  auto add = [&](MeshAxis a, int64_t k) {
    if (mesh[unsigned(a)] > 1) e += (e.empty() ? "" : " + ") + times(a, k);
  };
  llvm::ArrayRef<MeshAxis> outer = c.axes.drop_back();
  for (size_t j = 0; j < outer.size(); ++j) {
    int64_t k = c.part;
    for (size_t l = j + 1; l < outer.size(); ++l) k *= mesh[unsigned(outer[l])];
    add(outer[j], k);
  }
  add(c.axes.back(), c.size);
  return e.empty() ? "0" : "(" + e + ")";
}

std::string backend::dataRowsExpr(const TensorType &t, size_t dim, const MeshSizes &mesh) {
  const DimCut c = cutOf(t, dim, mesh);
  if (c.axes.empty()) return std::to_string(c.size);
  const MeshAxis minor = c.axes.back();
  // Even: every block is data. Uneven: part - minor * size rows are left
  // for this block, clamped to [0, size] (a block may be all padding).
  if (c.size * mesh[unsigned(minor)] == c.part) return std::to_string(c.size);
  const std::string left = "(" + std::to_string(c.part) + " - " + times(minor, c.size) + ")";
  const std::string size = std::to_string(c.size);
  return "(" + left + " < 0 ? 0 : " + left + " > " + size + " ? " + size + " : " + left + ")";
}
