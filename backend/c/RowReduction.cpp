//===- backend/c/RowReduction.cpp - reductions as row kernels --------------===//

#include "backend/c/RowReduction.h"

#include "ir/OpDef.h"
#include "ir/ShapeMath.h"

#include <algorithm>
#include <cmath>

using namespace planc;
using namespace planc::backend;
using namespace planc::ir;

std::string backend::makeRowKernel(OpKind kind, const AttrMap &attrs, const std::vector<KernelBuffer> &inputs,
                                   const KernelBuffer &output, RowKernel &k) {
  k = RowKernel();
  const ir::RowReductionRule rule = kind < OpKind::NumOps ? opDef(kind).kernel.rowReduction : nullptr;
  if (!rule) return "not a row reduction";
  k.kind = kind;
  k.inputs = inputs;
  k.out = output;
  for (const KernelBuffer &b : inputs)
    if (b.dtype != DType::F32 && b.dtype != DType::BF16 && b.dtype != DType::F16)
      return std::string("dtype ") + spelling(b.dtype) + " has no generated row kernel yet";
  if (output.dtype != DType::F32 && output.dtype != DType::BF16 && output.dtype != DType::F16)
    return std::string("dtype ") + spelling(output.dtype) + " has no generated row kernel yet";
  std::vector<Shape> shapes;
  for (const KernelBuffer &b : inputs) shapes.push_back(b.shape);
  return rule(attrs, shapes, output.shape, k); // the op's stages and output (ir/KernelDesc.h)
}

