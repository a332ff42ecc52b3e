//===- runtime/kernels/cpu/Common.h - what the CPU kernels share ----*- C++ -*-===//
//
// The conventions of the hand-written kernels of the CPU backend (the
// library class of docs/kernels.md), one header per family beside this one:
// Position.h (causal masks, rotary embeddings), Indexing.h (the embedding's
// gather and scatter, concatenation and repeat_interleave), Dropout.h
// (counter-based masks), Attention.h (fused attention and its gradient),
// CrossEntropy.h (and its vocab-parallel pieces), Norms.h (the gradient norm,
// the norms' backward with their weight gradients), Optimizer.h (the
// learning-rate schedule, SGD, loss scaling). Generated code (backend/c/
// LibraryKernels.h) includes them and calls the kernels through a small wrapper
// per step that fixes the shapes and attributes as constants; where a rank's
// block of a split value is not at a fixed place, the wrapper passes where it
// lies (a row offset, a BlockPlace) from the rank's mesh coordinates.
//
// Each kernel computes as the interpreter's reference kernel (ir/ops/) does:
// in f64 from the buffers' elements, rounded once to the result's type, the
// sums in the reference's order where the order changes the rounding (the
// weight gradients, the row statistics) -- except where f64 made the step slow
// and f32 is what every framework computes: cross-entropy and fused attention
// of f32 buffers compute in f32 (overloads, exp by runtime/FastMath.h, row sums
// in f64), and global_norm sums in parallel in f64, in another association. T
// is the float type of the buffers (float, double, or Bf16 and F16 below:
// 16-bit floats read and rounded through numerics/ElementBits.h, the
// interpreter's rounding); index buffers are any integer type. Results are
// written whole (`accumulate` adds them to what the buffer holds, as a step
// that sums micro-batches does).
//
// Errors (an index or target outside its range) are reported through
// kernelError() and the kernel returns; the executable stops after the step
// naming it (runtime/Executable.h; the channel is runtime/CpuKernels.cpp).
//
// Header-only but for that channel: every function is a template or inline,
// so a header adds no code to an executable that does not use it.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_KERNELS_CPU_COMMON_H
#define PLANC_RUNTIME_KERNELS_CPU_COMMON_H

#include "runtime/ElementBits.h"

#include <cstdint>
#include <string>

// Compiled without OpenMP (the runtime library itself, unit tests), the
// loops run on one thread.
#ifdef _OPENMP
#define PLANC_OMP(directive) _Pragma(#directive)
#else
#define PLANC_OMP(directive)
#endif

namespace planc::cpu {

/// Records the first error of a kernel in this step (thread-safe); the
/// executable reports it after the step and stops.
void kernelError(const std::string &message);
/// The error recorded since the last call, or "" (and clears it).
std::string takeKernelError();

/// A 16-bit float element: its bits, converted from and to f64 as the
/// interpreter rounds (to nearest even, once).
template <runtime::ElementType E> struct Float16 {
  uint16_t bits;
  Float16() = default;
  Float16(double v) : bits(uint16_t(runtime::encodeElement(E, v))) {}
  operator double() const { return runtime::decodeElement(E, bits); }
};
using Bf16 = Float16<runtime::ElementType::BF16>;
using F16 = Float16<runtime::ElementType::F16>;

/// Stores result v (f64) into element i, or adds it: the result rounded to
/// T first, as the interpreter rounds every op's result before a step that
/// accumulates adds it to the buffer (and rounds again).
template <typename T> inline void put(T *out, int64_t i, double v, bool accumulate) {
  out[i] = accumulate ? T(double(out[i]) + double(T(v))) : T(v);
}

} // namespace planc::cpu

#endif
