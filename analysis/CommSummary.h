//===- analysis/CommSummary.h - the collectives of a step, per rank -*- C++ -*-===//
//
// What one training step sends over the network: for each rank of the mesh,
// the collectives of a partitioned module (passes/ShardingPropagation.cpp)
// in program order, with the message size and the bytes the rank sends, and
// totals per mesh axis, per phase, per layer path and per layer instance
// (the path up to its first numeric component: blocks.3). Ranks whose lists are
// equal are reported once, with their rank list. An op with a
// `pipeline_stage` attribute is counted on the ranks of that pipeline stage
// only (as its execution plan runs it).
//
// Sizes follow the conventions of nccl-tests (PERFORMANCE.md). S, the
// message, is measured on LOCAL blocks (ir/LocalBlocks.h):
//
//   all_reduce       S = the buffer: the operand's local block
//   reduce_scatter   S = the whole input buffer: the operand's local block
//                        (each rank keeps S / n of the sum)
//   all_gather       S = the whole output buffer: the result's local block
//                        (n times what each rank contributes)
//   (a reduce_scatter's or all_gather's S is n shards: a padded ZeRO shard,
//   ir/LocalBlocks.h, sends its padding, as a padded flat buffer does)
//   all_to_all       S = the operand's local block (each rank keeps 1/n of it)
//   broadcast        S = the operand's local block
//   send             S = the operand's local block; recv: the result's
//   shard_slice      S = the operand's local block (no communication)
//
// and the bytes one rank sends, by the ring algorithms over a group of n
// ranks: all_reduce 2(n-1)/n S; reduce_scatter, all_gather and all_to_all
// (n-1)/n S; broadcast S; send S. recv and shard_slice send nothing (0): a
// message is counted once, at its sender; shard_slice is listed (it is in the
// program) but moves nothing.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_ANALYSIS_COMMSUMMARY_H
#define PLANC_ANALYSIS_COMMSUMMARY_H

#include "analysis/StageSequence.h"
#include "ir/IR.h"
#include "ir/MeshLayout.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace planc {

/// One communication op as one rank runs it.
struct CommOp {
  ir::OpKind kind = ir::OpKind::AllReduce;
  std::string reduce;       // all_reduce / reduce_scatter: the `reduce` attr when not "sum"
  MeshAxis axis = MeshAxis::DP;
  int64_t groupSize = 1;    // n: the ranks of the group (the axis's size)
  std::string phase;        // "forward" (no phase attr), "backward", "optimizer", ...
  std::string path;         // the op's layer path ("" when none)
  Shape block;              // the local block S is measured on
  ir::DType dtype = ir::DType::F32;
  uint64_t messageBytes = 0; // S
  double sentBytes = 0;      // by the ring formulas above
  const ir::Op *op = nullptr;

  bool operator==(const CommOp &o) const {
    return kind == o.kind && reduce == o.reduce && axis == o.axis && groupSize == o.groupSize &&
           phase == o.phase && path == o.path && block == o.block && dtype == o.dtype &&
           messageBytes == o.messageBytes && sentBytes == o.sentBytes && op == o.op;
  }
};

/// The bytes one rank sends for a message of `messageBytes` over `n` ranks.
double sentBytes(ir::OpKind kind, int64_t n, uint64_t messageBytes);

/// One communication op of `op` as `rank` runs it (`op` must be one).
CommOp commOpOf(const ir::Op &op, const MeshLayout &mesh, int64_t rank);

/// Ranks with the same list of communication ops.
struct RankCommList {
  std::vector<int64_t> ranks; // increasing
  std::vector<CommOp> ops;    // in program order
};

struct CommSummary {
  std::string module;
  std::array<int64_t, kNumMeshAxes> mesh{1, 1, 1, 1, 1};
  std::vector<RankCommList> lists; // by first rank
};

/// The communication of every rank of `partitioned` on `mesh` (the module's
/// mesh), ranks with equal lists merged: each op of the module once, in
/// module order (for a placed step, one micro-batch).
CommSummary summarizeComm(const ir::Module &partitioned, const MeshLayout &mesh);

/// The communication of one whole training step of a placed module: each
/// pipeline rank's ops in the order it runs them, every micro-batch, values
/// of parameters alone and once-per-step reductions once
/// (analysis/StageSequence.h), ranks with equal lists merged.
CommSummary summarizeStepComm(const ir::Module &placed, const MeshLayout &mesh,
                              const sequence::StageSequencer &sequencer);

/// Stable text for people and FileCheck: a header with the definitions, then
/// per list of ranks one line per op and the totals by axis, by phase, by
/// layer path, by layer instance and overall. Byte counts are integers where exact, otherwise
/// printed with one decimal.
void printCommSummary(const CommSummary &summary, llvm::raw_ostream &os);

/// "0", "0-3", "0, 2, 4-6".
std::string formatRanks(const std::vector<int64_t> &ranks);

} // namespace planc

#endif
