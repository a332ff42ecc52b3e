//===- compiler/Run.cpp - `planc run --target=interp` --------------------===//

#include "compiler/Run.h"
#include "compiler/TrainOptions.h"

#include "ir/ConvertFloats.h"
#include "passes/PassManager.h"
#include "passes/Passes.h"
#include "runtime/Data.h"
#include "runtime/InterpTrainer.h"

using namespace planc;

namespace {

runtime::DataSpec dataSpecOf(const DataConfig &d) {
  runtime::DataSpec spec;
  spec.kind = d.kind == DataKind::Text     ? runtime::DataSpec::Kind::Text
              : d.kind == DataKind::Tokens ? runtime::DataSpec::Kind::Tokens
                                           : runtime::DataSpec::Kind::Synthetic;
  spec.path = d.path;
  spec.tokenDType = d.tokenDtype == "u32" ? ir::DType::U32 : ir::DType::U16;
  return spec;
}

} // namespace

llvm::Error planc::makeTrainingStep(Compilation &c, ir::Module &m, std::optional<ir::DType> floatType,
                                    const PassManagerOptions &pmOptions) {
  if (floatType) ir::convertFloatTypes(m, *floatType);
  PassPipelineOptions options = passOptionsFromConfig(c.getConfig());
  // One float type for the whole model means no narrower compute dtype.
  if (floatType) options.training.precision.compute = *floatType;
  // A plan whose adapters cannot apply is the author's error, not the pass's.
  if (c.getConfig().train.adapters.kind == AdapterKind::LoRA)
    if (llvm::Error e = checkLoraTargets(m, c.getConfig().train.adapters.rank)) return e;
  PassManagerOptions pmo = pmOptions;
  // The caller rebuilds the module it gave; the float types are made here.
  if (pmo.rebuildInput && floatType)
    pmo.rebuildInput = [rebuild = pmOptions.rebuildInput, floatType] {
      std::unique_ptr<ir::Module> again = rebuild();
      if (again) ir::convertFloatTypes(*again, *floatType);
      return again;
    };
  PassManager pm(pmo, options);
  if (llvm::Error e = addDefaultTrainingPipeline(pm)) return e;
  return pm.run(m);
}

llvm::Error planc::runOnInterpreter(Compilation &c, const RunOptions &options, llvm::raw_ostream &log) {
  std::unique_ptr<ir::Module> m = lowerToIR(c);
  if (!m)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "the plan could not be lowered to IR");
  // The batch shape is the forward model's business: check it before the
  // training passes add their own input (%step).
  auto shape = runtime::batchShapeOf(*m);
  if (!shape) return shape.takeError();
  PassManagerOptions passes;
  passes.verifyEach = options.verifyEach;
  if (llvm::Error e = makeTrainingStep(c, *m, options.floatType, passes)) return e;

  const TrainConfig &train = c.getConfig().train;

  uint64_t seed = options.seed ? *options.seed : uint64_t(train.seed);
  auto data = runtime::openDataSource(dataSpecOf(train.data), *shape, seed);
  if (!data) return data.takeError();

  runtime::TrainLoopOptions loop;
  loop.steps = options.steps > 0 ? options.steps : train.steps;
  loop.seed = seed;
  loop.dumpDir = options.dumpDir;
  loop.log = &log;
  auto result = runtime::trainOnInterpreter(*m, **data, loop);
  if (!result) return result.takeError();
  return llvm::Error::success();
}
