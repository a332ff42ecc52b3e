//===- backend/c/RankPlace.h - where the running rank's block lies, as C -*- C++ -*-===//
//
// One program serves every rank of a pipeline stage (exec/ExecutionPlan.h),
// so a kernel whose work depends on where its rank's block sits in the
// global value (shard_slice, a vocab-split table, dropout's mask of a split
// value, the vocab-parallel cross-entropy) cannot take that place as a
// constant. It reads the rank's mesh coordinates at run time from one array
// of the kernels' prelude,
//
//   planc_mesh_coord[unsigned(MeshAxis)]   (ir/Mesh.h: dp, pp, tp, cp, ep)
//
// which the executable sets before the first step. The mesh's sizes are
// known when the kernels are rendered, so a block's place is an expression
// over planc_mesh_coord and constants, the rule of ir/LocalBlocks.h spelled
// out: a dim's axes read major first, the minor-most cutting each part the
// outer axes leave into ceil(part / size) rows (the last blocks padded).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_C_RANKPLACE_H
#define PLANC_BACKEND_C_RANKPLACE_H

#include "backend/c/CFamily.h"
#include "ir/Mesh.h"

#include <array>

namespace planc::backend {

/// The mesh's axis sizes, indexed by MeshAxis (ExecutionPlan::mesh).
using MeshSizes = std::array<int64_t, kNumMeshAxes>;

/// The prelude's declaration of planc_mesh_coord: for the CPU a static
/// int64_t array of zeros, for CUDA a __constant__ one (the executable copies
/// the coordinates into it with cudaMemcpyToSymbol).
void renderMeshCoordPrelude(const CLanguage &lang, llvm::raw_ostream &os);

/// Whether a rank's block of `t` depends on the rank: some dim is split over
/// an axis of more than one rank.
bool isSplitOverMesh(const ir::TensorType &t, const MeshSizes &mesh);

/// "planc_mesh_coord[2]": the rank's coordinate on `axis`, as C.
std::string meshCoord(MeshAxis axis);

/// The C expression (int64_t) of where the running rank's block of a value
/// of type `t` starts along `dim` in the global value: ir::blockOffsets'
/// number for that rank. "0" where the dim is not split (or only over axes
/// of size 1).
std::string blockOffsetExpr(const ir::TensorType &t, size_t dim, const MeshSizes &mesh);

/// The C expression (int64_t) of how many of the rank's block's rows along
/// `dim` hold data (ir::dataShape): the block's size, a constant, unless the
/// split is uneven and the rows past the data are padding.
std::string dataRowsExpr(const ir::TensorType &t, size_t dim, const MeshSizes &mesh);

} // namespace planc::backend

#endif
