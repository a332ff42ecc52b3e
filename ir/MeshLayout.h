//===- ir/MeshLayout.h - ranks <-> mesh coordinates -------------*- C++ -*-===//
//
// The device mesh as a numbering of ranks. A rank's coordinate on each axis
// follows Megatron's layout: tp varies fastest, then cp, ep, pp, and dp
// slowest:
//
//   rank = tp + T * (cp + C * (ep + E * (pp + P * dp)))
//
// so the ranks of one tensor-parallel group are consecutive (one node, the
// fastest links) and a data-parallel group strides over whole model replicas.
// A group of an axis is the set of ranks that share every other coordinate:
// the ranks a collective over that axis talks to.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_MESHLAYOUT_H
#define PLANC_IR_MESHLAYOUT_H

#include "ir/Mesh.h"

#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <vector>

namespace planc {

using MeshCoords = std::array<int64_t, kNumMeshAxes>; // indexed by MeshAxis

class MeshLayout {
public:
  /// The axes from fastest- to slowest-varying.
  static constexpr std::array<MeshAxis, kNumMeshAxes> kFastestFirst = {
      MeshAxis::TP, MeshAxis::CP, MeshAxis::EP, MeshAxis::PP, MeshAxis::DP};

  /// \p sizes is indexed by MeshAxis; every size must be at least 1.
  explicit MeshLayout(const std::array<int64_t, kNumMeshAxes> &sizes);

  int64_t size(MeshAxis axis) const { return sizes[unsigned(axis)]; }
  int64_t numRanks() const { return ranks; }

  MeshCoords coordinates(int64_t rank) const;
  int64_t rankOf(const MeshCoords &coords) const;

  /// The ranks that differ from each other only on \p axis, each group in
  /// increasing coordinate on that axis, groups ordered by their first rank.
  std::vector<std::vector<int64_t>> groups(MeshAxis axis) const;

private:
  std::array<int64_t, kNumMeshAxes> sizes;
  std::array<int64_t, kNumMeshAxes> strides; // rank distance of one step on an axis
  int64_t ranks = 1;
};

/// The axis sizes, one line per rank with its coordinates, and the groups
/// of every axis larger than one: stable text for people and FileCheck.
void printMeshLayout(const MeshLayout &layout, llvm::raw_ostream &os);

} // namespace planc

#endif
