//===- compiler/TooLargeToPlan.h - a dim too large to plan, at its place -*- C++ -*-===//
//
// The memory planner refuses a buffer past 2^44 bytes (a dim far too large:
// `--dim seq=1000000000`) with the PlanError err_buffer_too_large at the op
// that makes it. That op's line is rarely the one to change: the dim is. Here
// the error is reported at the `--dim` option or the model's `let` whose value
// is one of the tensor's dims (the largest such), with a note at the op
// ("'the tensor of shape [...]' declared here"), so a plan too large to plan
// is an error at the place that makes it so, never a ledger that is merely
// missing.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_TOOLARGETOPLAN_H
#define PLANC_COMPILER_TOOLARGETOPLAN_H

#include "frontend/Frontend.h"

#include "llvm/Support/Error.h"

namespace planc {

/// Reports the err_buffer_too_large PlanErrors in `e` through the diagnostics
/// of `c`, at the dim that makes the tensor too large when one is found (else
/// at the op), and hands `e` back unchanged: the caller still fails.
llvm::Error reportTooLargeToPlan(Compilation &c, llvm::Error e);

} // namespace planc

#endif
