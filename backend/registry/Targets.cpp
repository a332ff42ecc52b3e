//===- backend/registry/Targets.cpp - the registry of targets -------------===//
//
// One Target per TargetKind. A kind without a backend in this planc is
// listed all the same, saying why it cannot be used, so that --target=cuda
// is a clear error rather than an unknown word.
//
//===----------------------------------------------------------------------===//

#include "backend/Target.h"
#include "backend/c/StepsWithoutKernel.h"
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
    // No communicator of the GPU yet: its communication steps are refused too.
    KernelTargetTraits traits;
    traits.communicator = false;
    traits.unexplained = "the CUDA backend is not built yet";
    return stepsWithoutKernel(plan, cudaLanguage(), foldProducers, traits);
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
