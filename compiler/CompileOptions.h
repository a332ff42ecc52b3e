//===- compiler/CompileOptions.h - what compile() is asked and returns -*- C++ -*-===//
//
// The stages of compiler/Pipeline.h by name, the options of compile() and
// its result: what the analyses that read a compiled plan
// (compiler/StepTime.h, compiler/CodeGen.h) need without compile() itself.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_COMPILEOPTIONS_H
#define PLANC_COMPILER_COMPILEOPTIONS_H

#include "analysis/MemoryPlan.h"
#include "analysis/PipelineSchedule.h"
#include "backend/Target.h"
#include "exec/ExecutionPlan.h"
#include "frontend/Config.h"
#include "ir/IR.h"
#include "passes/PassManager.h"

#include <memory>
#include <optional>
#include <string>

namespace planc {

/// The stages of compile(), in order.
enum class CompileStage { ForwardIR, TrainingStep, Partitioned, Scheduled, MemoryPlanned, ExecutionPlanned, CodeGenerated };
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
  /// CodeGenerated: the target whose program is made.
  backend::TargetKind target = backend::TargetKind::Interp;
  /// CodeGenerated: the plan's name in the program (its banner, --help);
  /// empty: the main file's name.
  std::string sourceName;
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
  /// From ExecutionPlanned on: the plan (its memory plan in `memory`).
  std::optional<exec::ExecutionPlan> plan;
  /// CodeGenerated: the inference step's plan, for a program of one rank
  /// whose target emits code (its --sample); the settings the program
  /// carries (among them the whole step's batch shape and its FLOPs); the
  /// code, for a target that emits it.
  std::optional<exec::ExecutionPlan> inference;
  backend::ProgramSettings settings;
  std::string code;
  /// The program as the target reads it: pointers into this result.
  backend::TargetProgram program() const;
};

} // namespace planc

#endif
