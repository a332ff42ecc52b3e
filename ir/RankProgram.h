//===- ir/RankProgram.h - one rank's program of a partitioned module -*- C++ -*-===//
//
// A partitioned module (passes/ShardingPropagation.cpp) is one SPMD program
// over GLOBAL shapes whose types carry shardings. rankProgram gives what one
// rank of the mesh runs, for reading and for later backends:
//
//  - every value's type is its LOCAL block (ir/LocalBlocks.h localShape),
//    with no sharding;
//  - shape-valued attributes are local (ir/LocalAttrs.h localAttrs);
//  - every communication op gets `group = [r0, r1, ...]`: the ranks it talks
//    to, the group of its axis that holds the rank (MeshLayout::groups), in
//    member order; send and recv also get `peer`: the rank they send to or
//    receive from;
//  - ops of another pipeline stage (`pipeline_stage` is not the rank's pp
//    coordinate) and the outputs they make are left out; a `stage_merge`
//    keeps its operands, of which only its own stage's is defined here;
//  - the module is named `<name>.rank<R>` and its mesh is all ones.
//
// The per-rank module does not verify in general: the shape rules of the
// collectives describe global shapes and shardings (an all_gather's result
// is n times its operand here), so it is not fed to passes or the verifier.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_RANKPROGRAM_H
#define PLANC_IR_RANKPROGRAM_H

#include "ir/IR.h"
#include "ir/MeshLayout.h"

#include <memory>

namespace planc::ir {

/// Rank `rank`'s program of `partitioned` on `mesh`; 0 <= rank <
/// mesh.numRanks() (asserted).
std::unique_ptr<Module> rankProgram(const Module &partitioned, const MeshLayout &mesh, int64_t rank);

} // namespace planc::ir

#endif
