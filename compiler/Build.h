//===- compiler/Build.h - `planc build`: a plan as a native executable -*- C++ -*-===//
//
// From a checked plan to an executable that trains it:
//
//   compile (CodeGenerated)   once: every rank's steps and buffers (--dtype as
//                             for `planc run`), the settings the program
//                             carries (the batch shape and the FLOPs read on
//                             the way) and the target's code
//                             (compiler/Pipeline.h, backend/Target.h)
//   Target::build             the CPU's: the system C++ compiler, -O3 (or
//                             -O<n>) -fopenmp (-march=native unless
//                             portable), linked with the planc runtime and
//                             OpenBLAS (backend/cpu/Toolchain.h)
//
// The output is written whole or not at all: the compiler writes beside it
// and the file is renamed into place. The generated source is kept beside
// the output only when asked (keepSource).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_BUILD_H
#define PLANC_COMPILER_BUILD_H

#include "backend/Target.h"
#include "frontend/Frontend.h"
#include "ir/Type.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace planc {

struct BuildOptions : backend::ToolchainOptions {
  std::optional<ir::DType> floatType; // every float of the model; none: as the plan says
  backend::TargetKind target = backend::TargetKind::Cpu;
};

/// The generated code of the checked plan for `target` (`planc emit
/// --emit=cpp`), its banner naming `sourceName`.
llvm::Expected<std::string> generateSource(Compilation &c, backend::TargetKind target,
                                           std::optional<ir::DType> floatType, const std::string &sourceName);

/// Builds the executable; progress lines go to `log`. Errors: a target that
/// builds nothing, a step without a kernel, no C++ compiler, a compiler
/// failure (its last lines), an unwritable output.
llvm::Error buildExecutable(Compilation &c, const BuildOptions &options, llvm::raw_ostream &log);

} // namespace planc

#endif
