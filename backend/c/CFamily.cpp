//===- backend/c/CFamily.cpp - kernels as C-family source ------------------===//

#include "backend/c/CFamily.h"

#include "ir/OpDef.h"
#include "ir/Printer.h"
#include "ir/ShapeMath.h"
#include "support/Plural.h"

#include <cmath>
#include <cstdio>

using namespace planc;
using namespace planc::backend;
using namespace planc::ir;

namespace {

/// Results are stored in the float types; operands are read from those and
/// from the integers (a step count, token ids).
bool hasGeneratedStores(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16 || t == DType::F16;
}
bool hasGeneratedLoads(DType t) {
  return hasGeneratedStores(t) || t == DType::I32 || t == DType::I64 || t == DType::U8 || t == DType::U16 ||
         t == DType::U32;
}

} // namespace

const char *backend::storageType(DType t) {
  switch (t) {
  case DType::F64: return "double";
  case DType::BF16:
  case DType::F16: return "uint16_t";
  case DType::I32: return "int32_t";
  case DType::I64: return "int64_t";
  case DType::U8: return "uint8_t";
  case DType::U16: return "uint16_t";
  case DType::U32: return "uint32_t";
  default: return "float";
  }
}

std::string backend::loadElement(DType t, const std::string &ptr, const std::string &index) {
  std::string at = ptr + "[" + index + "]";
  switch (t) {
  case DType::BF16: return "planc_bf16_to_f32(" + at + ")";
  case DType::F16: return "planc_f16_to_f32(" + at + ")";
  case DType::F32:
  case DType::F64: return at;
  default: return "float(" + at + ")"; // an integer
  }
}

std::string backend::storedValue(DType t, const std::string &value) {
  switch (t) {
  case DType::BF16: return "planc_f32_to_bf16(" + value + ")";
  case DType::F16: return "planc_f32_to_f16(" + value + ")";
  default: return value;
  }
}

std::string backend::broadcastOffset(const Shape &operand, const Shape &out, const std::string &i) {
  if (operand == out) return i;
  if (product(operand) == 1) return "0";
  const size_t rank = out.size(), lead = rank - operand.size();
  const std::vector<int64_t> outStride = rowMajorStrides(out);
  std::vector<int64_t> stride(rank, 0);
  int64_t s = 1;
  for (size_t d = rank; d-- > lead;) {
    int64_t dim = operand[d - lead];
    stride[d] = dim == 1 ? 0 : s;
    s *= dim;
  }
  std::string e;
  for (size_t d = 0; d < rank; ++d) {
    if (stride[d] == 0) continue;
    std::string idx = i;
    if (outStride[d] != 1) idx = "(" + idx + " / " + std::to_string(outStride[d]) + ")";
    if (d > 0) idx = "(" + idx + " % " + std::to_string(out[d]) + ")";
    if (stride[d] != 1) idx += " * " + std::to_string(stride[d]);
    e += (e.empty() ? "" : " + ") + idx;
  }
  return e.empty() ? "0" : e;
}

namespace {


std::string fn(const char *f32, const char *f64, bool isF64) { return isF64 ? f64 : f32; }

} // namespace

std::string backend::openIndexLoop(const CLanguage &lang, llvm::StringRef index, llvm::StringRef count, bool simd,
                                   llvm::raw_ostream &os) {
  if (lang.threadIndex) {
    os << "  const int64_t " << index << " = " << lang.threadIndex << ";\n  if (" << index << " >= " << count
       << ") return;\n";
    return "  ";
  }
  os << lang.parallelFor << (simd ? lang.simd : "") << "schedule(static)\n  for (int64_t " << index
     << " = 0; " << index << " < " << count << "; ++" << index << ") {\n";
  return "    ";
}

void backend::closeIndexLoop(const CLanguage &lang, llvm::raw_ostream &os) {
  if (lang.loops()) os << "  }\n";
}

std::string backend::shapeComment(const KernelBuffer &b) { return spelling(b.dtype) + toString(b.shape); }

std::string backend::floatLiteral(double v, bool f64) {
  if (std::isnan(v)) return f64 ? "(double)NAN" : "NAN";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + (f64 ? "(double)INFINITY" : "INFINITY");
  char buf[64];
  if (f64) std::snprintf(buf, sizeof buf, "%a", v);
  else std::snprintf(buf, sizeof buf, "%af", double(float(v)));
  return buf;
}

std::string backend::cIdentifier(llvm::StringRef s) {
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      out += char(c);
    } else if (c == '_') {
      out += "__"; // so that "_x2E" from "." and a literal "_x2E" differ
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "_x%02X", c);
      out += buf;
    }
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out = "v" + out;
  return out;
}

