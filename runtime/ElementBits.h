//===- runtime/ElementBits.h - the stored bit patterns of element types -*- C++ -*-===//
//
// Buffers, files and devices hold each element in its type's own bits; the
// host computes on f64 values. The conversions and the rounding are
// numerics/ElementBits.h's, the IR interpreter's own (ir::roundTo), under the
// runtime's names: executables and the interpreter round identically by
// construction.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_ELEMENTBITS_H
#define PLANC_RUNTIME_ELEMENTBITS_H

#include "runtime/ElementType.h"

#include "numerics/ElementBits.h"

namespace planc::runtime {

using numerics::decodeBuffer;
using numerics::decodeElement;
using numerics::encodeBuffer;
using numerics::encodeElement;
using numerics::roundToElement;

} // namespace planc::runtime

#endif
