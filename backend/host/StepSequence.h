//===- backend/host/StepSequence.h - a program's steps as calls -*- C++ -*-===//
//
// The body of a host program's step function: every step of the execution
// plan as a straight-line call in the plan's order, under a comment per
// section (forward mb0, backward mb0, ..., update), each argument
// `arena + OFFSET` with the buffer's name and shape; a communication step as
// a call on the runtime's communicator (runtime/StepComms.h) with its
// CommStep constant (exec/CommCall.h says what it asks), and the waits the
// plan puts before a step. The kernels are the target's (backend/c/
// ProgramKernels.h chooses them); the sequence is the same for every target.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_HOST_STEPSEQUENCE_H
#define PLANC_BACKEND_HOST_STEPSEQUENCE_H

#include "backend/c/ProgramKernels.h"
#include "exec/ExecutionPlan.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace planc::host {

/// Every step of `program` as a call, under a comment per section; a
/// communication step as a call on the runtime's communicator (its CommStep
/// constant, named `prefix` "comm" and the step's index, appended to
/// `constants`), and the waits the plan puts before a step.
void renderStepCalls(const exec::RankProgram &program, const std::vector<backend::StepKernel> &chosen,
                     const std::string &prefix, std::string &constants, llvm::raw_ostream &os);

/// Why a program cannot be built: its steps without a kernel (the first
/// ten), or "".
std::string missingKernels(const exec::RankProgram &program, const std::vector<backend::StepKernel> &chosen);

} // namespace planc::host

#endif
