//===- compiler/Run.cpp - `planc run --target=interp` --------------------===//

#include "compiler/Run.h"
#include "compiler/Pipeline.h"
#include "compiler/TrainOptions.h"

#include "backend/interp/BatchShape.h"
#include "backend/interp/PlanTrainer.h"
#include "runtime/Data.h"
#include "support/Error.h"
#include "support/Plural.h"

using namespace planc;

llvm::Expected<runtime::BatchShape> planc::stepBatchShape(Compilation &c) {
  // The batch shape is the forward model's business, read on the whole
  // step's rows: the data sources hand out the global batch.
  CompileOptions forward;
  forward.stopAfter = CompileStage::ForwardIR;
  forward.batch = BatchScope::Step;
  auto lowered = compile(c, forward);
  if (!lowered) return lowered.takeError();
  return interp::batchShapeOf(*lowered->module);
}

llvm::Error planc::runOnInterpreter(Compilation &c, const RunOptions &options, llvm::raw_ostream &log) {
  // The interpreter keeps its state in memory; compiled executables write
  // the checkpoints a plan asks for.
  const CheckpointConfig &ckpt = c.getConfig().train.checkpoint;
  if (ckpt.every > 0) {
    std::string where;
    if (ckpt.source.range.Start.isValid()) {
      auto lc = c.getSourceMgr().getLineAndColumn(ckpt.source.range.Start);
      where = c.getSourceMgr()
                  .getMemoryBuffer(c.getSourceMgr().FindBufferContainingLoc(ckpt.source.range.Start))
                  ->getBufferIdentifier()
                  .str() +
              ":" + std::to_string(lc.first) + ":" + std::to_string(lc.second) + ": ";
    }
    return makeError(where + "the interpreter does not write checkpoints, and this plan asks for one every " +
                     counted(ckpt.every, "step") + "; run it with --target=cpu (or build it with planc build), "
                     "or remove the 'checkpoint' setting");
  }
  auto shape = stepBatchShape(c);
  if (!shape) return shape.takeError();

  // The plan as an executable runs it: every rank's steps and buffers.
  CompileOptions planned;
  planned.stopAfter = CompileStage::ExecutionPlanned;
  planned.floatType = options.floatType;
  planned.passes.verifyEach = options.verifyEach;
  planned.reportGradients = !options.dumpDir.empty();
  auto built = compile(c, planned);
  if (!built) return built.takeError();

  const TrainConfig &train = c.getConfig().train;
  uint64_t seed = options.seed ? *options.seed : uint64_t(train.seed);
  auto data = runtime::openDataSource(dataSpecOf(train.data), *shape, seed);
  if (!data.ok()) return makeError(data.error());

  interp::TrainLoopOptions loop;
  loop.steps = options.steps > 0 ? options.steps : train.steps;
  loop.seed = seed;
  loop.dumpDir = options.dumpDir;
  loop.log = &log;
  auto result = interp::trainPlan(*built->module, *built->plan, **data, loop);
  if (!result) return result.takeError();
  return llvm::Error::success();
}
