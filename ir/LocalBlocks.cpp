//===- ir/LocalBlocks.cpp - a value's block on each rank ------------------===//

#include "ir/LocalBlocks.h"
#include "support/Error.h"
#include "support/Plural.h"

#include <algorithm>

using namespace planc;
using namespace planc::ir;

namespace {

/// Where a rank's block of one dim lies: its size (every rank's block has
/// it), its first global index, and how many of its rows hold data (the
/// rest is padding). The dim's axes are read major first, like the digits of
/// a number; every axis but the minor-most divides the dim exactly (the
/// verifier's rule), and the minor-most cuts each of those parts into
/// ceil(part / size) rows, the last blocks padded.
struct DimBlock {
  int64_t size = 0, offset = 0, valid = 0;
};

DimBlock dimBlock(int64_t n, llvm::ArrayRef<MeshAxis> axes, const MeshLayout &mesh, const MeshCoords &coords) {
  if (axes.empty()) return {n, 0, n};
  int64_t outer = 1, outerIndex = 0;
  for (MeshAxis a : axes.drop_back()) {
    outer *= mesh.size(a);
    outerIndex = outerIndex * mesh.size(a) + coords[unsigned(a)];
  }
  MeshAxis minor = axes.back();
  int64_t part = n / outer, m = mesh.size(minor), i = coords[unsigned(minor)];
  int64_t size = (part + m - 1) / m;
  int64_t valid = std::clamp<int64_t>(part - i * size, 0, size);
  return {size, outerIndex * part + i * size, valid};
}

std::vector<DimBlock> blocksOf(const TensorType &t, const MeshLayout &mesh, const MeshCoords &coords) {
  std::vector<DimBlock> b;
  for (size_t d = 0; d < t.rank(); ++d)
    b.push_back(d < t.sharding.dims.size() ? dimBlock(t.shape[d], t.sharding.dims[d], mesh, coords)
                                           : DimBlock{t.shape[d], 0, t.shape[d]});
  return b;
}

bool isPartialOver(const TensorType &t, MeshAxis a) {
  return std::find(t.sharding.partial.begin(), t.sharding.partial.end(), a) != t.sharding.partial.end();
}

bool isShardedOver(const TensorType &t, MeshAxis a) {
  for (const auto &axes : t.sharding.dims)
    if (std::find(axes.begin(), axes.end(), a) != axes.end()) return true;
  return false;
}

/// Calls `fn(globalIndex, localIndex)` for every element of a block that
/// holds data (padding is skipped): `blocks` are its dims, in a tensor of
/// shape `global`; the block itself is stored row-major at its full size.
template <typename Fn>
void forEachBlockElement(const Shape &global, const std::vector<DimBlock> &blocks, Fn fn) {
  const size_t rank = global.size();
  std::vector<int64_t> gStrides(rank, 1), lStrides(rank, 1);
  for (size_t d = rank; d-- > 1;) {
    gStrides[d - 1] = gStrides[d] * global[d];
    lStrides[d - 1] = lStrides[d] * blocks[d].size;
  }
  int64_t n = 1;
  for (const DimBlock &b : blocks) n *= b.valid;
  if (n == 0) return;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t gi = 0, li = 0;
    for (size_t d = 0; d < rank; ++d) {
      gi += (idx[d] + blocks[d].offset) * gStrides[d];
      li += idx[d] * lStrides[d];
    }
    fn(gi, li);
    for (size_t d = rank; d-- > 0;) { // row-major increment over the data
      if (++idx[d] < blocks[d].valid) break;
      idx[d] = 0;
    }
  }
}

} // namespace

Shape ir::localShape(const TensorType &t, const MeshLayout &mesh) {
  // The block's size alone (every rank's is the same): called for every
  // value by the ledger and the communication summary, so no coordinates.
  Shape s = t.shape;
  for (size_t d = 0; d < s.size() && d < t.sharding.dims.size(); ++d) {
    const auto &axes = t.sharding.dims[d];
    if (axes.empty()) continue;
    int64_t outer = 1;
    for (size_t i = 0; i + 1 < axes.size(); ++i) outer *= mesh.size(axes[i]);
    int64_t part = s[d] / outer, m = mesh.size(axes.back());
    s[d] = (part + m - 1) / m;
  }
  return s;
}

Shape ir::dataShape(const TensorType &t, const MeshLayout &mesh, int64_t rank) {
  Shape s;
  for (const DimBlock &b : blocksOf(t, mesh, mesh.coordinates(rank))) s.push_back(b.valid);
  return s;
}

