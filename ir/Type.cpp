//===- ir/Type.cpp - dtypes, shapes, shardings ---------------------------===//

#include "ir/Type.h"

#include "numerics/ElementType.h"

#include "llvm/ADT/STLExtras.h"

#include <limits>

using namespace planc;
using namespace planc::ir;

// The dtypes are the numerics leaf's element types (numerics/ElementType.h)
// by value: its table holds their names and sizes, for the IR and the
// runtime alike.
#define PLANC_SAME_ELEMENT(name)                                                                                     \
  static_assert(unsigned(DType::name) == unsigned(numerics::ElementType::name), "DType::" #name " is not the element type");
PLANC_SAME_ELEMENT(F64)
PLANC_SAME_ELEMENT(F32)
PLANC_SAME_ELEMENT(BF16)
PLANC_SAME_ELEMENT(F16)
PLANC_SAME_ELEMENT(F8E4M3)
PLANC_SAME_ELEMENT(F8E5M2)
PLANC_SAME_ELEMENT(I32)
PLANC_SAME_ELEMENT(I64)
PLANC_SAME_ELEMENT(U8)
PLANC_SAME_ELEMENT(U16)
PLANC_SAME_ELEMENT(U32)
PLANC_SAME_ELEMENT(Bool)
#undef PLANC_SAME_ELEMENT
static_assert(unsigned(DType::Bool) + 1 == numerics::kNumElementTypes, "as many dtypes as element types");

numerics::ElementType ir::elementTypeOf(DType t) { return numerics::ElementType(unsigned(t)); }
DType ir::dtypeOf(numerics::ElementType t) { return DType(unsigned(t)); }

const char *ir::spelling(DType t) { return numerics::spelling(elementTypeOf(t)); }

std::optional<DType> ir::parseDType(llvm::StringRef name) {
  if (auto t = numerics::parseElementType(std::string_view(name.data(), name.size()))) return dtypeOf(*t);
  return std::nullopt;
}

unsigned ir::byteSize(DType t) { return numerics::byteSize(elementTypeOf(t)); }
bool ir::isFloat(DType t) { return numerics::isFloat(elementTypeOf(t)); }
bool ir::isInteger(DType t) { return numerics::isInteger(elementTypeOf(t)); }

bool Sharding::isReplicated() const {
  return partial.empty() && llvm::all_of(dims, [](const std::vector<MeshAxis> &d) { return d.empty(); });
}

int64_t TensorType::numel() const {
  // Saturates instead of overflowing: shapes may come from untrusted IR text,
  // and a wrapped count would be worse than an absurdly large one.
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0) return 0;
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  }
  return n;
}

std::string ir::toString(const Shape &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

/// Axes of one dim or of the partial sum: "tp", "dp+tp".
static std::string axesToString(const std::vector<MeshAxis> &axes) {
  std::string out;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (i) out += "+";
    out += spelling(axes[i]);
  }
  return out;
}

std::string ir::toString(const Sharding &s) {
  if (s.isReplicated()) return "";
  std::string out = "{";
  auto sep = [&] {
    if (out.size() > 1) out += ", ";
  };
  for (size_t d = 0; d < s.dims.size(); ++d) {
    if (s.dims[d].empty()) continue;
    sep();
    out += "shard(" + std::to_string(d) + ", " + axesToString(s.dims[d]) + ")";
  }
  if (!s.partial.empty()) {
    sep();
    out += "partial(" + axesToString(s.partial) + ")";
  }
  return out + "}";
}

std::string ir::toString(const TensorType &t) {
  return std::string(spelling(t.dtype)) + toString(t.shape) + toString(t.sharding);
}
