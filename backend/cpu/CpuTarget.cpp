//===- backend/cpu/CpuTarget.cpp - the CPU backend as a Target ------------===//

#include "backend/cpu/CpuTarget.h"
#include "backend/c/StepsWithoutKernel.h"
#include "backend/cpu/CppEmitter.h"
#include "backend/cpu/Launch.h"
#include "backend/cpu/Toolchain.h"

#include "ir/MeshLayout.h"
#include "support/Error.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace planc;
using namespace planc::backend;

namespace {

class CpuTarget final : public Target {
public:
  TargetKind kind() const override { return TargetKind::Cpu; }
  bool emitsCode() const override { return true; }

  std::vector<RefusedStep> refusedSteps(const exec::ExecutionPlan &plan, bool foldProducers) const override {
    // The emitter's own choice of kernels (CppEmitter.cpp): a step neither
    // rendered nor a communicator call is refused.
    return stepsWithoutKernel(plan, cpuLanguage(), foldProducers, KernelTargetTraits());
  }

  llvm::Error emit(const TargetProgram &program, llvm::raw_ostream &os) const override {
    if (!program.plan) return makeError("internal error: the CPU target needs an execution plan");
    return cpu::emitCpuProgram(*program.plan, program.settings, os, program.inference);
  }

  llvm::Error build(const std::string &code, const std::string &sourceName, const ToolchainOptions &options,
                    llvm::raw_ostream &log) const override {
    if (llvm::Error e = cpu::compileCppProgram(code, sourceName, options, log)) return e;
    log << "planc build: wrote " << options.output << (options.keepSource ? " and " + options.output + ".cpp" : "")
        << "\n";
    log.flush();
    return llvm::Error::success();
  }

  llvm::Error checkCanRun(int64_t ranks) const override { return cpu::findLauncher(ranks).takeError(); }

  llvm::Expected<int> run(const TargetProgram &program, const std::string &code,
                          const TargetRunOptions &options) const override {
    // Built into a temporary folder, run from there, removed.
    const int64_t ranks = program.plan ? MeshLayout(program.plan->mesh).numRanks() : 1;
    auto launcher = cpu::findLauncher(ranks);
    if (!launcher) return launcher.takeError();
    llvm::SmallString<128> dir;
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("planc-run", dir))
      return makeError("cannot create a temporary folder: " + ec.message());
    ToolchainOptions toolchain = options.toolchain;
    llvm::SmallString<128> exe(dir);
    llvm::sys::path::append(exe, "model");
    toolchain.output = exe.str().str();
    llvm::raw_ostream &log = options.log ? *options.log : llvm::errs();
    if (llvm::Error e = build(code, program.settings.source, toolchain, log)) {
      llvm::sys::fs::remove_directories(dir);
      return e;
    }
    cpu::LaunchOptions launch;
    launch.ranks = ranks;
    launch.steps = options.steps;
    launch.seed = options.seed;
    // The executable writes to the same stdout.
    llvm::outs().flush();
    llvm::Expected<int> status = cpu::launchExecutable(toolchain.output, *launcher, launch);
    llvm::sys::fs::remove_directories(dir);
    return status;
  }
};

} // namespace

std::unique_ptr<Target> cpu::makeCpuTarget() { return std::make_unique<CpuTarget>(); }
