//===- compiler/Run.cpp - `planc run --target=interp` --------------------===//

#include "compiler/Run.h"
#include "compiler/Pipeline.h"
#include "compiler/PlanDiagnostics.h"
#include "compiler/TrainOptions.h"

#include "backend/interp/BatchShape.h"
#include "backend/interp/InterpTrainer.h"
#include "ir/ConvertFloats.h"
#include "passes/PassManager.h"
#include "passes/Passes.h"
#include "runtime/Data.h"
#include "support/Error.h"

using namespace planc;

namespace {

runtime::DataSpec dataSpecOf(const DataConfig &d) {
  runtime::DataSpec spec;
  spec.kind = d.kind == DataKind::Text     ? runtime::DataSpec::Kind::Text
              : d.kind == DataKind::Tokens ? runtime::DataSpec::Kind::Tokens
                                           : runtime::DataSpec::Kind::Synthetic;
  spec.path = d.path;
  spec.tokenDType = d.tokenDtype == "u32" ? runtime::ElementType::U32 : runtime::ElementType::U16;
  return spec;
}

} // namespace

llvm::Error planc::runOnInterpreter(Compilation &c, const RunOptions &options, llvm::raw_ostream &log) {
  CompileOptions forward;
  forward.stopAfter = CompileStage::ForwardIR;
  auto lowered = compile(c, forward);
  if (!lowered) return lowered.takeError();
  std::unique_ptr<ir::Module> m = std::move(lowered->module);
  // The batch shape is the forward model's business: check it before the
  // training passes add their own input (%step).
  auto shape = interp::batchShapeOf(*m);
  if (!shape) return shape.takeError();
  PassManagerOptions passes;
  passes.verifyEach = options.verifyEach;
  if (llvm::Error e = makeTrainingStep(c, *m, options.floatType, passes)) return e;

  const TrainConfig &train = c.getConfig().train;

  uint64_t seed = options.seed ? *options.seed : uint64_t(train.seed);
  auto data = runtime::openDataSource(dataSpecOf(train.data), *shape, seed);
  if (!data.ok()) return makeError(data.error());

  interp::TrainLoopOptions loop;
  loop.steps = options.steps > 0 ? options.steps : train.steps;
  loop.seed = seed;
  loop.dumpDir = options.dumpDir;
  loop.log = &log;
  auto result = interp::trainOnInterpreter(*m, **data, loop);
  if (!result) return result.takeError();
  return llvm::Error::success();
}
