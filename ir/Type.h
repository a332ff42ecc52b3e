//===- ir/Type.h - dtypes, shapes, shardings --------------------*- C++ -*-===//
//
// The type of every IR value: a shape, a dtype and a sharding over the named
// mesh axes (as GSPMD / DTensor): per tensor dimension the axes that split it,
// plus the axes over which the value is only a partial sum.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_TYPE_H
#define PLANC_IR_TYPE_H

#include "ir/Mesh.h"
#include "numerics/ElementType.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace planc {

using Shape = std::vector<int64_t>;

namespace ir {

enum class DType : uint8_t { F64, F32, BF16, F16, F8E4M3, F8E5M2, I32, I64, U8, U16, U32, Bool };

const char *spelling(DType t);
std::optional<DType> parseDType(llvm::StringRef name);
/// The numerics leaf's element type of `t` (the runtime's ElementType too):
/// the same value, as ir/Type.cpp checks, for encoding and rounding.
numerics::ElementType elementTypeOf(DType t);
/// The dtype of element type `t`: elementTypeOf's inverse.
DType dtypeOf(numerics::ElementType t);
/// Bytes one element takes in memory.
unsigned byteSize(DType t);
bool isFloat(DType t);
bool isInteger(DType t);

/// How a value is laid out over the mesh. Empty `dims` entries and no partial
/// axes mean replicated: every rank holds the whole value.
struct Sharding {
  std::vector<std::vector<MeshAxis>> dims; // per dim: axes splitting it, major first
  std::vector<MeshAxis> partial;           // the value is a partial sum over these axes

  static Sharding replicated(size_t rank) { return Sharding{std::vector<std::vector<MeshAxis>>(rank), {}}; }
  bool isReplicated() const;
  bool operator==(const Sharding &o) const { return dims == o.dims && partial == o.partial; }
  bool operator!=(const Sharding &o) const { return !(*this == o); }
};

struct TensorType {
  Shape shape;
  DType dtype = DType::F32;
  Sharding sharding;

  TensorType() = default;
  TensorType(Shape s, DType d) : shape(std::move(s)), dtype(d), sharding(Sharding::replicated(shape.size())) {}
  size_t rank() const { return shape.size(); }
  int64_t numel() const;
  uint64_t bytes() const { return uint64_t(numel()) * byteSize(dtype); }
  bool operator==(const TensorType &o) const {
    return shape == o.shape && dtype == o.dtype && sharding == o.sharding;
  }
  bool operator!=(const TensorType &o) const { return !(*this == o); }
};

/// `f32[4, 64]`, `bf16[4, 64]{shard(1, tp)}`, `f32[]{partial(tp)}`.
std::string toString(const TensorType &t);
std::string toString(const Shape &s);
std::string toString(const Sharding &s); // "" when replicated

} // namespace ir
} // namespace planc

#endif
