//===- backend/c/StepsWithoutKernel.h - a compiled target's refused steps -*- C++ -*-===//
//
// The refusedSteps of a target whose kernels the C-family renderer writes
// (the CPU's, CUDA's): its own choice of kernels (ProgramKernels.h),
// rendered to nowhere, so a step is refused exactly where emit would find
// no kernel for it, and for the same reason.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_C_STEPSWITHOUTKERNEL_H
#define PLANC_BACKEND_C_STEPSWITHOUTKERNEL_H

#include "backend/Target.h"
#include "backend/c/CLanguage.h"

#include <string>
#include <vector>

namespace planc::backend {

/// What a compiled target runs besides the kernels `lang` renders.
struct KernelTargetTraits {
  /// A communication step is a call on the runtime's communicator (the
  /// CPU); without one (CUDA now), it is refused like a step without a kernel.
  bool communicator = true;
  /// The reason of a refused step the renderer gives none for (a
  /// communication step of a target without a communicator).
  std::string unexplained;
};

/// Every step of `plan` without a kernel in `lang` (and not a communicator
/// call), in program and step order, with the renderer's reason.
/// `foldProducers`: as RenderOptions::foldProducers.
std::vector<RefusedStep> stepsWithoutKernel(const exec::ExecutionPlan &plan, const CLanguage &lang,
                                            bool foldProducers, const KernelTargetTraits &traits);

} // namespace planc::backend

#endif
