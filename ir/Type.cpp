//===- ir/Type.cpp - dtypes, shapes, shardings ---------------------------===//

#include "ir/Type.h"

#include "llvm/ADT/STLExtras.h"

#include <iterator>
#include <limits>

using namespace planc;
using namespace planc::ir;

namespace {
struct DTypeInfo {
  const char *name;
  unsigned bytes;
  bool isFloat;
};
// Indexed by DType; the names are the .plan language's dtype names.
const DTypeInfo dtypeTable[] = {
    {"f64", 8, true},      {"f32", 4, true},      {"bf16", 2, true}, {"f16", 2, true},
    {"fp8_e4m3", 1, true}, {"fp8_e5m2", 1, true}, {"i32", 4, false}, {"i64", 8, false},
    {"u8", 1, false},      {"u16", 2, false},     {"u32", 4, false}, {"bool", 1, false},
};
static_assert(std::size(dtypeTable) == unsigned(DType::Bool) + 1, "one row per dtype");
} // namespace

const char *ir::spelling(DType t) { return dtypeTable[unsigned(t)].name; }

std::optional<DType> ir::parseDType(llvm::StringRef name) {
  for (unsigned i = 0; i < std::size(dtypeTable); ++i)
    if (name == dtypeTable[i].name) return DType(i);
  return std::nullopt;
}

unsigned ir::byteSize(DType t) { return dtypeTable[unsigned(t)].bytes; }
bool ir::isFloat(DType t) { return dtypeTable[unsigned(t)].isFloat; }
bool ir::isInteger(DType t) { return !isFloat(t) && t != DType::Bool; }

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
