//===- runtime/Executable.h - the main() of a compiled plan -------*- C++ -*-===//
//
// What `planc build` writes is one translation unit (backend/cpu/
// CppEmitter.h): the kernels, the training step as straight-line calls on
// one arena, and a description of that arena -- an ExecutableModel
// (runtime/ExecutableModel.h) -- passed to runExecutable(), which is the
// whole program around the step:
//
//   parse the options (`./model --help`, ExecutableOptions.h)
//   allocate the arena: one block of exactly arenaBytes (the ledger's
//     figure for this rank, printed beside it)
//   initialise every parameter and optimizer state as the interpreter does
//     (ParamInit.h), or load them (--resume DIR, --init-from FILE)
//   open the data (the plan's `data`, or --data)
//   for each step: write the batch's rows into the input buffers, the
//     1-based step count, run the step, copy updates that are not in place
//     into their parameters, log the line (StepLog.h), checkpoint when due
//   the per-class profile (--profile)
//
// Checkpoints (docs/checkpoints.md): DIR/step-<N>/rank-<r>.safetensors
// with every Param buffer by its checkpoint name in its own dtype, the step,
// the seed and the build in its metadata, and DIR/step-<N>/index.json (the
// global shapes, dtypes, shardings and which file holds each) written last;
// every file atomically (AtomicFile.h), so a step folder without an index
// is an interrupted write and is never resumed from. The last `keep` step
// folders are kept.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_EXECUTABLE_H
#define PLANC_RUNTIME_EXECUTABLE_H

#include "runtime/ExecutableModel.h"

namespace planc::runtime {

/// Makes `model` run program `index` as rank `rank` (one of the program's
/// ranks): its arena, buffers and step, each parameter's block offset.
void selectProgram(ExecutableModel &model, size_t index, int64_t rank);

/// The executable's main: runs `model` as `argv` asks; the exit status.
int runExecutable(const ExecutableModel &model, int argc, char **argv);

} // namespace planc::runtime

#endif
