//===- backend/c/Gemm.cpp - matmul as a library GEMM call ------------------===//

#include "backend/c/Gemm.h"

#include "ir/ShapeMath.h"

using namespace planc;
using namespace planc::backend;
using namespace planc::ir;

std::string backend::makeGemmKernel(const AttrMap &attrs, const KernelBuffer &a, const KernelBuffer &b,
                                    const KernelBuffer &c, GemmKernel &g) {
  if (a.dtype != b.dtype || a.dtype != c.dtype) return "operands of different dtypes";
  if (a.dtype != DType::F32 && a.dtype != DType::F64 && a.dtype != DType::BF16 && a.dtype != DType::F16)
    return std::string("dtype ") + spelling(a.dtype) + " has no GEMM (f32, f64, bf16 and f16 only)";
  if (a.shape.size() < 2 || b.shape.size() < 2 || c.shape.size() < 2) return "an operand of rank below 2";
  auto flag = [&](const char *name) {
    auto it = attrs.find(name);
    return it != attrs.end() && std::holds_alternative<bool>(it->second) && std::get<bool>(it->second);
  };
  g.transposeA = flag("transpose_a");
  g.transposeB = flag("transpose_b");
  const size_t ra = a.shape.size(), rb = b.shape.size(), rc = c.shape.size();
  g.m = g.transposeA ? a.shape[ra - 1] : a.shape[ra - 2];
  g.k = g.transposeA ? a.shape[ra - 2] : a.shape[ra - 1];
  g.n = g.transposeB ? b.shape[rb - 2] : b.shape[rb - 1];
  if (c.shape[rc - 2] != g.m || c.shape[rc - 1] != g.n) return "a result of another shape than m x n";
  g.batch.assign(c.shape.begin(), c.shape.end() - 2);
  g.a = a;
  g.b = b;
  g.c = c;
  return "";
}

void backend::renderGemmPrelude(llvm::raw_ostream &os) { os << "#include <cblas.h>\n#include <vector>\n\n"; }

void backend::renderGemmKernel(const GemmKernel &g, llvm::raw_ostream &os) {
  const bool f64 = g.c.dtype == DType::F64;
  const char *type = f64 ? "double" : "float";
  // bf16 and f16: f32 copies of the operands, one f32 GEMM, the result
  // rounded once (to nearest even) into the 16-bit buffer.
  const bool half = g.c.dtype == DType::BF16 || g.c.dtype == DType::F16;
  const char *toF32 = g.c.dtype == DType::BF16 ? "planc_bf16_to_f32" : "planc_f16_to_f32";
  const char *fromF32 = g.c.dtype == DType::BF16 ? "planc_f32_to_bf16" : "planc_f32_to_f16";
  int64_t batches = 1;
  for (int64_t d : g.batch) batches *= d;
  os << "// kernel " << g.name << ": matmul, GEMM " << g.m << " x " << g.n << " x " << g.k;
  if (batches != 1) os << ", " << batches << " matrices";
  if (g.transposeA || g.transposeB)
    os << ", " << (g.transposeA ? "A^T" : "A") << " " << (g.transposeB ? "B^T" : "B");
  if (g.accumulate) os << ", accumulating";
  os << "\n";
  if (!g.comment.empty()) os << "// " << cComment(g.comment) << "\n";
  os << "[[maybe_unused]] static void " << g.name << "(const void *a_, const void *b_, void *c_) {\n";
  if (half) {
    os << "  const uint16_t *a16 = (const uint16_t *)a_; // " << shapeComment(g.a) << "\n";
    os << "  const uint16_t *b16 = (const uint16_t *)b_; // " << shapeComment(g.b) << "\n";
    os << "  uint16_t *c16 = (uint16_t *)c_; // " << shapeComment(g.c) << "\n";
    os << "  std::vector<float> a32(" << product(g.a.shape) << "), b32(" << product(g.b.shape) << "), c32("
       << product(g.c.shape) << ");\n";
    os << "  for (size_t i = 0; i < a32.size(); ++i) a32[i] = " << toF32 << "(a16[i]);\n";
    os << "  for (size_t i = 0; i < b32.size(); ++i) b32[i] = " << toF32 << "(b16[i]);\n";
    os << "  const float *a = a32.data(), *b = b32.data();\n  float *c = c32.data();\n";
  } else {
    os << "  const " << type << " *a = (const " << type << " *)a_; // " << shapeComment(g.a) << "\n";
    os << "  const " << type << " *b = (const " << type << " *)b_; // " << shapeComment(g.b) << "\n";
    os << "  " << type << " *c = (" << type << " *)c_; // " << shapeComment(g.c) << "\n";
  }
  // The 16-bit result adds to what its buffer holds after the rounding.
  const bool beta = g.accumulate && !half;
  auto close = [&] {
    if (half)
      os << "  for (size_t i = 0; i < c32.size(); ++i) c16[i] = " << fromF32 << "("
         << (g.accumulate ? std::string(toF32) + "(c16[i]) + " + toF32 + "(" + fromF32 + "(c32[i]))" : "c32[i]")
         << ");\n";
    os << "}\n\n";
  };
  // Batch offsets in whole matrices: the operand's batch dims broadcast to
  // the result's, times its matrix size.
  const int64_t aMatrix = g.m * g.k, bMatrix = g.k * g.n, cMatrix = g.m * g.n;
  Shape aBatch(g.a.shape.begin(), g.a.shape.end() - 2), bBatch(g.b.shape.begin(), g.b.shape.end() - 2);
  const int64_t lda = g.transposeA ? g.m : g.k, ldb = g.transposeB ? g.k : g.n;
  // A batch of row-major A matrices times one B is one GEMM of batches * m
  // rows (a linear layer on [b, s, h]): one large call instead of b small ones.
  if (batches > 1 && !g.transposeA && product(bBatch) == 1 && product(aBatch) == batches) {
    os << "  cblas_" << (f64 ? "d" : "s") << "gemm(CblasRowMajor, CblasNoTrans, "
       << (g.transposeB ? "CblasTrans" : "CblasNoTrans") << ", " << batches * g.m << ", " << g.n << ", " << g.k
       << ", " << floatLiteral(1.0, f64) << ", a, " << lda << ", b, " << ldb << ", "
       << floatLiteral(beta ? 1.0 : 0.0, f64) << ", c, " << g.n << "); // the batch folded into m\n";
    close();
    return;
  }
  os << "  for (int64_t q = 0; q < " << batches << "; ++q)\n";
  os << "    cblas_" << (f64 ? "d" : "s") << "gemm(CblasRowMajor, " << (g.transposeA ? "CblasTrans" : "CblasNoTrans")
     << ", " << (g.transposeB ? "CblasTrans" : "CblasNoTrans") << ", " << g.m << ", " << g.n << ", " << g.k << ", "
     << floatLiteral(1.0, f64) << ",\n";
  os << "                a + (" << broadcastOffset(aBatch, g.batch, "q") << ") * " << aMatrix << ", " << lda << ",\n";
  os << "                b + (" << broadcastOffset(bBatch, g.batch, "q") << ") * " << bMatrix << ", " << ldb << ",\n";
  os << "                " << floatLiteral(beta ? 1.0 : 0.0, f64) << ", c + q * " << cMatrix << ", " << g.n
     << ");\n";
  close();
}