bool ir::isPadded(const TensorType &t, const MeshLayout &mesh) {
  // Some rank's block runs past the data when a dim's blocks, times their
  // count, exceed the dim.
  Shape local = localShape(t, mesh);
  for (size_t d = 0; d < local.size() && d < t.sharding.dims.size(); ++d) {
    int64_t blocks = 1;
    for (MeshAxis a : t.sharding.dims[d]) blocks *= mesh.size(a);
    if (local[d] * blocks != t.shape[d]) return true;
  }
  return false;
}

std::vector<int64_t> ir::blockOffsets(const TensorType &t, const MeshLayout &mesh, int64_t rank) {
  std::vector<int64_t> offsets;
  for (const DimBlock &b : blocksOf(t, mesh, mesh.coordinates(rank))) offsets.push_back(b.offset);
  return offsets;
}

std::vector<int64_t> ir::globalIndices(const TensorType &t, const MeshLayout &mesh, int64_t rank) {
  int64_t n = 1;
  for (int64_t s : localShape(t, mesh)) n *= s;
  std::vector<int64_t> out(static_cast<size_t>(n), -1);
  forEachBlockElement(t.shape, blocksOf(t, mesh, mesh.coordinates(rank)), [&](int64_t g, int64_t l) { out[l] = g; });
  return out;
}

std::string ir::checkPaddingIsZero(const Tensor &block, const TensorType &t, const MeshLayout &mesh, int64_t rank) {
  if (!isPadded(t, mesh)) return "";
  std::vector<bool> data(block.data.size(), false);
  forEachBlockElement(t.shape, blocksOf(t, mesh, mesh.coordinates(rank)), [&](int64_t, int64_t l) {
    if (size_t(l) < data.size()) data[size_t(l)] = true;
  });
  for (size_t i = 0; i < block.data.size(); ++i)
    if (!data[i] && block.data[i] != 0)
      return "rank " + std::to_string(rank) + "'s block of " + toString(t) + " holds " +
             std::to_string(block.data[i]) + " in its padding (element " + std::to_string(i) + "), not 0";
  return "";
}

std::vector<Tensor> ir::splitToRanks(const Tensor &global, const TensorType &t, const MeshLayout &mesh) {
  Shape local = localShape(t, mesh);
  std::vector<Tensor> blocks;
  for (int64_t r = 0; r < mesh.numRanks(); ++r) {
    Tensor b(local, global.dtype); // padding stays 0
    MeshCoords coords = mesh.coordinates(r);
    bool holdsAddend = std::all_of(t.sharding.partial.begin(), t.sharding.partial.end(),
                                   [&](MeshAxis a) { return coords[unsigned(a)] == 0; });
    if (holdsAddend)
      forEachBlockElement(global.shape, blocksOf(t, mesh, coords),
                          [&](int64_t g, int64_t l) { b.data[l] = global.data[g]; });
    blocks.push_back(std::move(b));
  }
  return blocks;
}

llvm::Expected<Tensor> ir::assembleFromRanks(llvm::ArrayRef<Tensor> blocks, const TensorType &t,
                                             const MeshLayout &mesh) {
  if (int64_t(blocks.size()) != mesh.numRanks())
    return makeError(counted(int64_t(blocks.size()), "block") + " for a mesh of " + counted(mesh.numRanks(), "rank"));
  Shape local = localShape(t, mesh);
  Tensor global(t.shape, t.dtype);
  for (int64_t r = 0; r < mesh.numRanks(); ++r) {
    if (blocks[r].shape != local)
      return makeError("rank " + std::to_string(r) + "'s block has shape " + toString(blocks[r].shape) + ", but " +
                  toString(t) + " has local shape " + toString(local));
    if (std::string e = checkPaddingIsZero(blocks[r], t, mesh, r); !e.empty()) return makeError(e);
    // On an axis the value is replicated over, only coordinate 0 contributes;
    // the other copies must equal it.
    MeshCoords coords = mesh.coordinates(r);
    MeshCoords source = coords;
    for (unsigned a = 0; a < kNumMeshAxes; ++a)
      if (!isPartialOver(t, MeshAxis(a)) && !isShardedOver(t, MeshAxis(a))) source[a] = 0;
    if (source != coords) {
      int64_t q = mesh.rankOf(source);
      if (blocks[r].data != blocks[q].data)
        return makeError("rank " + std::to_string(r) + "'s copy of a replicated " + toString(t) + " differs from rank " +
                    std::to_string(q) + "'s");
      continue;
    }
    forEachBlockElement(t.shape, blocksOf(t, mesh, coords),
                        [&](int64_t g, int64_t l) { global.data[g] += blocks[r].data[l]; });
  }
  return global;
}
