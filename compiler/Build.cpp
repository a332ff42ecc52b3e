//===- compiler/Build.cpp - `planc build` ----------------------------------===//

#include "compiler/Build.h"
#include "compiler/HuggingFaceConfig.h"
#include "compiler/Pipeline.h"
#include "compiler/Run.h"
#include "compiler/StepTime.h"
#include "compiler/TrainOptions.h"

#include "backend/cpu/CppEmitter.h"
#include "ir/OpDef.h"
#include "support/Error.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cstdlib>

using namespace planc;

#ifndef PLANC_RUNTIME_INCLUDE_DIR
#define PLANC_RUNTIME_INCLUDE_DIR ""
#endif
#ifndef PLANC_RUNTIME_LIBRARY
#define PLANC_RUNTIME_LIBRARY ""
#endif
#ifndef PLANC_RUNTIME_EXTRA_FLAGS
#define PLANC_RUNTIME_EXTRA_FLAGS ""
#endif
#ifndef PLANC_RUNTIME_CXX
#define PLANC_RUNTIME_CXX "c++"
#endif
#ifndef PLANC_BLAS_LIBRARIES
#define PLANC_BLAS_LIBRARIES "-lopenblas"
#endif
#ifndef PLANC_MPI_LIBRARIES
#define PLANC_MPI_LIBRARIES ""
#endif

namespace {

/// The FLOPs of one training step of the whole global batch: the sum of the
/// op table's counts over the one-device training step.
llvm::Expected<double> stepFlops(Compilation &c, std::optional<ir::DType> floatType) {
  CompileOptions o;
  o.stopAfter = CompileStage::TrainingStep;
  o.batch = BatchScope::Step;
  o.floatType = floatType;
  auto r = compile(c, o);
  if (!r) return r.takeError();
  double flops = 0;
  for (const auto &op : r->module->ops)
    if (auto f = ir::opDef(op->kind).flops) flops += f(*op);
  return flops;
}

} // namespace

llvm::Expected<std::string> planc::generateCpuSource(Compilation &c, std::optional<ir::DType> floatType,
                                                     const std::string &sourceName) {
  auto shape = stepBatchShape(c);
  if (!shape) return shape.takeError();

  auto flops = stepFlops(c, floatType);
  if (!flops) return flops.takeError();

  CompileOptions planned;
  planned.stopAfter = CompileStage::ExecutionPlanned;
  planned.floatType = floatType;
  auto built = compile(c, planned);
  if (!built) return built.takeError();

  const PlanConfig &config = c.getConfig();
  const TrainConfig &train = config.train;
  cpu::CpuProgramSettings s;
  s.source = sourceName;
  s.steps = train.steps;
  s.seed = uint64_t(train.seed);
  s.data = dataSpecOf(train.data);
  s.batch = *shape;
  s.checkpointEvery = train.checkpoint.every;
  s.checkpointDir = train.checkpoint.dir;
  s.checkpointKeep = train.checkpoint.keep;
  s.flopsPerStep = *flops;
  auto names = executableNameMap(c);
  if (!names) return names.takeError();
  s.names = std::move(*names);
  std::string compute = floatType ? ir::spelling(*floatType) : train.precision.compute;
  auto peak = config.cluster.device.peakFlops.find(compute);
  s.peakFlops = peak != config.cluster.device.peakFlops.end() ? peak->second : 0.0;
  if (built->memory)
    for (const auto &stage : built->memory->stages) s.ledgerBytes.push_back(stage.arena);
  // The step `planc check` predicts, where the plan's device is the CPU the
  // executable runs on: a run far slower says why (runtime/SlowStep.h).
  if (config.cluster.device.name == "cpu") {
    auto time = estimateStepTime(c, *built);
    if (!time) return time.takeError();
    s.predictedStepSeconds = time->stepTime;
    s.predictionBasis = hardwareOf(config.cluster).calibration.source;
  }

  // The inference step of --sample, for a plan of one rank (a mesh runs
  // with MPI, later).
  std::optional<CompileResult> inference;
  if (built->plan->programs.size() == 1 && built->plan->programs.front().ranks.size() == 1) {
    CompileOptions infer = planned;
    infer.inference = true;
    auto step = compile(c, infer);
    if (!step) return step.takeError();
    inference = std::move(*step);
  }

  std::string text;
  llvm::raw_string_ostream os(text);
  if (llvm::Error e = cpu::emitCpuProgram(*built->plan, s, os,
                                          inference ? &*inference->plan : nullptr))
    return e;
  os.flush();
  return text;
}

