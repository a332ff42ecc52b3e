//===- compiler/CodeGen.h - compile()'s last stage ---------------*- C++ -*-===//
//
// CodeGenerated (compiler/Pipeline.h): the settings the target's program
// carries besides its execution plan, filled from the checked plan and the
// stages compile() ran (the batch shape, FLOPs and name map it read on the
// way), and the target's code (backend/Target.h).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_CODEGEN_H
#define PLANC_COMPILER_CODEGEN_H

#include "compiler/CompileOptions.h"
#include "frontend/Frontend.h"

#include "llvm/Support/Error.h"

namespace planc {

/// result.settings from the plan's `train` and `cluster` blocks and the
/// memory plan; for a target that emits code, the predicted step where the
/// plan's device is the CPU the program runs on (runtime/SlowStep.h).
llvm::Error fillProgramSettings(Compilation &c, const CompileOptions &options, CompileResult &result);

/// result.code: the target's program, for a target that emits code.
llvm::Error emitProgram(const CompileOptions &options, CompileResult &result);

} // namespace planc

#endif
