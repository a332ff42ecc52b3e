//===- backend/c/LibraryKernels.h - steps that call hand-written kernels -*- C++ -*-===//
//
// The library class of docs/kernels.md: ops whose kernel is written by hand
// rather than derived from a description (runtime/CpuKernels.h for the CPU):
// causal masks, rope, dropout, gather and scatter_add, concat and
// repeat_interleave, cross-entropy and its gradient, the gradient norm, the
// norms' backward (three results, two of them sums over rows), the
// learning-rate schedule and SGD. A step of this class gets a wrapper
// function of the same calling convention as every generated kernel
// (`const void *` inputs, then `void *` outputs) that fixes its shapes and
// attributes as constants and calls the library.
//
// Only the CPU flavour has the library today, and it takes f32 and f64
// buffers (integer index buffers of any width). A step outside that, or one
// that needs its rank's place in the mesh (a vocab-split table, the
// vocab-parallel cross-entropy), says why.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_C_LIBRARYKERNELS_H
#define PLANC_BACKEND_C_LIBRARYKERNELS_H

#include "backend/c/CFamily.h"
#include "exec/ExecutionPlan.h"

namespace planc::backend {

/// Whether `kind` has a hand-written kernel.
bool hasLibraryKernel(ir::OpKind kind);

/// What the translation unit needs before any library wrapper: the
/// library's include and the draw seed dropout reads
/// (`planc_draw_seed`, set by the step function).
void renderLibraryPrelude(Flavor flavor, llvm::raw_ostream &os);

/// The wrapper `name` of step `s` of `program`; "" when rendered, or why not.
std::string renderLibraryKernel(const exec::RankProgram &program, const exec::Step &s, const std::string &name,
                                const std::string &banner, Flavor flavor, llvm::raw_ostream &os);

} // namespace planc::backend

#endif
