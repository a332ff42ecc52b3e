//===- numerics/ElementBits.h - element values and their bits ---*- C++ -*-===//
//
// Planc computes on f64 values and stores each element in its type's own
// bits. roundToElement is the value a stored element has: the IR's
// interpreter rounds every result with it (ir::roundTo) and the executables
// round with it when they store, so the two agree by construction. The
// codecs turn values into bits and back for every element type: IEEE
// f64/f32, the narrow floats of numerics/FloatFormat.h, and the integers
// (two's complement). Buffers are little-endian, byteSize(type) bytes per
// element, whatever the host's byte order.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_NUMERICS_ELEMENTBITS_H
#define PLANC_NUMERICS_ELEMENTBITS_H

#include "numerics/ElementType.h"
#include "numerics/FloatFormat.h"

#include <cstddef>
#include <cstdint>

namespace planc::numerics {

/// The format of a narrow float type (bf16, f16, fp8_e4m3, fp8_e5m2); null
/// for f32, f64 and the integers.
const FloatFormat *floatFormatOf(ElementType type);

/// The nearest value `type` holds: floats round to nearest even in one step
/// from f64 (overflow to infinity, or to NaN for fp8_e4m3, which has none);
/// integers truncate toward zero and wrap modulo 2^bits (i64 keeps the
/// truncated value); bool is x != 0.
double roundToElement(ElementType type, double x);

/// The bits of `x` rounded to `type` (as roundToElement rounds), in the low
/// byteSize(type) bytes. i64 values out of range saturate.
uint64_t encodeElement(ElementType type, double x);

/// The value of the low byteSize(type) bytes of `bits` read as `type`.
double decodeElement(ElementType type, uint64_t bits);

/// `n` values into `out`, byteSize(type) little-endian bytes each.
void encodeBuffer(ElementType type, const double *in, size_t n, void *out);

/// `n` elements of `in` (byteSize(type) little-endian bytes each) as values.
void decodeBuffer(ElementType type, const void *in, size_t n, double *out);

} // namespace planc::numerics

#endif
