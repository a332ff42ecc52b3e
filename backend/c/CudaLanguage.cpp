//===- backend/c/CudaLanguage.cpp - CUDA's spellings of the C-family language ===//

#include "backend/c/CLanguage.h"

using namespace planc;
using namespace planc::backend;

const CLanguage &backend::cudaLanguage() {
  static const CLanguage language = [] {
    CLanguage l;
    l.name = "CUDA";
    l.kernelQualifier = "__global__ ";
    l.helperQualifier = "[[maybe_unused]] static __host__ __device__ inline";
    l.constantQualifier = "__constant__";
    l.constantNote = " // set with cudaMemcpyToSymbol";
    l.threadIndex = "int64_t(blockIdx.x) * blockDim.x + threadIdx.x";
    l.barrier = "__syncthreads();";
    l.noLibrary = "the CUDA library kernels come with the CUDA backend";
    l.noGemm = "the CUDA GEMM (cuBLASLt) comes with the CUDA backend";
    return l;
  }();
  return language;
}
