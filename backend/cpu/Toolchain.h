//===- backend/cpu/Toolchain.h - C++ into an executable ---------*- C++ -*-===//
//
// The system C++ compiler as the CPU target uses it: -O3 (or -O<n>)
// -fopenmp -fno-math-errno (-march=native unless portable), linked with the
// planc runtime, OpenBLAS and MPI as this planc was configured with them.
// The output is written whole or not at all: the compiler writes beside it
// and the file is renamed into place.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_CPU_TOOLCHAIN_H
#define PLANC_BACKEND_CPU_TOOLCHAIN_H

#include "backend/Target.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace planc::cpu {

/// Compiles C++ `source` that uses the runtime into the executable
/// options.output (through a temporary name, renamed into place).
/// Errors name `sourceName` and carry the compiler's last output.
llvm::Error compileCppProgram(const std::string &source, const std::string &sourceName,
                              const backend::ToolchainOptions &options, llvm::raw_ostream &log);

} // namespace planc::cpu

#endif
