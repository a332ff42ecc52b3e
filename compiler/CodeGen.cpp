//===- compiler/CodeGen.cpp - compile()'s last stage ----------------------===//

#include "compiler/CodeGen.h"
#include "compiler/StepTime.h"
#include "compiler/TrainOptions.h"

using namespace planc;

llvm::Error planc::fillProgramSettings(Compilation &c, const CompileOptions &options, CompileResult &result) {
  const PlanConfig &config = c.getConfig();
  const TrainConfig &train = config.train;
  backend::ProgramSettings &s = result.settings;
  s.source = !options.sourceName.empty() ? options.sourceName
             : c.getMainBuffer() ? c.getSourceMgr().getMemoryBuffer(c.getMainBuffer())->getBufferIdentifier().str()
                                 : "";
  s.steps = train.steps;
  s.seed = uint64_t(train.seed);
  s.data = dataSpecOf(train.data);
  s.checkpointEvery = train.checkpoint.every;
  s.checkpointDir = train.checkpoint.dir;
  s.checkpointKeep = train.checkpoint.keep;
  if (!backend::targetOf(options.target).emitsCode()) return llvm::Error::success();
  std::string compute = options.floatType ? ir::spelling(*options.floatType) : train.precision.compute;
  auto peak = config.cluster.device.peakFlops.find(compute);
  s.peakFlops = peak != config.cluster.device.peakFlops.end() ? peak->second : 0.0;
  if (result.memory)
    for (const auto &stage : result.memory->stages) s.ledgerBytes.push_back(stage.arena);
  // The step `planc check` predicts, where the plan's device is the CPU the
  // executable runs on: a run far slower says why (runtime/SlowStep.h).
  if (config.cluster.device.name == "cpu") {
    auto time = estimateStepTime(c, result);
    if (!time) return time.takeError();
    s.predictedStepSeconds = time->stepTime;
    s.predictionBasis = hardwareOf(config.cluster).calibration.source;
  }
  return llvm::Error::success();
}

llvm::Error planc::emitProgram(const CompileOptions &options, CompileResult &result) {
  const backend::Target &target = backend::targetOf(options.target);
  if (!target.emitsCode()) return llvm::Error::success();
  std::string text;
  llvm::raw_string_ostream os(text);
  if (llvm::Error e = target.emit(result.program(), os)) return e;
  os.flush();
  result.code = std::move(text);
  return llvm::Error::success();
}
