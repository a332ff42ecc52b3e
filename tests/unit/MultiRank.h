//===- tests/unit/MultiRank.h - every rank of a partitioned module at once -*- C++ -*-===//
//
// A test harness, not part of planc: planc's commands run execution plans
// (backend/interp/PlanInterpreter.h), and the lock-step interpreter of the
// library is the single-device oracle only. The unit tests of sharding rules
// use this one on IR fragments that are no training step.
//
// Runs a partitioned module as SPMD: the same program on every rank of the
// mesh, in one process. Each rank holds its LOCAL block of every value (see
// ir/LocalBlocks.h: the global shape divided along the sharded dims; a
// partial value holds that rank's addend). Execution is in lock step: for each
// op in module order, the op runs on every rank; a collective then exchanges
// the blocks across the groups of its axis (CollectiveExchange.h here). Since
// every rank runs the same program, all reach each collective together.
//
// What runs: any op whose kernel computes the right block from the operands'
// blocks and whose attributes fit the local shapes — elementwise ops, matmul,
// reductions, softmax or norms over unsharded dims, the optimizers, and the
// collectives. Before an op runs, its shape rule is rerun on the local operand
// shapes; if it rejects them or computes other than the results' local shapes
// (a reshape or broadcast_to whose `shape` is global, an index attribute over
// a sharded dim) the run stops with an error naming the op. Shape-valued
// attributes are replaced by their local values first (ir/LocalAttrs.h), and
// kernels whose result depends on where a block sits (dropout's mask, a
// gather from a vocab-split table, shard_slice) read the block's offsets from
// the EvalContext. Whether an op is legal on its operands' shardings
// (softmax over a sharded dim, a nonlinearity of a partial sum) is the
// partitioner's business; the simulator runs the
// program as written.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_TESTS_UNIT_MULTIRANK_H
#define PLANC_TESTS_UNIT_MULTIRANK_H

#include "ir/Interpreter.h"
#include "ir/LocalBlocks.h"
#include "ir/MeshLayout.h"

#include <vector>

namespace planc::ir {

/// Runs `m` on every rank of `mesh` (which must be the module's mesh). `feeds`
/// holds, per rank, the local block of every parameter and input. Returns per
/// rank the local blocks of the module's outputs, or the first error (a
/// missing feed, a block of the wrong shape, an op that does not fit the
/// local shapes, a receive with no matching send).
llvm::Expected<RankTensorMaps> interpretRanks(const Module &m, const MeshLayout &mesh, const RankTensorMaps &feeds,
                                              uint64_t seed = 0);

/// The per-rank feeds of `m` from global values of its parameters and inputs
/// (each split by its value's type with splitToRanks).
llvm::Expected<RankTensorMaps> splitFeeds(const Module &m, const MeshLayout &mesh, const TensorMap &global);

/// The module's outputs as global tensors, assembled from per-rank blocks
/// (assembleFromRanks with each output's type).
llvm::Expected<TensorMap> assembleOutputs(const Module &m, const MeshLayout &mesh, const RankTensorMaps &local);

} // namespace planc::ir

#endif
