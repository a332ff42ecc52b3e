//===- backend/host/ProgramModel.h - the executable's model -----*- C++ -*-===//
//
// makeModel() of a host program: the runtime's ExecutableModel (runtime/
// ExecutableModel.h) as constant tables (runtime/ModelTables.h) and the
// statements that read them: the mesh, and per program its parameters
// (initialisation from the plan's Param buffers, each rank's block offsets),
// inputs and outputs; the plan's training settings; the inference step's
// buffers for --sample.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_HOST_PROGRAMMODEL_H
#define PLANC_BACKEND_HOST_PROGRAMMODEL_H

#include "backend/host/HostProgram.h"

namespace planc::host {

/// The tables and makeModel() of `plan` (and `inference`, if any). Errors: a buffer the
/// executable cannot feed, a model without the inputs the loop feeds.
llvm::Error renderModel(const exec::ExecutionPlan &plan, const HostProgramSettings &settings,
                        const exec::ExecutionPlan *inference, llvm::raw_ostream &os);

} // namespace planc::host

#endif
