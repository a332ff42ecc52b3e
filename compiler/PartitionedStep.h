//===- compiler/PartitionedStep.h - a plan's partitioned training step -*- C++ -*-===//
//
// The SPMD program of one training step, built the way `planc verify` builds
// it: the checked model lowered for the global batch of all dp ranks
// (micro_batch x dp rows), turned into a training step (autodiff, optimizer,
// clean-up), then partitioned as the parallel block says (recompute, ZeRO
// layouts, sharding propagation with the collectives between layouts,
// pipeline stages with their send/recv) and, unless asked not to, unrolled
// over the micro-batches in schedule order. The
// result keeps global shapes; its types carry the shardings, and
// ir/LocalBlocks.h, ir/LocalAttrs.h and ir/RankProgram.h give per-rank views.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_PARTITIONEDSTEP_H
#define PLANC_COMPILER_PARTITIONEDSTEP_H

#include "frontend/Frontend.h"
#include "ir/IR.h"
#include "passes/PassManager.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <optional>

namespace planc {

struct PartitionedStepOptions {
  /// Every float of the model made this dtype first; none: as the plan says.
  std::optional<ir::DType> floatType;
  /// --time-passes, --print-after-all for the partitioning passes.
  PassManagerOptions passes;
  /// Also hand back the global step before partitioning (a copy).
  bool keepUnpartitioned = false;
  /// Repeat the step per micro-batch in schedule order (what runs); false:
  /// the placed step of one micro-batch (what the partitioner decides).
  bool unroll = true;
};

struct PartitionedStep {
  std::unique_ptr<ir::Module> unpartitioned; // only with keepUnpartitioned
  std::unique_ptr<ir::Module> partitioned;
};

/// Builds and partitions the training step of the checked plan in `c`.
/// Errors are messages for the user (a plan that cannot be lowered or
/// partitioned).
llvm::Expected<PartitionedStep> buildPartitionedStep(Compilation &c, const PartitionedStepOptions &options = {});

} // namespace planc

#endif
