//===- compiler/Pipeline.h - the compiler's stages, from a checked plan -*- C++ -*-===//
//
// The table of contents of planc: what happens to a checked plan, in order,
// each stage named so that a caller can stop after it.
//
//   ForwardIR      the model lowered to IR (frontend/Lowering.cpp)
//   TrainingStep   forward, backward and update as one module: lora,
//                  mixed-precision, autodiff, optimizer, loss-scaling,
//                  canonicalize (passes/Passes.cpp addDefaultTrainingPipeline)
//   Partitioned    the step over the mesh, one micro-batch, placed: recompute,
//                  ZeRO layouts, sharding propagation with its collectives,
//                  pipeline stages with their send/recv, the deadlock check
//                  (addPartitionPipeline)
//   Scheduled      the pipeline schedule the placed step follows, replayed
//   MemoryPlanned  every stage's buffers placed in its arena, following the
//                  schedule (analysis/MemoryPlan.h)
//   ExecutionPlanned  the placements kept and built into the execution plan:
//                  what every rank runs, step by step, in which bytes
//                  (exec/BuildPlan.h); its verifier run where asked
//
// The batch convention. A module has global shapes: the model's `batch`
// dim is the rows of every dp rank together. A partitioned module is one
// micro-batch of every dp rank (micro_batch x dp rows; sharding propagation
// splits them over dp again); the execution plan runs it once per
// micro-batch, each micro-batch's rows in a buffer of their own.
// A one-device module (stopping at ForwardIR or TrainingStep) has the rows
// its BatchScope says, computed by batchRows() alone.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_PIPELINE_H
#define PLANC_COMPILER_PIPELINE_H

#include "analysis/MemoryPlan.h"
#include "analysis/PipelineSchedule.h"
#include "exec/ExecutionPlan.h"
#include "frontend/Frontend.h"
#include "ir/IR.h"
#include "passes/PassManager.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <optional>

namespace planc {

/// The stages of compile(), in order.
enum class CompileStage { ForwardIR, TrainingStep, Partitioned, Scheduled, MemoryPlanned, ExecutionPlanned };
const char *spelling(CompileStage stage);

/// What the model's `batch` dim counts in a module of one device.
enum class BatchScope {
  Device,     // one micro-batch of one device: train.micro_batch rows
  MicroBatch, // one micro-batch of every dp rank: micro_batch x dp rows
  Step,       // the whole step of every dp rank: micro_batch x dp x micro-batches
};

/// The rows of the `batch` dim under `scope` for the plan's settings.
int64_t batchRows(const PlanConfig &config, BatchScope scope);

struct CompileOptions {
  /// The last stage to run.
  CompileStage stopAfter = CompileStage::ExecutionPlanned;
  /// The batch of a one-device module (ForwardIR, TrainingStep); the later
  /// stages always lower one micro-batch of every dp rank.
  BatchScope batch = BatchScope::Device;
  /// Every float of the model made this dtype first; none: as the plan says.
  std::optional<ir::DType> floatType;
  /// --time-passes, --print-after-all and the like, for every pass run.
  PassManagerOptions passes;
  /// ExecutionPlanned: keep the parameters' gradients to the end of the step
  /// (memory::PlanOptions::keepGradientOutputs), for a run that reports them.
  bool reportGradients = false;
  /// ExecutionPlanned: run the plan's verifier (exec/PlanVerifier.h); a
  /// violation is an internal error naming every one.
  bool checkPlan = true;
  /// The inference step instead of the training step: the forward program
  /// up to the logits the loss reads (makeInferenceStep), no backward, no
  /// update, partitioned and planned like the training step. Needs the
  /// partitioned stages (not TrainingStep).
  bool inference = false;
  /// False: the fuse-elementwise pass leaves the step unfused whatever the
  /// plan's fusion policy (the fusion report analyses that step).
  bool fuseElementwise = true;
};

struct CompileResult {
  /// The module after the last stage run.
  std::unique_ptr<ir::Module> module;
  /// From Scheduled on: the schedule the placed step follows and its replay.
  std::optional<pipeline::ScheduleOptions> scheduleOptions;
  std::optional<pipeline::PipelineSchedule> schedule;
  std::optional<pipeline::Simulation> simulation;
  /// Stopping at MemoryPlanned: the placed arenas, planned on the placed step
  /// of one micro-batch following the schedule.
  std::optional<memory::MemoryPlan> memory;
  /// Stopping at ExecutionPlanned: the plan (its memory plan in `memory`).
  std::optional<exec::ExecutionPlan> plan;
};

/// Runs the stages of the checked plan in `c` up to `options.stopAfter`.
/// Errors are messages for the plan's author (a plan that cannot be lowered
/// or partitioned) or, from a failing pass, internal errors with a reproducer.
llvm::Expected<CompileResult> compile(Compilation &c, const CompileOptions &options = {});

/// The inference step of a lowered forward module: the logits of the
/// model's cross-entropy loss become its one output, named "logits", and
/// what only the loss needed is removed (targets stay an input nothing
/// reads). An error for a model whose loss is not a cross-entropy.
llvm::Error makeInferenceStep(ir::Module &m, const PassManagerOptions &pmOptions);

/// The TrainingStep stage on a module the caller lowered: the default
/// training pipeline with the plan's settings, optionally with every float
/// of the model made `floatType` first.
llvm::Error makeTrainingStep(Compilation &c, ir::Module &m, std::optional<ir::DType> floatType,
                             const PassManagerOptions &pmOptions);

} // namespace planc

#endif
