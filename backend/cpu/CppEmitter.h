//===- backend/cpu/CppEmitter.h - a plan's programs as one C++ file -*- C++ -*-===//
//
// The CPU backend's code generator: every rank class's program of the
// execution plan (exec/ExecutionPlan.h) in one translation unit that the
// system C++ compiler builds into an executable with runtime/. Every rank of
// the mesh runs that one executable (under MPI) and picks its program:
//
//   a banner        the plan, its source, the mesh, each rank class with its
//                   mesh coordinates and arena size
//   the kernels     one function per distinct kernel (backend/c/
//                   ProgramKernels.h), each with its banner and a shape
//                   comment on every pointer; the second program's on are
//                   named apart ("p1_s12_gelu")
//   the steps       `planc_step_<p>(arena, draw_seed, profile)` per program:
//                   every step as a straight-line call in the plan's order,
//                   grouped under comments by work and micro-batch (forward
//                   mb0, backward mb0, ..., update), every argument
//                   `arena + OFFSET` with the buffer's name and shape; a
//                   communication step as a call on the runtime's
//                   communicator (runtime/StepComms.h) with a CommStep
//                   constant, and the waits the plan puts before a step
//   the model       the runtime's ExecutableModel (runtime/Executable.h):
//                   the mesh, and per program its parameters (initialisation,
//                   each rank's block offsets), inputs and outputs; the
//                   plan's training settings
//   main()          runtime::runExecutable
//
// Nothing of the plan's text reaches the source unescaped: identifiers go
// through cIdentifier(), comments through cComment(), strings through
// cString().
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_CPU_CPPEMITTER_H
#define PLANC_BACKEND_CPU_CPPEMITTER_H

#include "backend/ProgramSettings.h"
#include "exec/ExecutionPlan.h"
#include "ir/IR.h"
#include "runtime/Data.h"
#include "runtime/NameMap.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace planc::cpu {

/// What the executable needs of the plan besides its execution plan
/// (backend/ProgramSettings.h, what every target's program reads).
using CpuProgramSettings = backend::ProgramSettings;

/// Writes the translation unit of every program of `plan`.
/// `placed` is the module the plan was built from (its parameters'
/// initialisation). Errors: a step without a kernel
/// (naming the step, its op, its .plan place and the reason), a model
/// without the inputs the loop feeds.
/// With `inference` (the execution plan of the inference step, one rank:
/// compiler/Pipeline.h makeInferenceStep), the unit also has
/// `planc_infer(arena)` and the model its buffers, for --sample.
llvm::Error emitCpuProgram(const ir::Module &placed, const exec::ExecutionPlan &plan,
                           const CpuProgramSettings &settings, llvm::raw_ostream &os,
                           const exec::ExecutionPlan *inference = nullptr);

/// `s` as a C++ string literal: printable ASCII kept but for '"', '\\' and
/// '?' (no trigraph can form), everything else an octal escape.
std::string cString(llvm::StringRef s);

} // namespace planc::cpu

#endif
