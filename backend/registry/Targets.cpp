//===- backend/registry/Targets.cpp - the registry of targets -------------===//
//
// One Target per TargetKind. A kind without a backend in this planc is
// listed all the same, saying why it cannot be used, so that --target=cuda
// is a clear error rather than an unknown word.
//
//===----------------------------------------------------------------------===//

#include "backend/Target.h"
#include "backend/c/ProgramKernels.h"
#include "backend/cpu/CpuTarget.h"
#include "backend/interp/InterpTarget.h"

#include "support/Error.h"
#include "support/Plural.h"

#include <memory>

using namespace planc;
using namespace planc::backend;

namespace {

/// CUDA: its kernels render (`planc emit --emit=kernels-cuda`), its host
/// program and build are not written yet.
class CudaTarget final : public Target {
public:
  TargetKind kind() const override { return TargetKind::Cuda; }
  std::string unavailable() const override {
    return "the CUDA backend is not built yet; planc builds and runs on the CPU (--target=cpu), and "
           "`planc emit --emit=kernels-cuda` prints the CUDA kernels the backend will use";
  }
  bool emitsCode() const override { return true; }
  std::vector<RefusedStep> refusedSteps(const exec::ExecutionPlan &plan, bool foldProducers) const override {
    std::vector<RefusedStep> refused;
    for (size_t p = 0; p < plan.programs.size(); ++p) {
      const exec::RankProgram &program = plan.programs[p];
      RenderOptions render;
      render.foldProducers = foldProducers;
      std::vector<StepKernel> chosen = renderProgramKernels(plan, program, cudaLanguage(), llvm::nulls(), render);
      for (size_t i = 0; i < chosen.size() && i < program.steps.size(); ++i) {
        const exec::Step &s = program.steps[i];
        // No communicator of the GPU yet: its communication steps are refused too.
        if (chosen[i].rendered) continue;
        refused.push_back({p, i,
                           "step " + std::to_string(i) + " (" + ir::spelling(s.kind) +
                               (s.path.empty() ? "" : " in " + s.path) + ")",
                           chosen[i].reason.empty() ? "the CUDA backend is not built yet" : chosen[i].reason});
      }
    }
    return refused;
  }
  llvm::Error emit(const TargetProgram &, llvm::raw_ostream &) const override { return notYet(); }
  llvm::Error build(const std::string &, const std::string &, const ToolchainOptions &,
                    llvm::raw_ostream &) const override {
    return notYet();
  }
  llvm::Expected<int> run(const TargetProgram &, const std::string &, const TargetRunOptions &) const override {
    return notYet();
  }

private:
  llvm::Error notYet() const { return makeError("--target=cuda: " + unavailable()); }
};

} // namespace

const Target &backend::targetOf(TargetKind kind) {
  static const std::unique_ptr<Target> interpTarget = interp::makeInterpTarget();
  static const std::unique_ptr<Target> cpuTarget = cpu::makeCpuTarget();
  static const CudaTarget cudaTarget;
  switch (kind) {
  case TargetKind::Interp: return *interpTarget;
  case TargetKind::Cpu: return *cpuTarget;
  case TargetKind::Cuda: return cudaTarget;
  }
  return *interpTarget;
}

std::vector<TargetKind> backend::allTargetKinds() { return {TargetKind::Interp, TargetKind::Cpu, TargetKind::Cuda}; }

std::string backend::describeRefusals(const std::vector<RefusedStep> &refused) {
  if (refused.empty()) return "";
  std::string text = counted(int64_t(refused.size()), "step") + ":";
  for (size_t i = 0; i < refused.size() && i < 10; ++i) text += "\n  " + refused[i].what + ": " + refused[i].reason;
  if (refused.size() > 10) text += "\n  ...";
  return text;
}
