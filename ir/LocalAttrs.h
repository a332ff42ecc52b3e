//===- ir/LocalAttrs.h - an op's attributes on one rank's blocks -*- C++ -*-===//
//
// Types keep global shapes, but a few attributes are shapes too: reshape,
// broadcast_to, sum_to and fill {shape}, scatter_add {rows}, recv {shape}.
// On a rank these must describe the local block. The per-rank view of an op
// replaces them by the local shape of the op's result; every other attribute
// means the same on every rank (the partitioner keeps slice, pad, concat and
// the reduced dims of ops unsplit, so their indices stay global = local).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_LOCALATTRS_H
#define PLANC_IR_LOCALATTRS_H

#include "ir/IR.h"
#include "ir/MeshLayout.h"

namespace planc::ir {

/// The attributes `op` has on every rank of `mesh`: shape-valued ones
/// replaced by the local shape of its result. Equal to op.attrs when nothing
/// is split.
AttrMap localAttrs(const Op &op, const MeshLayout &mesh);

} // namespace planc::ir

#endif
