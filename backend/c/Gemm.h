//===- backend/c/Gemm.h - matmul as a library GEMM call -------*- C++ -*-===//
//
// The kernel description of the GEMM class: a matmul (ir/ops/MatMul.cpp:
// C = op(A) op(B) over broadcast batch dims, op a transpose or not) is one
// call of the platform's GEMM per batch matrix -- OpenBLAS's cblas_sgemm /
// cblas_dgemm on the CPU, cuBLASLt with the CUDA backend. The description
// keeps what both need: m, n, k, the transposes, leading dimensions and each
// batch matrix's offsets (broadcasting by constant strides, as elementwise
// kernels do), and whether C accumulates (beta = 1).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_C_GEMM_H
#define PLANC_BACKEND_C_GEMM_H

#include "backend/c/CFamily.h"

namespace planc::backend {

struct GemmKernel {
  std::string name;
  KernelBuffer a, b, c;
  bool transposeA = false, transposeB = false;
  int64_t m = 0, n = 0, k = 0;
  Shape batch;              // the result's batch dims
  bool accumulate = false;  // C += op(A) op(B)
  std::string comment;
};

/// The GEMM of a matmul with `attrs` on these buffers; "" and `g` filled, or
/// why there is none (a dtype the library has no GEMM for).
std::string makeGemmKernel(const ir::AttrMap &attrs, const KernelBuffer &a, const KernelBuffer &b,
                           const KernelBuffer &c, GemmKernel &g);

/// The CPU flavour: `g.name(const void *a, const void *b, void *c)` calling
/// cblas_?gemm once per batch matrix (the BLAS threads itself). Needs
/// <cblas.h>, which renderGemmPrelude includes.
void renderGemmKernel(const GemmKernel &g, llvm::raw_ostream &os);
void renderGemmPrelude(llvm::raw_ostream &os);

} // namespace planc::backend

#endif
