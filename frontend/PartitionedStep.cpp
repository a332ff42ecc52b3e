//===- frontend/PartitionedStep.cpp - a plan's partitioned training step --===//

#include "frontend/PartitionedStep.h"
#include "frontend/Run.h"
#include "frontend/TrainOptions.h"

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "passes/Passes.h"

using namespace planc;
using namespace planc::ir;

llvm::Expected<PartitionedStep> planc::buildPartitionedStep(Compilation &c, const PartitionedStepOptions &options) {
  auto fail = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
  };
  // The global program of one micro-batch: every dp rank's micro-batch.
  const PlanConfig &config = c.getConfig();
  std::unique_ptr<Module> step = lowerToIR(c, config.train.microBatch * config.parallel.size(MeshAxis::DP));
  if (!step) return fail("the plan could not be lowered to IR");
  if (llvm::Error e = makeTrainingStep(c, *step, options.floatType, options.passes)) return e;

  PartitionedStep result;
  if (options.keepUnpartitioned) {
    auto copy = parseIR(toText(*step), "<training step>");
    if (!copy) return copy.takeError();
    result.unpartitioned = std::move(*copy);
  }
  PassManager pm(options.passes, passOptionsFromConfig(config));
  if (llvm::Error e = addPartitionPipeline(pm)) return e;
  if (options.unroll)
    if (llvm::Error e = addUnrollPipeline(pm)) return e;
  if (llvm::Error e = pm.run(*step)) return e;
  result.partitioned = std::move(step);
  return result;
}
