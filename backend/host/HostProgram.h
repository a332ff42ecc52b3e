//===- backend/host/HostProgram.h - a plan's host program, for any target -*- C++ -*-===//
//
// What every compiled target writes around its kernels: one translation
// unit that the target's compiler builds with runtime/ into the executable
// every rank of the mesh runs (under MPI), picking its program:
//
//   a banner        the plan, its source, the mesh, each rank class with its
//                   mesh coordinates and arena size, how the unit is built
//   the kernels     the target's (TargetCode::kernels)
//   the steps       `planc_step_<p>(arena, draw_seed, profile)` per program:
//                   every step as a straight-line call in the plan's order
//                   (backend/host/StepSequence.h), with the waits and the
//                   communicator's calls
//   the glue        the target's: planc_set_threads
//   the model       makeModel(): the runtime's ExecutableModel
//                   (backend/host/ProgramModel.h)
//   main()          runtime::runExecutable, with the build's identity
//
// It reads only the execution plan and the settings below: the parameters'
// initialisation and the folding are facts on the plan (exec/BuildPlan.h).
// Nothing of the plan's text reaches the source unescaped: identifiers go
// through cIdentifier(), comments through cComment(), strings through
// cString().
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_HOST_HOSTPROGRAM_H
#define PLANC_BACKEND_HOST_HOSTPROGRAM_H

#include "backend/ProgramSettings.h"
#include "backend/c/ProgramKernels.h"
#include "exec/ExecutionPlan.h"
#include "runtime/Data.h"
#include "runtime/NameMap.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace planc::host {

/// What the executable needs of the plan besides its execution plan
/// (backend/ProgramSettings.h: every target's program reads the same).
using HostProgramSettings = backend::ProgramSettings;

/// What a target puts into its host program.
struct TargetCode {
  std::string kernels; // every kernel's source, its prelude first
  /// Per program of the plan, per step: its kernel (backend/c/
  /// ProgramKernels.h renderProgramKernels); every step has one, or is a
  /// communication step.
  std::vector<std::vector<backend::StepKernel>> chosen;
  std::vector<backend::StepKernel> inferenceChosen; // the inference step's
  std::string buildLine; // the banner's last line: how the unit is built
  std::string headers;   // the target's own, after the runtime's
  std::string glue;      // the target's functions: planc_set_threads(int)
};

/// Writes the translation unit of every program of `plan` around the
/// target's code. With `inference` (the execution plan of the inference
/// step, one rank), the unit also has `planc_infer(arena)` and the model its
/// buffers, for --sample. Errors: a model without the inputs the loop feeds,
/// or with a buffer the executable cannot feed.
llvm::Error emitHostProgram(const exec::ExecutionPlan &plan, const HostProgramSettings &settings,
                            const TargetCode &target, llvm::raw_ostream &out,
                            const exec::ExecutionPlan *inference = nullptr);

} // namespace planc::host

#endif