std::string backend::cComment(llvm::StringRef s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else if (c == '/' && !out.empty() && out.back() == '*') {
      out += " /"; // never "*/"
    } else if (c == '*' && !out.empty() && out.back() == '/') {
      out += " *"; // never "/*" either
    } else if (c == '?' && !out.empty() && out.back() == '?') {
      out += " ?"; // no trigraph "??x"
    } else if (c == '\\') {
      out += "\\\\"; // a trailing backslash would splice the next line
    } else {
      out += char(c);
    }
  }
  return out;
}

std::string backend::renderFormula(const Formula &f, llvm::ArrayRef<double> attrValues,
                                   llvm::ArrayRef<std::string> inputs, bool f64, llvm::StringRef indent,
                                   llvm::raw_ostream &os, llvm::ArrayRef<bool> invariantInputs,
                                   llvm::raw_ostream *hoisted, llvm::StringRef hoistIndent) {
  const char *type = f64 ? "double" : "float";
  std::vector<const char *> names = f.attrs();
  auto attrOf = [&](const char *name) {
    for (size_t k = 0; k < names.size() && k < attrValues.size(); ++k)
      if (llvm::StringRef(names[k]) == name) return attrValues[k];
    return 0.0;
  };
  auto t = [](int node) { return "t" + std::to_string(node); };
  // Nodes of constants and attributes alone are folded here, in f64, as the
  // interpreter computes them and as frameworks compute hyperparameter
  // arithmetic (1 - beta1 is 0.1 rounded once, not 1.0f - 0.9f).
  std::vector<bool> folded(f.nodes.size(), false);
  std::vector<double> value(f.nodes.size(), 0.0);
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const FormulaNode &n = f.nodes[i];
    if (n.op == FormulaOp::Input) continue;
    if (n.op == FormulaOp::Const || n.op == FormulaOp::Attr) {
      folded[i] = true;
      value[i] = n.op == FormulaOp::Const ? n.value : attrOf(n.attr);
      continue;
    }
    bool all = true;
    for (int o : {n.a, n.b, n.c}) all &= o < 0 || folded[size_t(o)];
    if (!all) continue;
    folded[i] = true;
    value[i] = applyFormulaOp(n.op, n.a >= 0 ? value[size_t(n.a)] : 0, n.b >= 0 ? value[size_t(n.b)] : 0,
                              n.c >= 0 ? value[size_t(n.c)] : 0);
  }
  // Nodes of constants and operands read at one place for every element
  // (a learning rate, a step count) are the same in every iteration: with
  // somewhere to hoist them to, they are computed once before the loop
  // (Adam's bias corrections, powf(beta1, step), are not per element).
  std::vector<bool> invariant(f.nodes.size(), false);
  if (hoisted)
    for (size_t i = 0; i < f.nodes.size(); ++i) {
      const FormulaNode &n = f.nodes[i];
      if (n.op == FormulaOp::Input) {
        invariant[i] = size_t(n.index) < invariantInputs.size() && invariantInputs[size_t(n.index)];
        continue;
      }
      bool all = true;
      for (int o : {n.a, n.b, n.c}) all &= o < 0 || invariant[size_t(o)];
      invariant[i] = all;
    }
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const FormulaNode &n = f.nodes[i];
    std::string a = n.a >= 0 ? t(n.a) : "", b = n.b >= 0 ? t(n.b) : "", c = n.c >= 0 ? t(n.c) : "";
    std::string e;
    llvm::raw_ostream &out = invariant[i] ? *hoisted : os;
    const llvm::StringRef at = invariant[i] ? hoistIndent : indent;
    if (folded[i] && n.op != FormulaOp::Const && n.op != FormulaOp::Attr) {
      out << at << "const " << type << " " << t(int(i)) << " = " << floatLiteral(value[i], f64) << "; // "
         << spelling(n.op) << ", folded\n";
      continue;
    }
    switch (n.op) {
    case FormulaOp::Input: e = inputs[size_t(n.index)]; break;
    case FormulaOp::Const: e = floatLiteral(n.value, f64); break;
    case FormulaOp::Attr: e = floatLiteral(attrOf(n.attr), f64); break;
    case FormulaOp::Neg: e = "-" + a; break;
    // f32's exp and tanh: runtime/FastMath.h's, which vectorise (libm's do not).
    case FormulaOp::Exp: e = fn("planc_expf(", "exp(", f64) + a + ")"; break;
    case FormulaOp::Log: e = fn("logf(", "log(", f64) + a + ")"; break;
    case FormulaOp::Sqrt: e = fn("sqrtf(", "sqrt(", f64) + a + ")"; break;
    case FormulaOp::Tanh: e = fn("planc_tanhf(", "tanh(", f64) + a + ")"; break;
    case FormulaOp::Abs: e = fn("fabsf(", "fabs(", f64) + a + ")"; break;
    case FormulaOp::Add: e = a + " + " + b; break;
    case FormulaOp::Sub: e = a + " - " + b; break;
    case FormulaOp::Mul: e = a + " * " + b; break;
    case FormulaOp::Div: e = a + " / " + b; break;
    case FormulaOp::Pow: e = fn("powf(", "pow(", f64) + a + ", " + b + ")"; break;
    case FormulaOp::Less: e = std::string("(") + a + " < " + b + ") ? 1 : 0"; break;
    case FormulaOp::LessEq: e = std::string("(") + a + " <= " + b + ") ? 1 : 0"; break;
    case FormulaOp::Select: e = a + " != 0 ? " + b + " : " + c; break;
    }
    out << at << "const " << type << " " << t(int(i)) << " = " << e << ";";
    if (n.op != FormulaOp::Input && n.op != FormulaOp::Const) out << " // " << spelling(n.op);
    if (n.op == FormulaOp::Attr) out << " " << cComment(n.attr);
    out << "\n";
  }
  return t(f.result);
}

