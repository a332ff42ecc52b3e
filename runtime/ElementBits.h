//===- runtime/ElementBits.h - the stored bit patterns of element types -*- C++ -*-===//
//
// Buffers, files and devices hold each element in its type's own bits; the
// host computes on f64 values. These functions convert between the two for
// every element type: IEEE f64/f32/f16, bfloat16, the OCP 8-bit floats as
// PyTorch's float8_e4m3fn and float8_e5m2, and the integers (two's
// complement). Buffers are little-endian, byteSize(type) bytes per element,
// whatever the host's byte order.
//
// roundToElement is the rounding of the IR's interpreter (ir::roundTo),
// written again here because runtime/ may not use ir/; a unit test checks
// that the two agree on every type for many values.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_ELEMENTBITS_H
#define PLANC_RUNTIME_ELEMENTBITS_H

#include "runtime/ElementType.h"

#include <cstddef>
#include <cstdint>

namespace planc::runtime {

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

} // namespace planc::runtime

#endif
