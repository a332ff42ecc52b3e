//===- ir/LocalBlocks.h - a value's block on each rank ----------*- C++ -*-===//
//
// A type keeps the global shape; on a rank of the mesh a value is its LOCAL
// block: every sharded dim is cut into (product of its axes' sizes) equal
// blocks and the rank holds the block its coordinates pick, the dim's axes
// read major first. A partial value's block on a rank is that rank's addend;
// the true value is the sum of the addends over the partial axes.
//
// A dim whose minor-most axis is dp need not divide (ZeRO's storage of any
// tensor over any dp, as GSPMD's uneven sharding): each part the outer axes
// leave, of p rows, is cut into dp blocks of ceil(p / dp) rows; the last
// blocks run past the data and are padded with zeros (a block may be all
// padding). Every rank's block has the same shape, so buffers, collectives
// and the ledger see ceil(p / dp) rows everywhere. Padding is 0 on every rank
// after every op (the multi-rank run checks it), and no result reads it: a
// gather drops it, the ops on such values (optimizer updates, casts, scaling,
// sums of squares) map 0 to 0.
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

#include <map>
#include <string>
#include <vector>

namespace planc::ir {

/// Per rank (indexed by rank), tensors by value name: each rank's blocks.
using RankTensorMaps = std::vector<std::map<std::string, Tensor>>;


/// The shape of one rank's block of a value of type `t` (the same on every
/// rank): every sharded dim divided by the product of the sizes of its axes,
/// rounded up where the minor-most axis leaves a remainder.
Shape localShape(const TensorType &t, const MeshLayout &mesh);

/// The leading part of `rank`'s block that holds data, per dim (localShape
/// where nothing is padded; smaller, or 0, in a padded block).
Shape dataShape(const TensorType &t, const MeshLayout &mesh, int64_t rank);

/// True when some rank's block of `t` holds padding.
bool isPadded(const TensorType &t, const MeshLayout &mesh);

/// "" when every padding element of `rank`'s `block` of `t` is 0, else which is not.
std::string checkPaddingIsZero(const Tensor &block, const TensorType &t, const MeshLayout &mesh, int64_t rank);

/// Where `rank`'s block starts in the global tensor, per dim.
std::vector<int64_t> blockOffsets(const TensorType &t, const MeshLayout &mesh, int64_t rank);

/// The global row-major index of each element of `rank`'s block, in the
/// block's row-major order; -1 for padding.
std::vector<int64_t> globalIndices(const TensorType &t, const MeshLayout &mesh, int64_t rank);

/// Every rank's block of `global` (indexed by rank), its padding 0. A partial
/// value is split into addends that sum to it: the ranks at coordinate 0 on
/// every partial axis hold the value, the others zeros.
std::vector<Tensor> splitToRanks(const Tensor &global, const TensorType &t, const MeshLayout &mesh);

/// The global tensor from every rank's block (indexed by rank): blocks are
/// placed at their offsets and summed over the partial axes. Copies on the
/// axes the value is replicated over must agree exactly; an error names the
/// two ranks that differ, a block of the wrong shape, or padding that is not 0.
llvm::Expected<Tensor> assembleFromRanks(llvm::ArrayRef<Tensor> blocks, const TensorType &t,
                                         const MeshLayout &mesh);

} // namespace planc::ir

#endif
