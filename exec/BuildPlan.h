//===- exec/BuildPlan.h - the execution plan of a placed step -----*- C++ -*-===//
//
// Builds the execution plan (exec/ExecutionPlan.h) from the placed step of one
// micro-batch and the memory planner's placements (analysis/MemoryPlan.h with
// PlanOptions::keepPlacements), so the plan's buffers are the ledger's:
//
//  - a buffer per placement, named after its value (".mb<j>" for slot j),
//    with its global type, local block, offset, size, category, alias and
//    live range; parameters and optimizer state are Param buffers named by
//    path, the step's inputs Input buffers;
//  - a step per placed step, in the stage's order (analysis/StageSequence.h):
//    the op's attributes made local (ir/LocalAttrs.h) and what its
//    micro-batch changes: the backward seed of the loss is 1/m of the plan's
//    (the gradients summed over the micro-batches are those of the mean
//    loss), dropout draws micro-batch j's rows of the whole batch's mask
//    (`batch_split`), a message's tag is StageSequencer::tagOf;
//  - with m > 1, a `scale` by 1/m right after the loss's last accumulation
//    (the step's loss is the mean of the micro-batches');
//  - events and waits: each communication step records an event; a step
//    waits for it before it reads the step's outputs, or writes bytes the
//    step reads or writes while it may be in flight;
//  - the outputs the stage holds, bound to their buffers;
//  - what a backend needs of the model besides the step: each parameter's
//    initialisation and whether it is an optimizer state (Buffer::init),
//    and the fusion policy's folding (ExecutionPlan::foldProducers).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_EXEC_BUILDPLAN_H
#define PLANC_EXEC_BUILDPLAN_H

#include "analysis/MemoryPlan.h"
#include "exec/ExecutionPlan.h"
#include "ir/IR.h"

#include "llvm/Support/Error.h"

namespace planc::exec {

/// What the plan records besides the placed step and its placements.
struct BuildOptions {
  /// ExecutionPlan::foldProducers: the plan's fusion policy is not `none`.
  bool foldProducers = false;
};

/// The plan of `m` from `placed`, planned on `m` with keepPlacements. The
/// placements are moved into the plan: each stage of `placed` keeps its
/// totals and is left with no placements and no program.
llvm::Expected<ExecutionPlan> buildExecutionPlan(const ir::Module &m, memory::MemoryPlan &placed,
                                                 const BuildOptions &options = {});

/// Plans `m`'s memory with the placements kept and builds its plan.
llvm::Expected<ExecutionPlan> buildExecutionPlan(const ir::Module &m, const memory::PlanOptions &options = {});

} // namespace planc::exec

#endif
