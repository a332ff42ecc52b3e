//===- compiler/Pipeline.cpp - the compiler's stages, from a checked plan -===//
//
// compile() is the whole compiler read top to bottom: one block per stage of
// compiler/Pipeline.h, each ending where the caller asked to stop (one
// function on purpose, the table of contents in code).
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"
#include "compiler/CodeGen.h"
#include "compiler/PlanDiagnostics.h"
#include "compiler/TrainOptions.h"
#include "analysis/StepSchedule.h"
#include "exec/BuildPlan.h"
#include "exec/PlanVerifier.h"
#include "backend/interp/BatchShape.h"
#include "compiler/HuggingFaceConfig.h"

#include "ir/ConvertFloats.h"
#include "ir/OpDef.h"
#include "ir/PlanError.h"
#include "passes/Passes.h"
#include "support/Error.h"
#include "support/Plural.h"

#include <functional>

using namespace planc;
using namespace planc::ir;

llvm::Error planc::makeTrainingStep(Compilation &c, Module &m, std::optional<DType> floatType,
                                    const PassManagerOptions &pmOptions) {
  if (floatType) convertFloatTypes(m, *floatType);
  PassPipelineOptions options = passOptionsFromConfig(c.getConfig());
  // One float type for the whole model means no narrower compute dtype.
  if (floatType) options.training.precision.compute = *floatType;
  // A plan whose adapters cannot apply is the author's error, not the pass's:
  // it points at the adapters setting.
  const AdapterConfig &adapters = c.getConfig().train.adapters;
  if (adapters.kind == AdapterKind::LoRA)
    if (llvm::Error e = checkLoraTargets(m, adapters.rank))
      return placePlanErrors(c.getSourceMgr(), std::move(e), adapters.source.range.Start);
  PassManagerOptions pmo = pmOptions;
  // The caller rebuilds the module it gave; the float types are made here.
  if (pmo.rebuildInput && floatType)
    pmo.rebuildInput = [rebuild = pmOptions.rebuildInput, floatType] {
      std::unique_ptr<Module> again = rebuild();
      if (again) convertFloatTypes(*again, *floatType);
      return again;
    };
  PassManager pm(pmo, options);
  if (llvm::Error e = addDefaultTrainingPipeline(pm)) return e;
  return pm.run(m);
}

llvm::Error planc::makeInferenceStep(Module &m, const PassManagerOptions &pmOptions) {
  const Output *loss = m.outputFor(OutputRole::Loss);
  const Op *ce = loss && loss->value ? loss->value->def : nullptr;
  if (!ce || ce->kind != OpKind::CrossEntropy || ce->operands.empty())
    return makeError("model '" + m.name + "' has no cross-entropy loss whose logits an inference step could return");
  Value *logits = ce->operands[0];
  // Sampling is evaluation: no dropout.
  for (auto &op : m.ops)
    if (op->kind == OpKind::Dropout) op->attrs["p"] = 0.0;
  m.outputs.clear();
  m.outputs.push_back(Output("logits", logits));
  PassManager pm(pmOptions);
  if (llvm::Error e = pm.add("canonicalize")) return e;
  return pm.run(m);
}

llvm::Expected<runtime::BatchShape> planc::stepBatchShape(Compilation &c, const Module &forward) {
  // The data sources hand out the whole step's batch: the forward model's
  // batch of one micro-batch, times the micro-batches.
  const PlanConfig &config = c.getConfig();
  auto shape = interp::batchShapeOf(forward);
  if (shape && shape->batch == batchRows(config, BatchScope::MicroBatch)) {
    shape->batch = batchRows(config, BatchScope::Step);
    return shape;
  }
  llvm::consumeError(shape.takeError());
  // A model whose inputs are not what the data fills is told so with the
  // step's own shapes, read on the step's rows.
  CompileOptions whole;
  whole.stopAfter = CompileStage::ForwardIR;
  whole.batch = BatchScope::Step;
  auto lowered = compile(c, whole);
  if (!lowered) return lowered.takeError();
  return interp::batchShapeOf(*lowered->module);
}

