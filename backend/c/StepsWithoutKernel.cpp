//===- backend/c/StepsWithoutKernel.cpp - a compiled target's refused steps ===//

#include "backend/c/StepsWithoutKernel.h"
#include "backend/c/ProgramKernels.h"

#include "exec/Groups.h"

using namespace planc;
using namespace planc::backend;

std::vector<RefusedStep> backend::stepsWithoutKernel(const exec::ExecutionPlan &plan, const CLanguage &lang,
                                                     bool foldProducers, const KernelTargetTraits &traits) {
  std::vector<RefusedStep> refused;
  for (size_t p = 0; p < plan.programs.size(); ++p) {
    const exec::RankProgram &program = plan.programs[p];
    RenderOptions render;
    render.foldProducers = foldProducers;
    std::vector<StepKernel> chosen = renderProgramKernels(plan, program, lang, llvm::nulls(), render);
    for (size_t i = 0; i < chosen.size() && i < program.steps.size(); ++i) {
      const exec::Step &s = program.steps[i];
      if (chosen[i].rendered || (traits.communicator && exec::isCommunicationStep(s.kind))) continue;
      refused.push_back(refusedStep(p, i, s, chosen[i].reason.empty() ? traits.unexplained : chosen[i].reason));
    }
  }
  return refused;
}
