//===- ir/LocalBlocks.h - a value's block on each rank ----------*- C++ -*-===//
//
// A type keeps the global shape; on a rank of the mesh a value is its LOCAL
// block: every sharded dim is cut into (product of its axes' sizes) equal
// blocks and the rank holds the block its coordinates pick, the dim's axes
// read major first. A partial value's block on a rank is that rank's addend;
// the true value is the sum of the addends over the partial axes.
//
// These helpers move between the two views: the local shape of a type, the
// split of a global tensor into every rank's block, and the assembly of the
// blocks back into the global tensor (what a per-rank run is compared with).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_LOCALBLOCKS_H
#define PLANC_IR_LOCALBLOCKS_H

#include "ir/MeshLayout.h"
#include "ir/Tensor.h"

#include "llvm/Support/Error.h"

#include <vector>

namespace planc::ir {

/// The shape of one rank's block of a value of type `t`: every sharded dim
/// divided by the product of the sizes of its axes. (The verifier ensures the
/// division is exact.)
Shape localShape(const TensorType &t, const MeshLayout &mesh);

/// Where `rank`'s block starts in the global tensor, per dim.
std::vector<int64_t> blockOffsets(const TensorType &t, const MeshLayout &mesh, int64_t rank);

/// The global row-major index of each element of `rank`'s block, in the
/// block's row-major order.
std::vector<int64_t> globalIndices(const TensorType &t, const MeshLayout &mesh, int64_t rank);

/// Every rank's block of `global` (indexed by rank). A partial value is split
/// into addends that sum to it: the ranks at coordinate 0 on every partial
/// axis hold the value, the others zeros.
std::vector<Tensor> splitToRanks(const Tensor &global, const TensorType &t, const MeshLayout &mesh);

/// The global tensor from every rank's block (indexed by rank): blocks are
/// placed at their offsets and summed over the partial axes. Copies on the
/// axes the value is replicated over must agree exactly; an error names the
/// two ranks that differ, or a block of the wrong shape.
llvm::Expected<Tensor> assembleFromRanks(llvm::ArrayRef<Tensor> blocks, const TensorType &t,
                                         const MeshLayout &mesh);

} // namespace planc::ir

#endif