llvm::Error planc::compileCppProgram(const std::string &source, const std::string &sourceName,
                                     const BuildOptions &options, llvm::raw_ostream &log) {
  // The toolchain: the compiler and where the runtime is.
  std::string cxx = options.cxx;
  if (cxx.empty()) {
    const char *env = std::getenv("CXX");
    cxx = env && *env ? env : PLANC_RUNTIME_CXX;
  }
  auto cxxPath = llvm::sys::findProgramByName(cxx);
  if (!cxxPath) return makeError("cannot find the C++ compiler '" + cxx + "' (set CXX, or install g++)");
  const std::string include = options.runtimeInclude.empty() ? PLANC_RUNTIME_INCLUDE_DIR : options.runtimeInclude;
  const std::string library = options.runtimeLibrary.empty() ? PLANC_RUNTIME_LIBRARY : options.runtimeLibrary;
  if (!llvm::sys::fs::exists(include + "/runtime/Executable.h"))
    return makeError("cannot find the planc runtime's headers (runtime/Executable.h) under '" + include + "'");
  if (!llvm::sys::fs::exists(library)) return makeError("cannot find the planc runtime library '" + library + "'");

  // The source beside the output (removed afterwards unless kept), the
  // executable to a temporary name renamed into place.
  const std::string cppPath = options.output + ".cpp";
  const std::string tmpCpp = options.keepSource ? cppPath : options.output + ".planc-tmp.cpp";
  const std::string tmpExe = options.output + ".planc-tmp";
  {
    std::error_code ec;
    llvm::raw_fd_ostream f(tmpCpp, ec);
    if (ec) return makeError("cannot write '" + tmpCpp + "': " + ec.message());
    f << source;
    f.close();
    if (f.has_error()) return makeError("cannot write '" + tmpCpp + "': " + f.error().message());
  }
  if (options.optLevel < 0 || options.optLevel > 3)
    return makeError("the optimisation level must be 0 to 3, not " + std::to_string(options.optLevel));
  // -fno-math-errno: the kernels never read errno, and with it set libm's
  // sqrtf is a call on a branch for negative operands, so a loop over it (an
  // AdamW update) does not vectorise -- 2.5x slower. Results do not change.
  std::vector<std::string> args = {*cxxPath, "-std=c++17", "-O" + std::to_string(options.optLevel), "-fopenmp",
                                   "-fno-math-errno", "-w"};
  if (options.native) args.push_back("-march=native");
  // This build's runtime library's own needs (a sanitized build's).
  if (options.runtimeLibrary.empty())
    for (llvm::StringRef flag : llvm::split(llvm::StringRef(PLANC_RUNTIME_EXTRA_FLAGS), ' '))
      if (!flag.empty()) args.push_back(flag.str());
  args.insert(args.end(), {"-I" + include, tmpCpp, library});
  // OpenBLAS (the OpenMP-threaded one where this planc was built with it).
  for (llvm::StringRef lib : llvm::split(llvm::StringRef(PLANC_BLAS_LIBRARIES), ' '))
    if (!lib.empty()) args.push_back(lib.str());
  // MPI, which the runtime's communicator calls (the libraries this planc was built with).
  for (llvm::StringRef lib : llvm::split(llvm::StringRef(PLANC_MPI_LIBRARIES), ' '))
    if (!lib.empty()) args.push_back(lib.str());
  args.insert(args.end(), {"-o", tmpExe});
  std::vector<llvm::StringRef> argv(args.begin(), args.end());
  llvm::SmallString<128> errPath;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("planc-build", "log", errPath))
    return makeError("cannot create a temporary file: " + ec.message());
  log << "planc build: compiling " << (source.size() / 1024) << " KiB of C++ with " << cxx << "\n";
  log.flush();
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::None, llvm::StringRef(errPath), llvm::StringRef(errPath)};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(*cxxPath, argv, llvm::None, redirects, 0, 0, &execError);
  std::string compilerOutput;
  if (auto buf = llvm::MemoryBuffer::getFile(errPath)) compilerOutput = (*buf)->getBuffer().str();
  llvm::sys::fs::remove(errPath);
  if (!options.keepSource) llvm::sys::fs::remove(tmpCpp);
  if (rc != 0) {
    llvm::sys::fs::remove(tmpExe);
    if (compilerOutput.size() > 4000) compilerOutput = "...\n" + compilerOutput.substr(compilerOutput.size() - 4000);
    return makeError("the C++ compiler failed" + (execError.empty() ? "" : " (" + execError + ")") + " on the code of '" +
                     sourceName + "':\n" + compilerOutput);
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmpExe, options.output)) {
    llvm::sys::fs::remove(tmpExe);
    return makeError("cannot write '" + options.output + "': " + ec.message());
  }
  return llvm::Error::success();
}

llvm::Error planc::buildCpuExecutable(Compilation &c, const BuildOptions &options, llvm::raw_ostream &log) {
  if (options.output.empty()) return makeError("no output file; give one with -o");
  const std::string sourceName =
      c.getMainBuffer() ? c.getSourceMgr().getMemoryBuffer(c.getMainBuffer())->getBufferIdentifier().str() : "";
  log << "planc build: generating C++ for " << sourceName << "\n";
  log.flush();
  auto source = generateCpuSource(c, options.floatType, sourceName);
  if (!source) return source.takeError();

  if (llvm::Error e = compileCppProgram(*source, sourceName, options, log)) return e;
  log << "planc build: wrote " << options.output
      << (options.keepSource ? " and " + options.output + ".cpp" : "") << "\n";
  log.flush();
  return llvm::Error::success();
}