std::string backend::makeElementwiseKernel(OpKind kind, const AttrMap &attrs, const std::vector<KernelBuffer> &inputs,
                                           const KernelBuffer &output, ElementwiseKernel &k,
                                           const std::vector<KernelBuffer> &extraOutputs) {
  if (kind < OpKind::NumOps && opDef(kind).kernel.convertsOnly &&
      (inputs.size() != 1 || !isFloat(inputs[0].dtype) || !isFloat(output.dtype) || byteSize(output.dtype) < 2 ||
       byteSize(inputs[0].dtype) < 2))
    return "a cast outside f64, f32, bf16 and f16";
  KernelFormula kf = kernelFormulaOf(kind, attrs);
  if (!kf.formula) return kf.error;
  const Formula *f = kf.formula.get();
  if (inputs.size() != f->inputs) return "takes " + counted(int64_t(f->inputs), "operand");
  if (extraOutputs.size() + 1 != f->results.size()) return "gives " + counted(int64_t(f->results.size()), "result");
  for (const KernelBuffer &b : extraOutputs) {
    if (!hasGeneratedStores(b.dtype)) return std::string("dtype ") + spelling(b.dtype) + " has no generated stores yet";
    if (b.shape != output.shape) return "results of different shapes";
  }
  for (const KernelBuffer &b : inputs)
    if (!hasGeneratedLoads(b.dtype)) return std::string("dtype ") + spelling(b.dtype) + " has no generated loads yet";
  if (!hasGeneratedStores(output.dtype))
    return std::string("dtype ") + spelling(output.dtype) + " has no generated stores yet";
  for (const KernelBuffer &b : inputs)
    if (b.shape.size() > output.shape.size()) return "an operand of higher rank than the result";
  k.kind = kind;
  k.formula = f;
  k.ownedFormula = kf.formula;
  k.attrValues = std::move(kf.attrValues);
  k.inputs = inputs;
  k.output = output;
  k.extraOutputs = extraOutputs;
  return "";
}

void backend::renderPrelude(const CLanguage &lang, llvm::raw_ostream &os) {
  const char *fnq = lang.helperQualifier;
  os << "#include <cmath>\n#include <cstdint>\n#include <cstring>\n\n#include \"runtime/FastMath.h\"\n\n";
  os << "// 16-bit floats: bfloat16 and IEEE half from and to f32, round to nearest even.\n";
  os << fnq << " float planc_bf16_to_f32(uint16_t h) {\n"
     << "  uint32_t u = uint32_t(h) << 16;\n  float f;\n  memcpy(&f, &u, 4);\n  return f;\n}\n";
  os << fnq << " uint16_t planc_f32_to_bf16(float f) {\n"
     << "  uint32_t u;\n  memcpy(&u, &f, 4);\n"
     << "  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u); // NaN stays a (quiet) NaN\n"
     << "  u += 0x7fffu + ((u >> 16) & 1u);\n  return uint16_t(u >> 16);\n}\n";
  os << fnq << " float planc_f16_to_f32(uint16_t h) {\n"
     << "  uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;\n"
     << "  if (e == 0) {\n"
     << "    float f = ldexpf(float(m), -24); // zero or subnormal\n"
     << "    return sign ? -f : f;\n"
     << "  }\n"
     << "  u = e == 31 ? (sign | 0x7f800000u | (m << 13)) : (sign | ((e + 112u) << 23) | (m << 13));\n"
     << "  float f;\n  memcpy(&f, &u, 4);\n  return f;\n}\n";
  os << fnq << " uint16_t planc_f32_to_f16(float f) {\n"
     << "  uint32_t u;\n  memcpy(&u, &f, 4);\n"
     << "  uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;\n"
     << "  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u); // NaN\n"
     << "  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u); // 65520 and up round to infinity\n"
     << "  if (a < 0x38800000u) { // below 2^-14: a multiple of 2^-24\n"
     << "    float af;\n    memcpy(&af, &a, 4);\n"
     << "    float scaled = af * 16777216.0f;\n"
     << "    uint32_t m = uint32_t(scaled);\n    float rest = scaled - float(m);\n"
     << "    if (rest > 0.5f || (rest == 0.5f && (m & 1u))) ++m;\n"
     << "    return uint16_t(sign | m);\n  }\n"
     << "  uint32_t h = (((a >> 23) - 112u) << 10) | ((a >> 13) & 0x3ffu), rest = a & 0x1fffu;\n"
     << "  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h; // a carry moves into the exponent\n"
     << "  return uint16_t(sign | h);\n}\n\n";
}

