//===- backend/c/Layout.cpp - data movement as strided gathers -------------===//

#include "backend/c/Layout.h"

#include "ir/AttrReader.h"
#include "ir/OpDef.h"
#include "ir/ShapeMath.h"
#include "runtime/ElementBits.h"

#include <optional>

using namespace planc;
using namespace planc::backend;
using namespace planc::ir;

namespace {

const char *bitsType(DType t) {
  switch (byteSize(t)) {
  case 1: return "uint8_t";
  case 2: return "uint16_t";
  case 8: return "uint64_t";
  default: return "uint32_t";
  }
}

} // namespace

std::string backend::makeLayoutKernel(OpKind kind, const AttrMap &attrs, const KernelBuffer *input,
                                      const KernelBuffer &output, LayoutKernel &k) {
  k = LayoutKernel();
  k.kind = kind;
  k.output = output;
  // The op table says which operand element each result element is
  // (KernelDesc::gather); this file only checks that the bits can move.
  const GatherRule rule = kind < OpKind::NumOps ? opDef(kind).kernel.gather : nullptr;
  std::vector<Shape> operands;
  if (input) operands.push_back(input->shape);
  Gather g;
  const std::string why = rule ? rule(attrs, operands, output.shape, g) : "not data movement";
  if (!g.readsOperand) {
    if (!why.empty()) return why;
    k.hasInput = false;
    k.fillBits = runtime::encodeElement(elementTypeOf(output.dtype), g.fill);
    return "";
  }
  if (!input) return "takes one operand";
  if (input->dtype != output.dtype) return "changes the dtype";
  if (!why.empty()) return why;
  k.input = *input;
  k.strides = std::move(g.strides);
  k.base = g.base;
  k.window = g.window;
  k.lo = g.lo;
  k.hi = g.hi;
  // Outside a window: the fill's bits (a pad's zeros are 0 in every dtype).
  if (g.window >= 0) k.fillBits = runtime::encodeElement(elementTypeOf(output.dtype), g.fill);
  return "";
}

std::string backend::makeShardSliceKernel(const AttrMap &attrs, const TensorType &from, const TensorType &to,
                                          const KernelBuffer &input, const KernelBuffer &output, const MeshSizes &mesh,
                                          LayoutKernel &k) {
  k = LayoutKernel();
  k.kind = OpKind::ShardSlice;
  const size_t rank = output.shape.size();
  if (input.dtype != output.dtype) return "changes the dtype";
  if (input.shape.size() != rank || from.rank() != rank || to.rank() != rank) return "a result of another rank";
  AttrReader at(attrs);
  const std::optional<int64_t> found = normalizeDim(at.getInt("dim", 0), rank);
  if (!found) return "a dim out of range";
  const int64_t dim = *found;
  k.input = input;
  k.output = output;
  k.strides = rowMajorStrides(input.shape);
  // The result's block starts this far into the operand's block: the
  // difference of their offsets in the global value, as the reference
  // takes it. Rows from the operand's end on are zeros (padding).
  const std::string toStart = blockOffsetExpr(to, size_t(dim), mesh);
  const std::string fromStart = blockOffsetExpr(from, size_t(dim), mesh);
  k.shift = fromStart == "0" ? toStart : toStart + " - " + fromStart;
  k.window = int(dim);
  k.lo = 0;
  k.hi = input.shape[size_t(dim)];
  k.fillBits = 0;
  return "";
}

std::string backend::makeStageMergeKernel(int stages, const KernelBuffer &output, LayoutKernel &k) {
  k = LayoutKernel();
  k.kind = OpKind::StageMerge;
  if (stages < 1) return "no operand";
  k.stageOperands = stages;
  k.input = k.output = output;
  k.strides = rowMajorStrides(output.shape);
  return "";
}

std::string backend::accumulateLayout(LayoutKernel &k) {
  const DType t = k.output.dtype;
  if (t != DType::F32 && t != DType::F64 && t != DType::BF16 && t != DType::F16)
    return std::string("an accumulating data movement of ") + spelling(t);
  if (!k.hasInput) return "an accumulating fill";
  k.accumulate = true; // what lies outside a window (pad, shard_slice) is 0: nothing added
  return "";
}

