//===- runtime/ElementType.h - element types of raw buffers -----*- C++ -*-===//
//
// What executables link knows tensors only as typed bytes. The element types
// are numerics/ElementType.h's, under the runtime's names; the IR's dtypes
// are the same values (runtime/ never includes ir/; both use the numerics
// leaf).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_ELEMENTTYPE_H
#define PLANC_RUNTIME_ELEMENTTYPE_H

#include "numerics/ElementType.h"

namespace planc::runtime {

using numerics::ElementType;
using numerics::kNumElementTypes;
using numerics::spelling;
using numerics::parseElementType;
using numerics::byteSize;
using numerics::isFloat;

} // namespace planc::runtime

#endif