llvm::Expected<double> planc::stepFlops(Compilation &c, const CompileOptions &options, const Module &training) {
  // The op table's counts over the one-device training step of the whole
  // global batch. A step of one micro-batch per dp rank is the training
  // step the partitioner starts from; with more micro-batches the update's
  // FLOPs do not grow with the rows, so the step's own rows are lowered.
  const PlanConfig &config = c.getConfig();
  const Module *step = &training;
  std::optional<CompileResult> whole;
  if (batchRows(config, BatchScope::Step) != batchRows(config, BatchScope::MicroBatch)) {
    CompileOptions o;
    o.stopAfter = CompileStage::TrainingStep;
    o.batch = BatchScope::Step;
    o.floatType = options.floatType;
    auto r = compile(c, o);
    if (!r) return r.takeError();
    whole = std::move(*r);
    step = whole->module.get();
  }
  double flops = 0;
  for (const auto &op : step->ops)
    if (auto f = opDef(op->kind).flops) flops += f(*op);
  return flops;
}

namespace {

/// The partition pipeline's input made again, for a reproducer: the
/// training (or inference) step of `batch` rows lowered anew, quietly.
std::function<std::unique_ptr<Module>()> stepRebuilder(Compilation &c, int64_t batch, const CompileOptions &options) {
  return [&c, batch, &options]() -> std::unique_ptr<Module> {
    std::unique_ptr<Module> again = lowerToIR(c, batch);
    PassManagerOptions quiet;
    quiet.verifyEach = options.passes.verifyEach;
    quiet.reproducerDir = "";
    if (!again) return nullptr;
    if (options.inference) {
      if (llvm::Error e = makeInferenceStep(*again, quiet)) {
        llvm::consumeError(std::move(e));
        return nullptr;
      }
      return again;
    }
    if (llvm::Error e = makeTrainingStep(c, *again, options.floatType, quiet)) {
      llvm::consumeError(std::move(e));
      return nullptr;
    }
    return again;
  };
}

} // namespace