void backend::renderRowKernel(const RowKernel &k, const CLanguage &lang, llvm::raw_ostream &os) {
  auto storage = [](DType t) { return t == DType::F32 ? "float" : "uint16_t"; };
  auto load = [&](size_t input, const std::string &at) {
    std::string e = "in" + std::to_string(input) + "[" + at + "]";
    DType t = k.inputs[input].dtype;
    if (t == DType::BF16) return "planc_bf16_to_f32(" + e + ")";
    if (t == DType::F16) return "planc_f16_to_f32(" + e + ")";
    return e;
  };
  auto outLoad = [&](const std::string &at) {
    if (k.out.dtype == DType::BF16) return "planc_bf16_to_f32(" + at + ")";
    if (k.out.dtype == DType::F16) return "planc_f16_to_f32(" + at + ")";
    return at;
  };
  auto store = [&](const std::string &v) {
    if (k.out.dtype == DType::BF16) return "planc_f32_to_bf16(" + v + ")";
    if (k.out.dtype == DType::F16) return "planc_f32_to_f16(" + v + ")";
    return v;
  };
  os << "// kernel " << k.name << ": " << spelling(k.kind) << ", reduction over rows of " << k.length << "\n";
  if (!k.comment.empty()) os << "// " << cComment(k.comment) << "\n";
  os << lang.kernelQualifier << "void " << k.name << "(";
  const bool folded = k.prologue != nullptr;
  for (size_t j = 0; j < k.inputs.size(); ++j) os << (folded && j == 0 ? "void *in" : "const void *in") << j << "_, ";
  for (size_t j = 0; j < k.prologueInputs.size(); ++j) os << "const void *p" << j << "_, ";
  os << "void *out_) {\n";
  for (size_t j = 0; j < k.inputs.size(); ++j)
    os << "  " << (folded && j == 0 ? "" : "const ") << storage(k.inputs[j].dtype) << " *in" << j << " = ("
       << (folded && j == 0 ? "" : "const ") << storage(k.inputs[j].dtype) << " *)in" << j << "_; // "
       << shapeComment(k.inputs[j]) << (folded && j == 0 ? ", written by the first pass" : "") << "\n";
  for (size_t j = 0; j < k.prologueInputs.size(); ++j)
    os << "  const " << storageType(k.prologueInputs[j].dtype) << " *p" << j << " = (const "
       << storageType(k.prologueInputs[j].dtype) << " *)p" << j << "_; // " << shapeComment(k.prologueInputs[j])
       << "\n";
  os << "  " << storage(k.out.dtype) << " *out = (" << storage(k.out.dtype) << " *)out_; // " << shapeComment(k.out)
     << "\n";
  os << "  const int64_t rows = " << k.rows << ", length = " << k.length << ";\n";
  const std::string in1 = openIndexLoop(lang, "r", "rows", /*simd=*/false, os), in2 = in1 + "  ";
  // The operands at j, then the stage values so far.
  auto operands = [&](size_t stages) {
    std::vector<std::string> xs;
    for (size_t i = 0; i < k.inputs.size(); ++i) xs.push_back(load(i, k.perColumn[i] ? "j" : "r * length + j"));
    for (size_t s = 0; s < stages; ++s) xs.push_back("float(s" + std::to_string(s) + ")");
    return xs;
  };
  // The folded step: operand 0's element computed from the prologue's
  // operands (in a block of its own: its nodes' names are the stage's) and
  // written, in the first pass; the later passes read it back.
  auto prologue = [&]() {
    os << in2 << "float x0;\n" << in2 << "{\n";
    std::vector<std::string> ps;
    for (size_t j = 0; j < k.prologueInputs.size(); ++j) {
      // A row's worth (a bias) is read at the column, anything else at the element.
      const bool perColumn = k.prologueInputs[j].shape == Shape{k.length} && k.prologueInputs[j].shape != k.inputs[0].shape;
      ps.push_back(loadElement(k.prologueInputs[j].dtype, "p" + std::to_string(j), perColumn ? "j" : "r * length + j"));
    }
    std::string t = renderFormula(*k.prologue, {}, ps, false, in2 + "  ", os);
    os << in2 << "  x0 = " << t << ";\n" << in2 << "}\n" << in2 << "in0[r * length + j] = x0;\n";
  };
  for (size_t s = 0; s < k.stages.size(); ++s) {
    const RowStage &st = k.stages[s];
    const std::string v = "s" + std::to_string(s);
    os << in1 << "double " << v << " = " << (st.combiner == Combiner::Max ? "-(double)INFINITY" : "0") << ";\n";
    // Vectorised: the row's f64 sum in lanes, then added up (another
    // association than the interpreter's, in f64: far below f32's ulp).
    if (lang.loops())
      os << lang.vectorLoop << " reduction(" << (st.combiner == Combiner::Max ? "max" : "+") << " : " << v << ")\n";
    os << in1 << "for (int64_t j = 0; j < length; ++j) {\n";
    std::vector<std::string> xs = operands(s);
    if (folded && s == 0) {
      prologue();
      xs[0] = "x0";
    }
    std::string t = renderFormula(st.value, {}, xs, false, in2, os);
    if (st.combiner == Combiner::Max) os << in2 << v << " = " << v << " < " << t << " ? double(" << t << ") : " << v << ";\n";
    else os << in2 << v << " += " << t << ";\n";
    os << in1 << "}\n";
  }
  if (k.outputPerElement) {
    if (lang.loops()) os << lang.vectorLoop << "\n";
    os << in1 << "for (int64_t j = 0; j < length; ++j) {\n";
    std::string t = renderFormula(k.output, {}, operands(k.stages.size()), false, in2, os);
    std::string at = "out[r * length + j]";
    std::string v = k.accumulate ? outLoad(at) + " + " + t : t;
    os << in2 << at << " = " << store(v) << ";\n" << in1 << "}\n";
  } else {
    std::vector<std::string> xs(k.inputs.size(), "0.0f");
    for (size_t s = 0; s < k.stages.size(); ++s) xs.push_back("float(s" + std::to_string(s) + ")");
    os << in1 << "{\n";
    std::string t = renderFormula(k.output, {}, xs, false, in2, os);
    os << in2 << "out[r] = " << store(k.accumulate ? outLoad("out[r]") + " + " + t : t) << ";\n" << in1 << "}\n";
  }
  closeIndexLoop(lang, os);
  os << "}\n\n";
}

std::string backend::makeSumToKernel(OpKind kind, const AttrMap &attrs, const KernelBuffer &input,
                                     const KernelBuffer &output, SumToKernel &k) {
  k = SumToKernel();
  k.kind = kind;
  k.input = input;
  k.output = output;
  if (input.dtype != output.dtype) return "changes the dtype";
  if (input.dtype != DType::F32 && input.dtype != DType::BF16 && input.dtype != DType::F16 && input.dtype != DType::F64)
    return std::string("dtype ") + spelling(input.dtype) + " has no generated sum yet";
  const size_t rank = input.shape.size();
  const ir::SumDimsRule rule = kind < OpKind::NumOps ? opDef(kind).kernel.sumDims : nullptr;
  if (!rule) return "not a sum";
  if (std::string why = rule(attrs, input.shape, output.shape, k.aligned); !why.empty()) return why;
  for (size_t d = 0; d < rank; ++d)
    if (k.aligned[d] != 1 && k.aligned[d] != input.shape[d]) return "a result that is not a sum over broadcast dims";
  return "";
}