void backend::renderElementwiseKernel(const ElementwiseKernel &k, const CLanguage &lang, llvm::raw_ostream &os) {
  const bool f64 = k.output.dtype == DType::F64;
  const int64_t n = product(k.output.shape);
  os << "// kernel " << k.name << ": " << spelling(k.kind) << ", elementwise";
  if (k.accumulate) os << ", accumulating";
  os << "\n";
  if (!k.comment.empty()) os << "// " << cComment(k.comment) << "\n";
  os << lang.kernelQualifier << "void " << k.name << "(";
  for (size_t j = 0; j < k.inputs.size(); ++j) os << "const void *in" << j << "_, ";
  os << "void *out_";
  for (size_t r = 0; r < k.extraOutputs.size(); ++r) os << ", void *out" << r + 1 << "_";
  os << ") {\n";
  for (size_t j = 0; j < k.inputs.size(); ++j)
    os << "  const " << storageType(k.inputs[j].dtype) << " *in" << j << " = (const "
       << storageType(k.inputs[j].dtype) << " *)in" << j << "_; // " << shapeComment(k.inputs[j]) << "\n";
  os << "  " << storageType(k.output.dtype) << " *out = (" << storageType(k.output.dtype) << " *)out_; // "
     << shapeComment(k.output) << "\n";
  for (size_t r = 0; r < k.extraOutputs.size(); ++r)
    os << "  " << storageType(k.extraOutputs[r].dtype) << " *out" << r + 1 << " = ("
       << storageType(k.extraOutputs[r].dtype) << " *)out" << r + 1 << "_; // " << shapeComment(k.extraOutputs[r])
       << "\n";
  os << "  const int64_t n = " << n << ";\n";
  std::vector<std::string> inputs;
  llvm::SmallVector<bool, 8> invariant; // one element for all: read once, before the loop
  for (size_t j = 0; j < k.inputs.size(); ++j) {
    const bool once = product(k.inputs[j].shape) == 1;
    std::string x = loadElement(k.inputs[j].dtype, "in" + std::to_string(j),
                         once ? "0" : broadcastOffset(k.inputs[j].shape, k.output.shape, "i"));
    if (f64 && k.inputs[j].dtype != DType::F64) x = "double(" + x + ")";
    if (!f64 && k.inputs[j].dtype == DType::F64) x = "float(" + x + ")";
    inputs.push_back(x);
    invariant.push_back(once);
  }
  std::string body, before, opener;
  llvm::raw_string_ostream bodyOs(body), beforeOs(before), openerOs(opener);
  const std::string indent = openIndexLoop(lang, "i", "n", /*simd=*/true, openerOs);
  std::string result = renderFormula(*k.formula, k.attrValues, inputs, f64, indent, bodyOs, invariant, &beforeOs, "  ");
  bodyOs.flush();
  beforeOs.flush();
  openerOs.flush();
  os << before << opener << body;
  if (k.accumulate) result = loadElement(k.output.dtype, "out", "i") + " + " + result;
  os << indent << "out[i] = " << storedValue(k.output.dtype, result) << ";\n";
  // Every operand was read above, so a result written in place of an
  // operand (an update's parameter) is safe.
  for (size_t r = 0; r < k.extraOutputs.size(); ++r)
    os << indent << "out" << r + 1 << "[i] = "
       << storedValue(k.extraOutputs[r].dtype, "t" + std::to_string(k.formula->results[r + 1])) << ";\n";
  closeIndexLoop(lang, os);
  os << "}\n\n";
}
