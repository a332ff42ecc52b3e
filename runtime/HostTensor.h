//===- runtime/HostTensor.h - a tensor as typed bytes on the host -*- C++ -*-===//
//
// What the runtime hands around (safetensors files, batches of the data
// sources): a row-major block of `shape`, each element byteSize(type)
// little-endian bytes in `bytes`. Unlike the interpreter's ir::Tensor it keeps
// the element type's own bits, so a file read and written again, or a buffer
// copied to a device, is the same bytes. runtime/ElementBits.h converts
// elements to and from f64 where a caller computes.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_HOSTTENSOR_H
#define PLANC_RUNTIME_HOSTTENSOR_H

#include "runtime/ElementType.h"

#include <cstdint>
#include <vector>

namespace planc::runtime {

struct HostTensor {
  ElementType type = ElementType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes; // byteSize() of them

  /// Elements: the product of the shape (1 for a scalar, 0 if any dim is).
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d < 0 ? 0 : d;
    return n;
  }
  /// Bytes the elements take.
  uint64_t byteSize() const { return uint64_t(numel()) * runtime::byteSize(type); }

  /// A tensor of `shape` whose bytes are all zero (the value 0 in every type).
  static HostTensor zeros(ElementType type, std::vector<int64_t> shape) {
    HostTensor t{type, std::move(shape), {}};
    t.bytes.assign(size_t(t.byteSize()), 0);
    return t;
  }
};

} // namespace planc::runtime

#endif
