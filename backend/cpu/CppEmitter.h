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

#include "exec/ExecutionPlan.h"
#include "ir/IR.h"
#include "runtime/Data.h"
#include "runtime/NameMap.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace planc::cpu {

/// What the executable needs of the plan besides its execution plan.
struct CpuProgramSettings {
  std::string source;              // the .plan file, for the banner and --help
  int64_t steps = 1;               // train.steps
  uint64_t seed = 0;               // train.seed
  runtime::DataSpec data;          // train.data
  runtime::BatchShape batch;       // the whole step's batch (BatchShape.h of the interpreter)
  int64_t checkpointEvery = 0;
  std::string checkpointDir = "ckpt";
  int64_t checkpointKeep = 0;
  double flopsPerStep = 0;         // the model's, for MFU
  double peakFlops = 0;            // the device's for the compute dtype; 0: unknown
  double predictedStepSeconds = 0; // the cost model's step on the plan's CPU; 0: none (another device)
  std::string predictionBasis;     // its calibration ("defaults for CPUs")
  std::vector<uint64_t> ledgerBytes; // the memory plan's arena of each stage (what `planc check` prints)
  /// backend::RenderOptions::foldProducers: a plan with a fusion policy
  /// other than `none`.
  bool foldProducers = false;
  /// The name map the plan follows (train.names), resolved against the
  /// model: --init-from and the checkpoints' index use it.
  runtime::NameMap names;
};

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
