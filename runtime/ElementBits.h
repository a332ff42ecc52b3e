//===- runtime/ElementBits.h - the stored bit patterns of dtypes -*- C++ -*-===//
//
// Host tensors hold every element as an f64 (ir/Tensor.h); files and devices
// hold the dtype's own bits. These two functions convert one element, for
// every dtype the IR has: IEEE f64/f32/f16, bfloat16, the OCP 8-bit floats as
// PyTorch's float8_e4m3fn and float8_e5m2, and the integers (two's complement).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_ELEMENTBITS_H
#define PLANC_RUNTIME_ELEMENTBITS_H

#include "ir/Type.h"

#include <cstdint>

namespace planc::runtime {

/// The bits of `x` rounded to `dtype` (as ir::roundTo rounds), in the low
/// byteSize(dtype) bytes. Integers out of range wrap as ir::roundTo wraps them.
uint64_t encodeElement(ir::DType dtype, double x);

/// The value of the low byteSize(dtype) bytes of `bits` read as `dtype`.
double decodeElement(ir::DType dtype, uint64_t bits);

} // namespace planc::runtime

#endif
