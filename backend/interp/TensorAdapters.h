//===- backend/interp/TensorAdapters.h - the interpreter's tensors and the runtime's -*- C++ -*-===//
//
// The reference interpreter computes on ir::Tensor (f64 values, ir::DType);
// the runtime holds runtime::HostTensor (the element type's own bytes,
// runtime::ElementType). These convert one to the other: the enums by value
// (ir/Type.h's elementTypeOf and dtypeOf, whose orders ir/Type.cpp checks at
// compile time), the tensors through runtime/ElementBits.h, so a tensor made
// of values its dtype holds survives the round trip exactly.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_INTERP_TENSORADAPTERS_H
#define PLANC_BACKEND_INTERP_TENSORADAPTERS_H

#include "ir/Interpreter.h"
#include "ir/Tensor.h"
#include "runtime/ElementType.h"
#include "runtime/HostTensor.h"
#include "runtime/Safetensors.h"

namespace planc::interp {

runtime::ElementType toElementType(ir::DType dtype);
ir::DType toDType(runtime::ElementType type);

/// The tensor's values rounded to its dtype (as ir::roundTo rounds) and encoded.
runtime::HostTensor toHostTensor(const ir::Tensor &t);
/// The tensor's elements decoded to f64.
ir::Tensor toTensor(const runtime::HostTensor &t);

runtime::HostTensorMap toHostTensors(const ir::TensorMap &tensors);
ir::TensorMap toTensors(const runtime::HostTensorMap &tensors);

} // namespace planc::interp

#endif
