//===- compiler/Build.h - `planc build`: a plan as a native executable -*- C++ -*-===//
//
// From a checked plan to an executable that trains it on the CPU:
//
//   compile (ForwardIR, Step)      the batch the model reads (its shape, vocabulary)
//   compile (TrainingStep, Step)   the model's FLOPs of one step, for MFU
//   compile (ExecutionPlanned)     every rank's steps and buffers (--dtype as
//                                  for `planc run`)
//   backend/cpu/CppEmitter.h       stage 0's program as one C++ file
//   the system C++ compiler        -O3 (or -O<n>) -fopenmp (-march=native unless
//                                  portable), linked with the planc runtime
//                                  and OpenBLAS
//
// The output is written whole or not at all: the compiler writes beside it
// and the file is renamed into place. The generated source is kept beside
// the output only when asked (BuildOptions::keepSource).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_BUILD_H
#define PLANC_COMPILER_BUILD_H

#include "frontend/Frontend.h"
#include "ir/Type.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace planc {

struct BuildOptions {
  std::string output;                   // the executable's path
  std::optional<ir::DType> floatType;   // every float of the model; none: as the plan says
  bool native = true;                   // -march=native (for this host)
  int optLevel = 3;                     // the C++ compiler's -O<n>, 0-3: lower builds faster (tests)
  bool keepSource = false;              // also write <output>.cpp
  std::string cxx;                      // the C++ compiler; empty: $CXX, else c++
  std::string runtimeInclude;           // the folder holding runtime/Executable.h; empty: this build's
  std::string runtimeLibrary;           // libplanc_runtime.a (libplanc_numerics.a beside it); empty: this build's
};

/// The generated C++ of the plan's first rank class (`planc emit --emit=cpp`).
llvm::Expected<std::string> generateCpuSource(Compilation &c, std::optional<ir::DType> floatType,
                                              const std::string &sourceName);

/// Builds the executable; progress lines go to `log`. Errors: a step
/// without a CPU kernel, no C++ compiler, a compiler failure (its last
/// lines), an unwritable output.
llvm::Error buildCpuExecutable(Compilation &c, const BuildOptions &options, llvm::raw_ostream &log);

/// Compiles C++ `source` that uses the runtime into the executable
/// options.output (through a temporary name, renamed into place), with the
/// system compiler, the runtime, OpenBLAS and MPI as `planc build` does.
/// Errors name `sourceName` and carry the compiler's last output.
llvm::Error compileCppProgram(const std::string &source, const std::string &sourceName, const BuildOptions &options,
                              llvm::raw_ostream &log);

} // namespace planc

#endif