void backend::renderSumToKernel(const SumToKernel &k, const CLanguage &lang, llvm::raw_ostream &os) {
  const bool f64 = k.output.dtype == DType::F64;
  const char *type = f64 ? "double" : k.output.dtype == DType::F32 ? "float" : "uint16_t";
  auto load = [&](const std::string &at) {
    if (k.input.dtype == DType::BF16) return "planc_bf16_to_f32(" + at + ")";
    if (k.input.dtype == DType::F16) return "planc_f16_to_f32(" + at + ")";
    return at;
  };
  auto store = [&](const std::string &v) {
    if (k.output.dtype == DType::BF16) return "planc_f32_to_bf16(float(" + v + "))";
    if (k.output.dtype == DType::F16) return "planc_f32_to_f16(float(" + v + "))";
    return std::string(f64 ? "" : "float(") + v + (f64 ? "" : ")");
  };
  // Accumulating: the sum rounded to the result's type, then added to what
  // the buffer holds and rounded again, as the interpreter accumulates.
  auto result = [&](const std::string &at, const std::string &sum) {
    if (!k.accumulate) return store(sum);
    if (f64) return at + " + " + sum;
    return store(load(at) + " + float(" + sum + ")");
  };
  const Shape &x = k.input.shape;
  const size_t rank = x.size();
  const std::vector<int64_t> xStride = rowMajorStrides(x);
  // The result's coordinates (dims it keeps) and the reduced ones, each
  // enumerated row-major.
  std::vector<size_t> kept, reduced;
  for (size_t d = 0; d < rank; ++d) (k.aligned[d] == x[d] ? kept : reduced).push_back(d);
  auto offsetOf = [&](const std::vector<size_t> &dims, const std::string &index) {
    std::string e;
    int64_t inner = 1;
    for (size_t j = dims.size(); j-- > 0;) {
      size_t d = dims[j];
      std::string c = index;
      if (inner != 1) c = "(" + c + " / " + std::to_string(inner) + ")";
      if (j > 0) c = "(" + c + " % " + std::to_string(x[d]) + ")";
      if (x[d] != 1) e = c + (xStride[d] != 1 ? " * " + std::to_string(xStride[d]) : "") + (e.empty() ? "" : " + " + e);
      inner *= x[d];
    }
    return e.empty() ? std::string("0") : e;
  };
  int64_t n = 1, m = 1;
  for (size_t d : kept) n *= x[d];
  for (size_t d : reduced) m *= x[d];
  os << "// kernel " << k.name << ": " << spelling(k.kind) << ", a sum of " << m << " elements each\n";
  if (!k.comment.empty()) os << "// " << cComment(k.comment) << "\n";
  os << lang.kernelQualifier << "void " << k.name
     << "(const void *in_, void *out_) {\n";
  os << "  const " << type << " *in = (const " << type << " *)in_; // " << shapeComment(k.input) << "\n";
  os << "  " << type << " *out = (" << type << " *)out_; // " << shapeComment(k.output) << "\n";
  os << "  const int64_t n = " << n << ", m = " << m << ";\n";
  // The kept dims trailing (a bias's gradient: [batch, seq, h] to [h]): the
  // operand is m rows of n. Each thread sums a block of 64 columns row by
  // row, the rows' elements read contiguously (vectorised), every column's
  // sum in f64 in row order as below: the same result.
  bool trailing = !kept.empty() && kept.size() + reduced.size() == rank;
  for (size_t j = 0; j < kept.size(); ++j) trailing &= kept[j] == rank - kept.size() + j;
  if (lang.loops() && trailing && n > 1) {
    os << "#pragma omp parallel for schedule(static) if (n * m > 16384)\n"
       << "  for (int64_t o0 = 0; o0 < n; o0 += 64) {\n"
       << "    const int64_t w = n - o0 < 64 ? n - o0 : 64;\n"
       << "    double s[64];\n"
       << "    for (int64_t j = 0; j < w; ++j) s[j] = 0;\n"
       << "    for (int64_t q = 0; q < m; ++q) {\n"
       << "      const " << type << " *row = in + q * n + o0;\n"
       << "#pragma omp simd\n"
       << "      for (int64_t j = 0; j < w; ++j) s[j] += " << load("row[j]") << ";\n"
       << "    }\n"
       << "    for (int64_t j = 0; j < w; ++j) out[o0 + j] = " << result("out[o0 + j]", "s[j]") << ";\n"
       << "  }\n}\n\n";
    return;
  }
  const std::string in1 = openIndexLoop(lang, "o", "n", /*simd=*/false, os);
  os << in1 << "const int64_t base = " << offsetOf(kept, "o") << ";\n";
  os << in1 << "double s = 0;\n";
  os << in1 << "for (int64_t q = 0; q < m; ++q) s += " << load("in[base + " + offsetOf(reduced, "q") + "]") << ";\n";
  os << in1 << "out[o] = " << result("out[o]", "s") << ";\n";
  closeIndexLoop(lang, os);
  os << "}\n\n";
}
