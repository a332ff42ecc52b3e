//===- ir/LocalBlocks.cpp - a value's block on each rank ------------------===//

#include "ir/LocalBlocks.h"

#include <algorithm>

using namespace planc;
using namespace planc::ir;

namespace {

/// How many blocks a dim is cut into, and which of them `coords` picks: the
/// axes are read major first, like the digits of a number.
std::pair<int64_t, int64_t> blockOf(llvm::ArrayRef<MeshAxis> axes, const MeshLayout &mesh, const MeshCoords &coords) {
  int64_t count = 1, index = 0;
  for (MeshAxis a : axes) {
    count *= mesh.size(a);
    index = index * mesh.size(a) + coords[unsigned(a)];
  }
  return {count, index};
}

bool isPartialOver(const TensorType &t, MeshAxis a) {
  return std::find(t.sharding.partial.begin(), t.sharding.partial.end(), a) != t.sharding.partial.end();
}

bool isShardedOver(const TensorType &t, MeshAxis a) {
  for (const auto &axes : t.sharding.dims)
    if (std::find(axes.begin(), axes.end(), a) != axes.end()) return true;
  return false;
}

/// Calls `fn(globalIndex, localIndex)` for every element of a block of shape
/// `local` placed at `offsets` in a tensor of shape `global`.
template <typename Fn>
void forEachBlockElement(const Shape &global, const std::vector<int64_t> &offsets, const Shape &local, Fn fn) {
  std::vector<int64_t> gStrides(global.size(), 1);
  for (size_t d = global.size(); d-- > 1;) gStrides[d - 1] = gStrides[d] * global[d];
  int64_t n = 1;
  for (int64_t s : local) n *= s;
  std::vector<int64_t> idx(local.size(), 0);
  for (int64_t l = 0; l < n; ++l) {
    int64_t gi = 0;
    for (size_t d = 0; d < local.size(); ++d) gi += (idx[d] + offsets[d]) * gStrides[d];
    fn(gi, l);
    for (size_t d = local.size(); d-- > 0;) { // row-major increment
      if (++idx[d] < local[d]) break;
      idx[d] = 0;
    }
  }
}

} // namespace

Shape ir::localShape(const TensorType &t, const MeshLayout &mesh) {
  Shape s = t.shape;
  MeshCoords origin{};
  for (size_t d = 0; d < s.size() && d < t.sharding.dims.size(); ++d)
    s[d] /= blockOf(t.sharding.dims[d], mesh, origin).first;
  return s;
}

std::vector<int64_t> ir::blockOffsets(const TensorType &t, const MeshLayout &mesh, int64_t rank) {
  Shape local = localShape(t, mesh);
  MeshCoords coords = mesh.coordinates(rank);
  std::vector<int64_t> offsets(t.rank(), 0);
  for (size_t d = 0; d < offsets.size() && d < t.sharding.dims.size(); ++d)
    offsets[d] = blockOf(t.sharding.dims[d], mesh, coords).second * local[d];
  return offsets;
}

std::vector<int64_t> ir::globalIndices(const TensorType &t, const MeshLayout &mesh, int64_t rank) {
  Shape local = localShape(t, mesh);
  int64_t n = 1;
  for (int64_t s : local) n *= s;
  std::vector<int64_t> out(static_cast<size_t>(n));
  forEachBlockElement(t.shape, blockOffsets(t, mesh, rank), local, [&](int64_t g, int64_t l) { out[l] = g; });
  return out;
}

std::vector<Tensor> ir::splitToRanks(const Tensor &global, const TensorType &t, const MeshLayout &mesh) {
  Shape local = localShape(t, mesh);
  std::vector<Tensor> blocks;
  for (int64_t r = 0; r < mesh.numRanks(); ++r) {
    Tensor b(local, global.dtype);
    MeshCoords coords = mesh.coordinates(r);
    bool holdsAddend = std::all_of(t.sharding.partial.begin(), t.sharding.partial.end(),
                                   [&](MeshAxis a) { return coords[unsigned(a)] == 0; });
    if (holdsAddend)
      forEachBlockElement(global.shape, blockOffsets(t, mesh, r), local,
                          [&](int64_t g, int64_t l) { b.data[l] = global.data[g]; });
    blocks.push_back(std::move(b));
  }
  return blocks;
}

llvm::Expected<Tensor> ir::assembleFromRanks(llvm::ArrayRef<Tensor> blocks, const TensorType &t,
                                             const MeshLayout &mesh) {
  auto fail = [](const std::string &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); };
  if (int64_t(blocks.size()) != mesh.numRanks())
    return fail(std::to_string(blocks.size()) + " blocks for a mesh of " + std::to_string(mesh.numRanks()) +
                " ranks");
  Shape local = localShape(t, mesh);
  Tensor global(t.shape, t.dtype);
  for (int64_t r = 0; r < mesh.numRanks(); ++r) {
    if (blocks[r].shape != local)
      return fail("rank " + std::to_string(r) + "'s block has shape " + toString(blocks[r].shape) + ", but " +
                  toString(t) + " has local shape " + toString(local));
    // On an axis the value is replicated over, only coordinate 0 contributes;
    // the other copies must equal it.
    MeshCoords coords = mesh.coordinates(r);
    MeshCoords source = coords;
    for (unsigned a = 0; a < kNumMeshAxes; ++a)
      if (!isPartialOver(t, MeshAxis(a)) && !isShardedOver(t, MeshAxis(a))) source[a] = 0;
    if (source != coords) {
      int64_t q = mesh.rankOf(source);
      if (blocks[r].data != blocks[q].data)
        return fail("rank " + std::to_string(r) + "'s copy of a replicated " + toString(t) + " differs from rank " +
                    std::to_string(q) + "'s");
      continue;
    }
    forEachBlockElement(t.shape, blockOffsets(t, mesh, r), local,
                        [&](int64_t g, int64_t l) { global.data[g] += blocks[r].data[l]; });
  }
  return global;
}
