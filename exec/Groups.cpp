//===- exec/Groups.cpp - the ranks a communication step talks to ---------===//
//
// A group is computed from the rank's coordinates rather than by listing
// every group of the axis (MeshLayout::groups): the same ranks in the same
// order, in time proportional to the group.
//
//===----------------------------------------------------------------------===//

#include "exec/Groups.h"
#include "ir/MeshLayout.h"

using namespace planc;
using namespace planc::exec;

bool exec::isCommunicationStep(ir::OpKind kind) {
  return ir::isCommunication(kind) && kind != ir::OpKind::ShardSlice;
}

std::optional<MeshAxis> exec::axisOf(const Step &step) {
  auto it = step.attrs.find("axis");
  if (it == step.attrs.end()) return std::nullopt;
  const auto *name = std::get_if<std::string>(&it->second);
  return name ? parseMeshAxis(*name) : std::nullopt;
}

bool exec::hasValidMesh(const ExecutionPlan &plan) {
  // 2^22 ranks: beyond any machine, small enough that a group or a rank's
  // coordinates of a mesh read from text can always be listed.
  const int64_t kMaxRanks = int64_t(1) << 22;
  int64_t ranks = 1;
  for (int64_t n : plan.mesh) {
    if (n < 1 || n > kMaxRanks || ranks > kMaxRanks / n) return false;
    ranks *= n;
  }
  return true;
}

int64_t exec::wrapCoordinate(int64_t c, int64_t offset, int64_t n) {
  if (n < 1) return 0;
  int64_t r = (c % n + offset % n) % n;
  return r < 0 ? r + n : r;
}

std::vector<int64_t> exec::groupOf(const ExecutionPlan &plan, const Step &step, int64_t rank) {
  std::optional<MeshAxis> axis = axisOf(step);
  if (!axis || !hasValidMesh(plan)) return {};
  MeshLayout layout(plan.mesh);
  if (rank < 0 || rank >= layout.numRanks()) return {};
  MeshCoords coords = layout.coordinates(rank);
  std::vector<int64_t> group;
  for (int64_t c = 0; c < layout.size(*axis); ++c) {
    coords[unsigned(*axis)] = c;
    group.push_back(layout.rankOf(coords));
  }
  return group;
}

int64_t exec::peerOf(const ExecutionPlan &plan, const Step &step, int64_t rank) {
  if (step.kind != ir::OpKind::Send && step.kind != ir::OpKind::Recv) return -1;
  std::optional<MeshAxis> axis = axisOf(step);
  if (!axis || !hasValidMesh(plan)) return -1;
  MeshLayout layout(plan.mesh);
  if (rank < 0 || rank >= layout.numRanks()) return -1;
  int64_t offset = 0;
  auto it = step.attrs.find("peer_offset");
  if (it != step.attrs.end())
    if (const auto *i = std::get_if<int64_t>(&it->second)) offset = *i;
  MeshCoords coords = layout.coordinates(rank);
  unsigned a = unsigned(*axis);
  coords[a] = wrapCoordinate(coords[a], offset, layout.size(*axis));
  return layout.rankOf(coords);
}

int64_t exec::programIndexOf(const ExecutionPlan &plan, int64_t rank) {
  if (!hasValidMesh(plan)) return -1;
  MeshLayout layout(plan.mesh);
  if (rank < 0 || rank >= layout.numRanks()) return -1;
  int64_t stage = layout.coordinates(rank)[unsigned(MeshAxis::PP)];
  if (stage < int64_t(plan.programs.size()) && plan.programs[size_t(stage)].stage == stage) return stage;
  for (size_t i = 0; i < plan.programs.size(); ++i)
    if (plan.programs[i].stage == stage) return int64_t(i);
  return -1;
}
