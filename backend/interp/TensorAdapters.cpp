//===- backend/interp/TensorAdapters.cpp - ir::Tensor <-> runtime::HostTensor -===//

#include "backend/interp/TensorAdapters.h"

#include "runtime/ElementBits.h"

#include <algorithm>

using namespace planc;

runtime::ElementType interp::toElementType(ir::DType dtype) { return ir::elementTypeOf(dtype); }
ir::DType interp::toDType(runtime::ElementType type) { return ir::dtypeOf(type); }

runtime::HostTensor interp::toHostTensor(const ir::Tensor &t) {
  runtime::HostTensor h = runtime::HostTensor::zeros(toElementType(t.dtype), t.shape);
  runtime::encodeBuffer(h.type, t.data.data(), t.data.size(), h.bytes.data());
  return h;
}

ir::Tensor interp::toTensor(const runtime::HostTensor &h) {
  ir::Tensor t(h.shape, toDType(h.type));
  // A HostTensor whose bytes are short of its shape (malformed) decodes what it has.
  size_t n = std::min<size_t>(t.data.size(), h.bytes.size() / std::max(1u, runtime::byteSize(h.type)));
  runtime::decodeBuffer(h.type, h.bytes.data(), n, t.data.data());
  return t;
}

runtime::HostTensorMap interp::toHostTensors(const ir::TensorMap &tensors) {
  runtime::HostTensorMap out;
  for (const auto &[name, t] : tensors) out.emplace(name, toHostTensor(t));
  return out;
}

ir::TensorMap interp::toTensors(const runtime::HostTensorMap &tensors) {
  ir::TensorMap out;
  for (const auto &[name, h] : tensors) out.emplace(name, toTensor(h));
  return out;
}