namespace {

/// A gather whose result is rows of elements that are contiguous in the
/// operand too: each result row [r * width, (r + 1) * width) reads the
/// operand from rowBase(r), one element after another, except outside the
/// window [lo, hi) of the last dim (a pad's), which is the fill.
struct RowCopy {
  Shape dims;                  // the result's dims, merged where the operand is contiguous across them
  std::vector<int64_t> strides; // the operand's stride of each
  int64_t width = 0;            // the last merged dim: one row
  bool window = false;
};

/// The rows of `k`, or nothing: the result's dims merged where the
/// operand's strides run on from one to the next (a reshape is one row, a
/// slice or a head split rows of the last dim), with the last one of
/// stride 1; a window only on the last dim, unshifted.
std::optional<RowCopy> rowCopyOf(const LayoutKernel &k) {
  if (!k.hasInput || k.stageOperands > 0 || !k.shift.empty() || k.output.shape.empty()) return std::nullopt;
  const Shape &out = k.output.shape;
  const int last = int(out.size()) - 1;
  if (k.window >= 0 && k.window != last) return std::nullopt;
  RowCopy c;
  c.window = k.window >= 0;
  for (size_t d = 0; d < out.size(); ++d) {
    const bool windowDim = int(d) == k.window;
    if (out[d] == 1 && !windowDim) continue;
    // The previous dim and this one are one dim of the operand when its
    // stride is this one's times this one's size (never across the window).
    if (!c.dims.empty() && !windowDim && !(c.window && int(d) == last) &&
        c.strides.back() == k.strides[d] * out[d]) {
      c.dims.back() *= out[d];
      c.strides.back() = k.strides[d];
      continue;
    }
    c.dims.push_back(out[d]);
    c.strides.push_back(k.strides[d]);
  }
  if (c.dims.empty() || c.strides.back() != 1) return std::nullopt;
  c.width = c.dims.back();
  return c;
}

/// Renders `k` as rows (rowCopyOf): a parallel loop over the rows, each a
/// contiguous copy the compiler vectorises (or, accumulating in f32 or
/// f64, a sum). CPU flavour only.
void renderRowCopy(const LayoutKernel &k, const RowCopy &c, const char *type, llvm::raw_ostream &os) {
  os << "  const int64_t width = " << c.width << ", rows = n / width; // contiguous rows of the operand\n";
  os << "#pragma omp parallel for schedule(static) if (rows * width > 16384)\n"
     << "  for (int64_t r = 0; r < rows; ++r) {\n";
  // The operand's offset of row r: its coordinates in the merged dims
  // before the last, each times its stride.
  std::string offset = k.base ? std::to_string(k.base) : "";
  int64_t inner = 1;
  for (size_t d = c.dims.size() - 1; d-- > 0;) {
    std::string coord = inner == 1 ? "r" : "(r / " + std::to_string(inner) + ")";
    if (d > 0) coord = "(" + coord + " % " + std::to_string(c.dims[d]) + ")";
    inner *= c.dims[d];
    if (c.strides[d] == 0) continue;
    offset += (offset.empty() ? "" : " + ") + coord + (c.strides[d] == 1 ? "" : " * " + std::to_string(c.strides[d]));
  }
  if (offset.empty()) offset = "0";
  os << "    const " << type << " *from = in + (" << offset << ");\n";
  os << "    " << type << " *to = out + r * width;\n";
  const std::string fill = std::string(type) + "(" + std::to_string(k.fillBits) + "u)";
  auto copy = [&](const std::string &lo, const std::string &hi) {
    os << "#pragma omp simd\n    for (int64_t j = " << lo << "; j < " << hi << "; ++j) to[j] "
       << (k.accumulate ? "+= " : "= ") << "from[j];\n";
  };
  if (!c.window) {
    copy("0", "width");
  } else {
    // A pad: zeros before and after the operand's columns [lo, hi).
    if (!k.accumulate) {
      os << "    for (int64_t j = 0; j < " << k.lo << "; ++j) to[j] = " << fill << ";\n";
      os << "    for (int64_t j = " << k.hi << "; j < width; ++j) to[j] = " << fill << ";\n";
    }
    copy(std::to_string(k.lo), std::to_string(k.hi));
  }
  os << "  }\n";
}

} // namespace

