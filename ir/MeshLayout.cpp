//===- ir/MeshLayout.cpp - ranks <-> mesh coordinates ---------------------===//

#include "ir/MeshLayout.h"
#include "support/Plural.h"

#include <cassert>

using namespace planc;

MeshLayout::MeshLayout(const std::array<int64_t, kNumMeshAxes> &sizes) : sizes(sizes) {
  for (MeshAxis axis : kFastestFirst) {
    assert(size(axis) >= 1 && "a mesh axis has at least one rank");
    strides[unsigned(axis)] = ranks;
    ranks *= size(axis);
  }
}

MeshCoords MeshLayout::coordinates(int64_t rank) const {
  assert(rank >= 0 && rank < ranks && "rank outside the mesh");
  MeshCoords coords{};
  for (MeshAxis axis : kFastestFirst) {
    coords[unsigned(axis)] = rank % size(axis);
    rank /= size(axis);
  }
  return coords;
}

int64_t MeshLayout::rankOf(const MeshCoords &coords) const {
  int64_t rank = 0;
  for (MeshAxis axis : kFastestFirst) {
    assert(coords[unsigned(axis)] >= 0 && coords[unsigned(axis)] < size(axis) && "coordinate outside its axis");
    rank += coords[unsigned(axis)] * strides[unsigned(axis)];
  }
  return rank;
}

std::vector<std::vector<int64_t>> MeshLayout::groups(MeshAxis axis) const {
  std::vector<std::vector<int64_t>> result;
  // A group starts at every rank whose coordinate on the axis is 0; rank order
  // of those starts is the order of the groups.
  for (int64_t first = 0; first < ranks; ++first) {
    if (coordinates(first)[unsigned(axis)] != 0) continue;
    std::vector<int64_t> group;
    for (int64_t i = 0; i < size(axis); ++i) group.push_back(first + i * strides[unsigned(axis)]);
    result.push_back(std::move(group));
  }
  return result;
}

void planc::printMeshLayout(const MeshLayout &layout, llvm::raw_ostream &os) {
  // Printed slowest axis first, so a rank's coordinates read like its number.
  std::array<MeshAxis, kNumMeshAxes> slowestFirst;
  for (unsigned i = 0; i < kNumMeshAxes; ++i) slowestFirst[i] = MeshLayout::kFastestFirst[kNumMeshAxes - 1 - i];

  os << "mesh: " << counted(layout.numRanks(), "rank") << " =";
  for (unsigned i = 0; i < kNumMeshAxes; ++i)
    os << (i ? " x " : " ") << spelling(slowestFirst[i]) << " " << layout.size(slowestFirst[i]);
  os << "\nlayout: tp fastest-varying, then cp, ep, pp; dp slowest\n";

  os << "ranks:\n";
  for (int64_t r = 0; r < layout.numRanks(); ++r) {
    MeshCoords c = layout.coordinates(r);
    os << "  rank " << r << ":";
    for (MeshAxis axis : slowestFirst) os << " " << spelling(axis) << "=" << c[unsigned(axis)];
    os << "\n";
  }

  os << "groups:\n";
  bool any = false;
  for (MeshAxis axis : slowestFirst) {
    if (layout.size(axis) == 1) continue;
    any = true;
    auto groups = layout.groups(axis);
    os << "  " << spelling(axis) << " (" << groups.size() << " of " << layout.size(axis) << "):";
    for (const auto &g : groups) {
      os << " [";
      for (size_t i = 0; i < g.size(); ++i) os << (i ? " " : "") << g[i];
      os << "]";
    }
    os << "\n";
  }
  if (!any) os << "  none: every axis has one rank\n";
}
