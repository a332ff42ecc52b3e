//===- backend/c/CpuLanguage.cpp - the CPU's spellings of the C-family language ===//

#include "backend/c/CLanguage.h"

using namespace planc;
using namespace planc::backend;

const CLanguage &backend::cpuLanguage() {
  static const CLanguage language = [] {
    CLanguage l;
    l.name = "CPU";
    l.kernelQualifier = "[[maybe_unused]] static ";
    l.helperQualifier = "[[maybe_unused]] static inline";
    l.constantQualifier = "[[maybe_unused]] static";
    l.constantNote = "";
    l.threadIndex = nullptr; // an OpenMP loop over the elements
    l.parallelFor = "#pragma omp parallel for ";
    l.simd = "simd ";
    l.vectorLoop = "#pragma omp simd";
    l.barrier = "#pragma omp barrier";
    l.libraryInclude = "#include \"runtime/CpuKernels.h\"";
    return l;
  }();
  return language;
}
