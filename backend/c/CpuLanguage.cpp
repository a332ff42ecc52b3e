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
    // Every family of runtime/kernels/cpu/: the prelude precedes the steps.
    l.libraryInclude = "#include \"runtime/kernels/cpu/Attention.h\"\n"
                       "#include \"runtime/kernels/cpu/CrossEntropy.h\"\n"
                       "#include \"runtime/kernels/cpu/Dropout.h\"\n"
                       "#include \"runtime/kernels/cpu/Indexing.h\"\n"
                       "#include \"runtime/kernels/cpu/Norms.h\"\n"
                       "#include \"runtime/kernels/cpu/Optimizer.h\"\n"
                       "#include \"runtime/kernels/cpu/Position.h\"";
    return l;
  }();
  return language;
}
