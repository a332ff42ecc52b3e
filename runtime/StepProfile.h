//===- runtime/StepProfile.h - what --profile sums per kernel class -*- C++ -*-===//
//
// The generated step wraps each kernel call in PLANC_CALL (backend/host/
// HostProgram.cpp), which calls kernelStart() before and kernelEnd() after
// it: two calls into this library, so that the step's text is the same
// short statement at every kernel (a step of thousands of kernels compiles
// in proportion to its calls, not to the clock code inlined into each).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_STEPPROFILE_H
#define PLANC_RUNTIME_STEPPROFILE_H

#include <cstdint>

namespace planc::runtime {

/// The kernel classes --profile sums time by (docs/kernels.md), in the order
/// of the generated program's enum (kCommunication, kElementwise, ...).
inline constexpr const char *kKernelClasses[] = {"communication", "elementwise", "gemm",
                                                 "layout",        "reduction",   "library"};
inline constexpr int kNumKernelClasses = 6;

/// The times the step adds to with --profile (null pointer: not profiling).
struct StepProfile {
  double seconds[kNumKernelClasses] = {};
  int64_t calls[kNumKernelClasses] = {};
};

/// The clock before a kernel call, in nanoseconds; 0 when not profiling
/// (`profile` null), without reading the clock.
int64_t kernelStart(StepProfile *profile);

/// After the kernel call that started at `start`: when profiling, the time
/// until now added to its class and, while tracing, the kernel recorded
/// (runtime/StepTrace.h; communication records itself). Nothing when
/// `profile` is null.
void kernelEnd(StepProfile *profile, int kernelClass, const char *name, int64_t start);

/// A rank class's training step on its arena; `drawSeed` keys dropout's masks.
using StepFunction = void (*)(uint8_t *arena, uint64_t drawSeed, StepProfile *profile);

} // namespace planc::runtime

#endif
