//===- backend/c/CLanguage.h - the C-family language a kernel is written in -*- C++ -*-===//
//
// What differs between the C++ of the CPU backend and the CUDA C++ of the
// GPU backend, as data (tinygrad's CStyleLanguage): the renderers of
// backend/c/ write every kernel from a kernel description and ask this for
// the spellings. CpuLanguage.cpp knows the CPU's, CudaLanguage.cpp CUDA's;
// no renderer tests which one it has.
//
// The rest is one language: the formulas' arithmetic and <cmath>'s f32
// functions (expf, tanhf), the storage types (float, double, uint16_t for
// the 16-bit floats) and the prelude's conversions are valid in both.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_C_CLANGUAGE_H
#define PLANC_BACKEND_C_CLANGUAGE_H

namespace planc::backend {

struct CLanguage {
  /// The name in a translation unit's banner: "CPU", "CUDA".
  const char *name = "";
  /// Before a kernel's `void`: a function of the translation unit the host
  /// calls, or a kernel the host launches.
  const char *kernelQualifier = "";
  /// Before a prelude helper's return type (called from host and kernels).
  const char *helperQualifier = "";
  /// Before a global of the translation unit the host sets once and the
  /// kernels read (the rank's mesh coordinates), and the note after it.
  const char *constantQualifier = "";
  const char *constantNote = "";

  /// Thread indexing. Where a kernel runs one thread per element: the
  /// expression of the thread's index. Null where one call loops over the
  /// elements on the host's threads: `parallelFor` opens that loop (with
  /// `simd` where its body vectorises), `vectorLoop` marks a thread's own
  /// loop over a row as one to vectorise.
  const char *threadIndex = nullptr;
  const char *parallelFor = "";
  const char *simd = "";
  const char *vectorLoop = "";
  /// Where the threads of one block wait for each other (for kernels whose
  /// threads share a row; none is rendered so yet).
  const char *barrier = "";

  /// The hand-written library kernels (runtime/kernels/cpu/) and the GEMM:
  /// the include the prelude needs, or why this language has none yet.
  const char *libraryInclude = nullptr;
  const char *noLibrary = nullptr;
  const char *noGemm = nullptr;

  /// Whether a kernel call loops over its elements itself, so that it may
  /// be written as loops of its own (rows copied or summed in blocks).
  bool loops() const { return threadIndex == nullptr; }
};

/// The C++ the CPU backend compiles: static functions with OpenMP loops.
const CLanguage &cpuLanguage();
/// CUDA C++: __global__ kernels of one thread per element.
const CLanguage &cudaLanguage();

} // namespace planc::backend

#endif