void backend::renderLayoutKernel(const LayoutKernel &k, const CLanguage &lang, llvm::raw_ostream &os) {
  // Moved as bits, or, added to the result, as values of the dtype.
  const char *type = k.accumulate ? storageType(k.output.dtype) : bitsType(k.output.dtype);
  const int64_t n = product(k.output.shape);
  os << "// kernel " << k.name << ": " << spelling(k.kind) << ", data movement"
     << (k.accumulate ? ", accumulating" : "") << "\n";
  if (!k.comment.empty()) os << "// " << cComment(k.comment) << "\n";
  os << lang.kernelQualifier << "void " << k.name << "(";
  for (int j = 0; j < k.stageOperands; ++j) os << "const void *in" << j << "_, ";
  if (k.hasInput && k.stageOperands == 0) os << "const void *in_, ";
  os << "void *out_) {\n";
  if (k.stageOperands > 0) {
    os << "  // The operand of the rank's pipeline stage; the others are made on other stages (null here).\n"
       << "  const void *const operands[" << k.stageOperands << "] = {";
    for (int j = 0; j < k.stageOperands; ++j) os << (j ? ", " : "") << "in" << j << "_";
    os << "};\n  const " << type << " *in = (const " << type << " *)operands[" << meshCoord(MeshAxis::PP) << "]; // "
       << shapeComment(k.input) << "\n";
  } else if (k.hasInput) {
    os << "  const " << type << " *in = (const " << type << " *)in_; // " << shapeComment(k.input) << "\n";
  }
  os << "  " << type << " *out = (" << type << " *)out_; // " << shapeComment(k.output) << "\n";
  os << "  const int64_t n = " << n << ";\n";
  if (!k.shift.empty())
    os << "  const int64_t shift = " << k.shift << "; // where the rank's rows start in the operand's block\n";
  // Rows of contiguous elements are copied row by row (vectorised), not an
  // index computed per element. Accumulating only in f32 and f64, whose
  // storage type is the value's.
  if (lang.loops() && (!k.accumulate || k.output.dtype == DType::F32 || k.output.dtype == DType::F64))
    if (std::optional<RowCopy> c = rowCopyOf(k)) {
      renderRowCopy(k, *c, type, os);
      os << "}\n\n";
      return;
    }
  const std::string indent = openIndexLoop(lang, "i", "n", /*simd=*/true, os);
  const std::string fill = std::to_string(k.fillBits) + "u";
  // The value written: the moved element (or the fill outside a window),
  // added to the result's when accumulating.
  auto write = [&](const std::string &offset, const std::string &inside) {
    if (!k.accumulate) {
      std::string moved = "in[" + offset + "]";
      os << indent << "out[i] = " << (inside.empty() ? moved : inside + " ? " + moved + " : " + type + "(" + fill + ")")
         << ";\n";
      return;
    }
    const std::string zero = k.output.dtype == DType::F64 ? "0.0" : "0.0f";
    std::string moved = loadElement(k.output.dtype, "in", offset);
    if (!inside.empty()) moved = "(" + inside + " ? " + moved + " : " + zero + ")";
    os << indent << "out[i] = " << storedValue(k.output.dtype, loadElement(k.output.dtype, "out", "i") + " + " + moved)
       << ";\n";
  };
  if (!k.hasInput) {
    os << indent << "out[i] = " << type << "(" << fill << ");\n";
  } else {
    // The coordinates of i, each times its input stride; a shifted window
    // dim reads its coordinate plus the shift.
    const Shape &out = k.output.shape;
    std::vector<int64_t> outStride = rowMajorStrides(out);
    std::string offset = k.base ? std::to_string(k.base) : "";
    std::string windowCoord;
    for (size_t d = 0; d < out.size(); ++d) {
      std::string c = "i";
      if (outStride[d] != 1) c = "(" + c + " / " + std::to_string(outStride[d]) + ")";
      if (d > 0) c = "(" + c + " % " + std::to_string(out[d]) + ")";
      if (int(d) == k.window) {
        windowCoord = c;
        if (!k.shift.empty()) c = "c";
      }
      if (k.strides[d] == 0) continue;
      std::string term = k.strides[d] == 1 ? c : c + " * " + std::to_string(k.strides[d]);
      offset += (offset.empty() ? "" : " + ") + term;
    }
    if (offset.empty()) offset = "0";
    if (k.window >= 0) {
      os << indent << "const int64_t c = " << windowCoord << (k.shift.empty() ? "" : " + shift") << ";\n";
      write(offset, "c >= " + std::to_string(k.lo) + " && c < " + std::to_string(k.hi));
    } else {
      write(offset, "");
    }
  }
  closeIndexLoop(lang, os);
  os << "}\n\n";
}
