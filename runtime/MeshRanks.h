//===- runtime/MeshRanks.h - ranks, coordinates and groups at run time -*- C++ -*-===//
//
// What a running rank needs of the mesh, apart from the compiler: its
// coordinates, the group of a collective over one axis and the peer of a
// message. The rules are the execution plan's (exec/Groups.h over
// ir/MeshLayout.h), restated here because runtime/ links nothing of the
// compiler; a unit test holds the two to the same answers on several meshes.
//
//   axes indexed as ir/Mesh.h's MeshAxis: dp, pp, tp, cp, ep
//   rank = tp + T * (cp + C * (ep + E * (pp + P * dp)))   (tp fastest)
//   group of axis a: the ranks that differ from this one only in
//                    coordinate a, in increasing coordinate
//   peer of a message on axis a with offset k: coordinate (c + k) mod n
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_MESHRANKS_H
#define PLANC_RUNTIME_MESHRANKS_H

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace planc::runtime {

constexpr int kMeshAxes = 5;
enum MeshAxisIndex { kDP = 0, kPP = 1, kTP = 2, kCP = 3, kEP = 4 };

/// "dp", "pp", "tp", "cp", "ep".
const char *meshAxisName(int axis);

class MeshRanks {
public:
  MeshRanks() = default;
  /// Sizes indexed by MeshAxisIndex, each at least 1.
  explicit MeshRanks(const std::array<int64_t, kMeshAxes> &sizes);

  int64_t size(int axis) const { return sizes_[size_t(axis)]; }
  int64_t ranks() const { return ranks_; }
  std::array<int64_t, kMeshAxes> coordinates(int64_t rank) const;
  int64_t rankOf(const std::array<int64_t, kMeshAxes> &coords) const;
  /// The members of `rank`'s group over `axis`, in member order.
  std::vector<int64_t> group(int64_t rank, int axis) const;
  /// The rank at coordinate (c + offset) mod n of `axis`.
  int64_t peer(int64_t rank, int axis, int64_t offset) const;
  /// "dp=2 tp=2 pp=2" (axes larger than one; "one rank" when none).
  std::string describe() const;

private:
  std::array<int64_t, kMeshAxes> sizes_{1, 1, 1, 1, 1};
  std::array<int64_t, kMeshAxes> strides_{1, 1, 1, 1, 1};
  int64_t ranks_ = 1;
};

} // namespace planc::runtime

#endif
