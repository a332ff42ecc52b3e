//===- compiler/Run.cpp - `planc run` -------------------------------------===//

#include "compiler/Run.h"
#include "compiler/Pipeline.h"

#include "support/Error.h"
#include "support/Plural.h"

using namespace planc;

namespace {

/// The main file's name, as messages say it.
std::string mainFileName(Compilation &c) {
  return c.getMainBuffer() ? c.getSourceMgr().getMemoryBuffer(c.getMainBuffer())->getBufferIdentifier().str() : "";
}

/// The interpreter keeps its state in memory; compiled executables write
/// the checkpoints a plan asks for.
llvm::Error refuseCheckpoints(Compilation &c) {
  const CheckpointConfig &ckpt = c.getConfig().train.checkpoint;
  if (ckpt.every <= 0) return llvm::Error::success();
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

} // namespace

llvm::Expected<int> planc::runPlan(Compilation &c, const RunOptions &options, llvm::raw_ostream &log,
                                   llvm::raw_ostream &progress) {
  const backend::Target &target = backend::targetOf(options.target);
  if (std::string why = target.unavailable(); !why.empty())
    return makeError(std::string("--target=") + target.name() + ": " + why);
  CompileOptions planned;
  planned.stopAfter = CompileStage::CodeGenerated;
  planned.target = options.target;
  planned.floatType = options.floatType;
  if (target.emitsCode()) {
    // Said before building: the executable would refuse the other world size.
    const int64_t ranks = c.getConfig().parallel.meshSize();
    if (options.ranks > 0 && options.ranks != ranks)
      return makeError("'" + mainFileName(c) + "' runs on a mesh of " + counted(ranks, "rank") + ", but --ranks says " +
                       std::to_string(options.ranks) + " (leave --ranks out, or change the plan's mesh)");
    if (llvm::Error e = target.checkCanRun(ranks)) return e;
    progress << "planc build: generating C++ for " << mainFileName(c) << "\n";
    progress.flush();
  } else {
    if (llvm::Error e = refuseCheckpoints(c)) return e;
    // The plan as an executable runs it: every rank's steps and buffers.
    planned.passes.verifyEach = options.verifyEach;
    planned.reportGradients = !options.dumpDir.empty();
  }
  auto built = compile(c, planned);
  if (!built) return built.takeError();

  backend::TargetRunOptions run;
  run.steps = options.steps;
  run.seed = options.seed;
  run.dumpDir = options.dumpDir;
  run.toolchain = options.toolchain;
  run.log = target.emitsCode() ? &progress : &log;
  return target.run(built->program(), built->code, run);
}
