//===- backend/c/LibraryKernels.h - steps that call hand-written kernels -*- C++ -*-===//
//
// The library class of docs/kernels.md: ops whose kernel is written by hand
// rather than derived from a description (runtime/kernels/cpu/ for the CPU):
// causal masks, rope, dropout, gather and scatter_add, concat and
// repeat_interleave, cross-entropy and its gradient, the gradient norm, the
// norms' backward (three results, two of them sums over rows), the
// learning-rate schedule and SGD. A step of this class gets a wrapper
// function of the same calling convention as every generated kernel
// (`const void *` inputs, then `void *` outputs) that fixes its shapes and
// attributes as constants and calls the library. Which wrapper is the op's
// library signature (KernelDesc::library, ir/KernelDesc.h): one wrapper per
// signature, which ops may share (causal_mask and mask_grad, concat and
// repeat_interleave, ...), told apart by the signature's variant.
//
// Only the CPU flavour has the library today, and it takes f32, f64, bf16
// and f16 buffers (integer index buffers of any width, bool). A step
// outside that says why.
//
// Steps on a rank's block whose place in the global value matters read it
// from the rank's mesh coordinates (RankPlace.h): a vocab-split table's
// gather and scatter_add (the rank's first row), the vocab-parallel
// cross-entropy (vocab_ce_stats, vocab_ce_grad: the rank's first column),
// and dropout and fused attention's dropout on a split value (the mask's
// counters are global indices: a planc::cpu::BlockPlace).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_C_LIBRARYKERNELS_H
#define PLANC_BACKEND_C_LIBRARYKERNELS_H

#include "backend/c/CFamily.h"
#include "backend/c/RankPlace.h"
#include "exec/ExecutionPlan.h"

namespace planc::backend {

/// Whether `kind` has a hand-written kernel: a library signature with a
/// wrapper here.
bool hasLibraryKernel(ir::OpKind kind);

/// What the translation unit needs before any library wrapper: the
/// library's include and the draw seed dropout reads
/// (`planc_draw_seed`, set by the step function).
void renderLibraryPrelude(const CLanguage &lang, llvm::raw_ostream &os);

/// The wrapper `name` of step `s` of `program` in a plan of `mesh` (where a
/// rank's block lies); "" when rendered, or why not.
std::string renderLibraryKernel(const exec::RankProgram &program, const exec::Step &s, const std::string &name,
                                const std::string &banner, const CLanguage &lang, llvm::raw_ostream &os,
                                const MeshSizes &mesh = {1, 1, 1, 1, 1});

} // namespace planc::backend

#endif
