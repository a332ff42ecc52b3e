//===- backend/interp/InterpTarget.h - the interpreter as a Target -*- C++ -*-===//
//
// --target=interp (backend/Target.h): the execution plan run in this process
// by PlanTrainer.h, every rank's arena beside the others. It emits and
// builds nothing.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_INTERP_INTERPTARGET_H
#define PLANC_BACKEND_INTERP_INTERPTARGET_H

#include "backend/Target.h"

#include <memory>

namespace planc::interp {

std::unique_ptr<backend::Target> makeInterpTarget();

} // namespace planc::interp

#endif
