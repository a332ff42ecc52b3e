//===- backend/cpu/CpuTarget.h - the CPU backend as a Target ----*- C++ -*-===//
//
// --target=cpu (backend/Target.h): the C++ of CppEmitter.h, built by
// Toolchain.h, run from a temporary folder by Launch.h.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_CPU_CPUTARGET_H
#define PLANC_BACKEND_CPU_CPUTARGET_H

#include "backend/Target.h"

#include <memory>

namespace planc::cpu {

std::unique_ptr<backend::Target> makeCpuTarget();

} // namespace planc::cpu

#endif
