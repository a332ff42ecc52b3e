//===- compiler/LargeStack.h - run the compiler on a large stack -*- C++ -*-===//
//
// The frontend recurses over expressions and layer calls; both are bounded,
// but hostile yet legal nesting needs more than a default thread's stack.
// The planc driver and the C API (capi/) run a whole compilation through
// this, so an embedder's thread, whatever its stack, is never the one that
// recurses.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_LARGESTACK_H
#define PLANC_COMPILER_LARGESTACK_H

#include <cstddef>
#include <functional>

namespace planc {

/// The stack the driver's compilations run on.
constexpr size_t kCompilerStackBytes = size_t(512) << 20;

/// Runs `body` on a new thread with a `stackBytes` stack and waits for it.
/// If no such thread can be made, runs it on the caller's thread.
void runOnLargeStack(const std::function<void()> &body, size_t stackBytes = kCompilerStackBytes);

} // namespace planc

#endif
