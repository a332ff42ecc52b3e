//===- ir/ConvertFloats.h - one float dtype for a whole module --*- C++ -*-===//
//
// Reference checks run a plan in f64 (`planc run --dtype=f64`, gradient checks
// of whole models): every floating-point value of the module — parameters,
// inputs, op results — and every float `dtype` attribute (cast, fill, the
// scalar type of lr_schedule) becomes the one dtype. Integer values (token
// ids, the step counter) are left alone.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_CONVERTFLOATS_H
#define PLANC_IR_CONVERTFLOATS_H

#include "ir/IR.h"

namespace planc::ir {

/// Retypes `m` in place. The result verifies if `m` did: every op's type rule
/// is dtype-generic over the float types, and all of them change together.
void convertFloatTypes(Module &m, DType to);

} // namespace planc::ir

#endif
