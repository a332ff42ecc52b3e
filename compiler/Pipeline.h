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
//   CodeGenerated  the target's program (CompileOptions::target,
//                  backend/Target.h): the steps it cannot run refused, the
//                  settings its program carries (the batch shape, the
//                  step's FLOPs, the name map, the predicted step) read off
//                  the stages above, its code emitted (compiler/CodeGen.h)
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

#include "compiler/CompileOptions.h"
#include "frontend/Frontend.h"
#include "ir/IR.h"
#include "passes/PassManager.h"
#include "runtime/Data.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <optional>

namespace planc {

/// Runs the stages of the checked plan in `c` up to `options.stopAfter`.
/// Errors are messages for the plan's author (a plan that cannot be lowered
/// or partitioned) or, from a failing pass, internal errors with a reproducer.
llvm::Expected<CompileResult> compile(Compilation &c, const CompileOptions &options = {});

/// The batch a training step of the checked plan reads (the data sources'
/// input): the whole global batch's shape, its vocabulary and token type,
/// read off `forward`, the model lowered for one micro-batch of every dp
/// rank. Errors: a model without the token inputs the data fills.
llvm::Expected<runtime::BatchShape> stepBatchShape(Compilation &c, const ir::Module &forward);

/// The FLOPs of one training step of the whole global batch (the op
/// table's counts), given `training`, the training step of one micro-batch
/// of every dp rank that compile() partitions.
llvm::Expected<double> stepFlops(Compilation &c, const CompileOptions &options, const ir::Module &training);

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
