//===- compiler/PartitionedStep.cpp - a plan's partitioned training step --===//

#include "compiler/PartitionedStep.h"
#include "compiler/Run.h"
#include "compiler/TrainOptions.h"

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "passes/Passes.h"

using namespace planc;
using namespace planc::ir;

/// The passes' remarks as diagnostics at the .plan lines they name.
static void reportRemarks(Compilation &c, const Module &m) {
  llvm::SourceMgr &sm = c.getSourceMgr();
  for (const Remark &r : m.remarks) {
    if (r.kind != "constraint_reshards" || r.args.size() != 4) continue;
    llvm::SMLoc at;
    for (unsigned id = 1; id <= sm.getNumBuffers() && r.loc.isKnown(); ++id)
      if (sm.getMemoryBuffer(id)->getBufferIdentifier() == r.loc.file) {
        at = sm.FindLocForLineAndColumn(id, r.loc.line, r.loc.column);
        break;
      }
    c.getDiagnostics().report(DiagID::warn_constraint_reshards, at) << r.args[0] << r.args[1] << r.args[2] << r.args[3];
  }
}

llvm::Expected<PartitionedStep> planc::buildPartitionedStep(Compilation &c, const PartitionedStepOptions &options) {
  auto fail = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
  };
  // The global program of one micro-batch: every dp rank's micro-batch.
  const PlanConfig &config = c.getConfig();
  // The plan check lets a model without repeated layers name pp > 1 (its
  // settings are checked on their own); partitioning it has nothing to cut.
  if (config.parallel.size(MeshAxis::PP) > 1 && c.getModel().numLayers == 0 && c.getModel().stages.empty())
    return fail("the mesh has pp = " + std::to_string(config.parallel.size(MeshAxis::PP)) + ", but model '" +
                c.getProgram().model->name +
                "' has no repeated layers to cut into pipeline stages (write the layers in a `repeat`)");
  const int64_t batch = config.train.microBatch * config.parallel.size(MeshAxis::DP);
  std::unique_ptr<Module> step = lowerToIR(c, batch);
  if (!step) return fail("the plan could not be lowered to IR");
  // Each pipeline's input can be made again, so a reproducer is printed
  // only when a pass fails (passes/PassManager.h).
  PassManagerOptions training = options.passes;
  training.rebuildInput = [&c, batch] { return lowerToIR(c, batch); };
  if (llvm::Error e = makeTrainingStep(c, *step, options.floatType, training)) return e;
  PassManagerOptions partitioning = options.passes;
  partitioning.rebuildInput = [&c, batch, &options]() -> std::unique_ptr<Module> {
    std::unique_ptr<Module> again = lowerToIR(c, batch);
    PassManagerOptions quiet;
    quiet.verifyEach = options.passes.verifyEach;
    quiet.reproducerDir = "";
    if (!again) return nullptr;
    if (llvm::Error e = makeTrainingStep(c, *again, options.floatType, quiet)) {
      llvm::consumeError(std::move(e));
      return nullptr;
    }
    return again;
  };

  PartitionedStep result;
  if (options.keepUnpartitioned) {
    auto copy = parseIR(toText(*step), "<training step>");
    if (!copy) return copy.takeError();
    result.unpartitioned = std::move(*copy);
  }
  PassManager pm(partitioning, passOptionsFromConfig(config));
  if (llvm::Error e = addPartitionPipeline(pm)) return e;
  if (options.unroll)
    if (llvm::Error e = addUnrollPipeline(pm)) return e;
  if (llvm::Error e = pm.run(*step)) return e;
  reportRemarks(c, *step);
  result.partitioned = std::move(step);
  return result;
}
