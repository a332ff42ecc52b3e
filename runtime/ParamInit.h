//===- runtime/ParamInit.h - the initial values of parameters -----*- C++ -*-===//
//
// A compiled plan starts from the numbers the interpreter starts from: the
// draws of numerics/InitialValues.h, under the runtime's names.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_PARAMINIT_H
#define PLANC_RUNTIME_PARAMINIT_H

#include "numerics/InitialValues.h"

namespace planc::runtime {

using numerics::initialNormal;
using numerics::initKey;

} // namespace planc::runtime

#endif
