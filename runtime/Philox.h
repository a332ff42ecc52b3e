//===- runtime/Philox.h - the counter-based random numbers of planc -*- C++ -*-===//
//
// Philox4x32-10 as numerics/Philox.h defines it, under the runtime's names:
// the data sources, dropout and initialisation of executables draw what the
// interpreter draws, by construction.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_PHILOX_H
#define PLANC_RUNTIME_PHILOX_H

#include "numerics/Philox.h"

namespace planc::runtime {

using numerics::philox4x32;
using numerics::philoxUniform;

} // namespace planc::runtime

#endif