llvm::Expected<CompileResult> planc::compile(Compilation &c, const CompileOptions &options) {
  const PlanConfig &config = c.getConfig();
  const CompileStage stop = options.stopAfter;
  const bool oneDevice = stop <= CompileStage::TrainingStep;
  CompileResult result;

  // The plan check lets a model without repeated layers name pp > 1 (its
  // settings are checked on their own); partitioning it has nothing to cut.
  // A program's own needs (its batch, its training step) are told first.
  const bool codeGenerated = stop == CompileStage::CodeGenerated;
  const backend::Target &target = backend::targetOf(options.target);
  auto nothingToCut = [&]() -> llvm::Error {
    if (oneDevice || config.parallel.size(MeshAxis::PP) <= 1 || c.getModel().numLayers != 0 ||
        !c.getModel().stages.empty())
      return llvm::Error::success();
    return makePlanError(DiagID::err_pp_without_layers,
                         locationOf(c.getSourceMgr(), config.parallel.axisSource[unsigned(MeshAxis::PP)].range.Start),
                         {std::to_string(config.parallel.size(MeshAxis::PP)), c.getProgram().model->name});
  };
  if (!codeGenerated)
    if (llvm::Error e = nothingToCut()) return e;

  // Forward IR: the partitioner lowers the global program of one
  // micro-batch, every dp rank's rows.
  const int64_t batch = batchRows(config, oneDevice ? options.batch : BatchScope::MicroBatch);
  std::unique_ptr<Module> m = lowerToIR(c, batch);
  if (!m) return makeError("the plan could not be lowered to IR");
  if (stop == CompileStage::ForwardIR) {
    result.module = std::move(m);
    return result;
  }
  // What the program reads off the forward model (before the passes change
  // it): the whole step's batch shape and, for code, the name map.
  if (codeGenerated) {
    if (std::string why = target.unavailable(); !why.empty())
      return makeError(std::string("--target=") + target.name() + ": " + why);
    auto shape = stepBatchShape(c, *m);
    if (!shape) return shape.takeError();
    result.settings.batch = *shape;
    if (target.emitsCode()) {
      auto names = executableNameMap(c, m.get());
      if (!names) return names.takeError();
      result.settings.names = std::move(*names);
    } else if (llvm::Error e = nothingToCut()) {
      return e;
    }
  }

  // Training step. Each pipeline's input can be made again, so a reproducer
  // is printed only when a pass fails (passes/PassManager.h).
  PassManagerOptions training = options.passes;
  if (!oneDevice) training.rebuildInput = [&c, batch] { return lowerToIR(c, batch); };
  if (options.inference) {
    if (oneDevice) return makeError("internal error: the inference step is built only partitioned");
    if (llvm::Error e = makeInferenceStep(*m, training)) return e;
  } else if (llvm::Error e = makeTrainingStep(c, *m, options.floatType, training)) {
    return e;
  }
  if (stop == CompileStage::TrainingStep) {
    result.module = std::move(m);
    return result;
  }
  // The FLOPs of one whole step, for the program's MFU.
  if (codeGenerated && target.emitsCode()) {
    auto flops = stepFlops(c, options, *m);
    if (!flops) return flops.takeError();
    result.settings.flopsPerStep = *flops;
    if (llvm::Error e = nothingToCut()) return e;
  }

  // Partitioned: one micro-batch's step over the mesh, placed.
  PassManagerOptions partitioning = options.passes;
  partitioning.rebuildInput = stepRebuilder(c, batch, options);
  PassPipelineOptions passOptions = passOptionsFromConfig(config);
  passOptions.training.fusion.elementwise = options.fuseElementwise;
  PassManager pm(partitioning, passOptions);
  // A plan that is built and checked gets the deadlock check on the plan
  // (the same replay of the schedule, on what the ranks will run), once.
  const bool planChecked = stop >= CompileStage::ExecutionPlanned && options.checkPlan;
  if (llvm::Error e = addPartitionPipeline(pm, /*deadlockCheck=*/!planChecked)) return e;
  if (llvm::Error e = pm.run(*m)) return e;
  reportRemarks(c, *m);
  if (stop == CompileStage::Partitioned) {
    result.module = std::move(m);
    return result;
  }

  // Scheduled: the pipeline schedule the placed step follows (the pipeline
  // pass recorded it on the module), and its replay.
  result.scheduleOptions = pipeline::scheduleOf(*m, scheduleOfPlan(config.parallel));
  auto schedule = pipeline::buildSchedule(*result.scheduleOptions);
  if (!schedule) return schedule.takeError();
  auto simulation = pipeline::simulate(*schedule);
  if (!simulation) return simulation.takeError();
  result.schedule = std::move(*schedule);
  result.simulation = std::move(*simulation);
  if (stop == CompileStage::Scheduled) {
    result.module = std::move(m);
    return result;
  }

  // Memory planned: on the placed step of one micro-batch, the planner
  // following the schedule itself.
  memory::PlanOptions planOptions;
  planOptions.keepPlacements = stop >= CompileStage::ExecutionPlanned;
  planOptions.keepGradientOutputs = options.reportGradients;
  auto plan = memory::planMemory(*m, planOptions);
  if (!plan) return plan.takeError();
  result.memory = std::move(*plan);
  if (stop >= CompileStage::ExecutionPlanned) {
    // Execution planned: the placements built into every rank's program.
    exec::BuildOptions buildOptions;
    buildOptions.foldProducers = passOptions.training.fusion.policy != FusionPolicy::None;
    auto built = exec::buildExecutionPlan(*m, *result.memory, buildOptions);
    if (!built) return built.takeError();
    if (options.checkPlan) {
      std::vector<std::string> problems = exec::checkPlan(*built);
      if (!problems.empty()) {
        std::string text = "the execution plan is not sound (" + counted(int64_t(problems.size()), "problem") + "):";
        for (size_t i = 0; i < problems.size() && i < 20; ++i) text += "\n  " + problems[i];
        if (problems.size() > 20) text += "\n  ...";
        return makeError(text);
      }
    }
    // Only the totals stay in result.memory: the plan holds the placements.
    result.plan = std::move(*built);
  }
  result.module = std::move(m);
  if (!codeGenerated) return result;

  // Code generated: the program's settings, the inference step of a
  // program of one rank (its --sample), the target's code.
  if (llvm::Error e = fillProgramSettings(c, options, result)) return e;
  if (target.emitsCode() && result.plan->programs.size() == 1 && result.plan->programs.front().ranks.size() == 1) {
    CompileOptions infer = options;
    infer.stopAfter = CompileStage::ExecutionPlanned;
    infer.inference = true;
    auto step = compile(c, infer);
    if (!step) return step.takeError();
    result.inference = std::move(step->plan);
  }
  if (llvm::Error e = emitProgram(options, result)) return e;
  return result;
}
