//===- runtime/MeshRanks.cpp - ranks, coordinates and groups at run time ---===//

#include "runtime/MeshRanks.h"

using namespace planc::runtime;

const char *planc::runtime::meshAxisName(int axis) {
  static const char *const names[kMeshAxes] = {"dp", "pp", "tp", "cp", "ep"};
  return axis >= 0 && axis < kMeshAxes ? names[axis] : "?";
}

MeshRanks::MeshRanks(const std::array<int64_t, kMeshAxes> &sizes) : sizes_(sizes) {
  // tp varies fastest, then cp, ep, pp, dp (ir/MeshLayout.h).
  const int fastestFirst[kMeshAxes] = {kTP, kCP, kEP, kPP, kDP};
  int64_t stride = 1;
  for (int a : fastestFirst) {
    if (sizes_[size_t(a)] < 1) sizes_[size_t(a)] = 1;
    strides_[size_t(a)] = stride;
    stride *= sizes_[size_t(a)];
  }
  ranks_ = stride;
}

std::array<int64_t, kMeshAxes> MeshRanks::coordinates(int64_t rank) const {
  std::array<int64_t, kMeshAxes> c{};
  for (int a = 0; a < kMeshAxes; ++a) c[size_t(a)] = rank / strides_[size_t(a)] % sizes_[size_t(a)];
  return c;
}

int64_t MeshRanks::rankOf(const std::array<int64_t, kMeshAxes> &coords) const {
  int64_t r = 0;
  for (int a = 0; a < kMeshAxes; ++a) r += coords[size_t(a)] * strides_[size_t(a)];
  return r;
}

std::vector<int64_t> MeshRanks::group(int64_t rank, int axis) const {
  std::array<int64_t, kMeshAxes> c = coordinates(rank);
  std::vector<int64_t> members;
  for (int64_t i = 0; i < sizes_[size_t(axis)]; ++i) {
    c[size_t(axis)] = i;
    members.push_back(rankOf(c));
  }
  return members;
}

int64_t MeshRanks::peer(int64_t rank, int axis, int64_t offset) const {
  std::array<int64_t, kMeshAxes> c = coordinates(rank);
  const int64_t n = sizes_[size_t(axis)];
  c[size_t(axis)] = ((c[size_t(axis)] + offset) % n + n) % n;
  return rankOf(c);
}

std::string MeshRanks::describe() const {
  std::string s;
  const int order[kMeshAxes] = {kDP, kTP, kPP, kCP, kEP};
  for (int a : order)
    if (sizes_[size_t(a)] > 1) s += (s.empty() ? "" : " ") + std::string(meshAxisName(a)) + "=" + std::to_string(sizes_[size_t(a)]);
  return s.empty() ? "one rank" : s;
}
