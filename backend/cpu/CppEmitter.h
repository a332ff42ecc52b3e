//===- backend/cpu/CppEmitter.h - a plan's programs as one C++ file -*- C++ -*-===//
//
// The CPU backend's code generator: every rank class's program of the
// execution plan (exec/ExecutionPlan.h) in one translation unit that the
// system C++ compiler builds into an executable with runtime/. The host
// program around the kernels (the banner, the steps, the model, main()) is
// every target's (backend/host/HostProgram.h); this backend adds what is
// the CPU's alone:
//
//   the kernels     one function per distinct kernel of the CPU flavour
//                   (backend/c/ProgramKernels.h), each with its banner and a
//                   shape comment on every pointer; the second program's on
//                   are named apart ("p1_s12_gelu"), the inference step's
//                   too ("is12_gelu")
//   the glue        OpenMP's header, and planc_set_threads setting the
//                   threads of OpenMP and of OpenBLAS
//
// It reads the execution plan alone (no module, no plan settings beyond
// HostProgramSettings).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_CPU_CPPEMITTER_H
#define PLANC_BACKEND_CPU_CPPEMITTER_H

#include "backend/host/HostProgram.h"

namespace planc::cpu {

/// What the executable needs of the plan besides its execution plan.
using CpuProgramSettings = host::HostProgramSettings;

/// Writes the translation unit of every program of `plan`. Errors: a step
/// without a kernel (naming the step, its op, its .plan place and the
/// reason), a model without the inputs the loop feeds. With `inference`
/// (the execution plan of the inference step, one rank: compiler/Pipeline.h
/// makeInferenceStep), the unit also has `planc_infer(arena)` and the model
/// its buffers, for --sample.
llvm::Error emitCpuProgram(const exec::ExecutionPlan &plan, const CpuProgramSettings &settings, llvm::raw_ostream &os,
                           const exec::ExecutionPlan *inference = nullptr);

} // namespace planc::cpu

#endif
