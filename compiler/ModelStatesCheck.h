//===- compiler/ModelStatesCheck.h - ZeRO's bytes, stage by stage -*- C++ -*-===//
//
// The model states the memory planner finds on each pipeline stage against
// the published accounting (Rajbhandari et al., SC20; Megatron-LM's
// distributed optimizer with f32 gradients), computed from the plan's
// settings and the parameters each stage updates, not from the program:
// per element of a parameter's tensor-parallel block, in bytes,
//
//   parameters       the compute dtype (the narrow copy under mixed
//                    precision, whole unless ZeRO-3; a frozen weight too)
//   gradients        the gradients' dtype, per element of the gradient's own
//                    tp block (under sequence parallelism the positions'
//                    gradient is split over tp until the update); over dp
//                    from ZeRO-2 -- at least: the program may hold some whole
//                    (a tied parameter's parts until their sum across
//                    stages; plain SGD's, which has no state to split), never
//                    more than all of them
//   optimizer state  the f32 master under mixed precision (4) plus Adam's m
//                    and v (8) or SGD's momentum (4); over dp from ZeRO-1
//
// summed over the parameters whose update runs on the stage (a tied
// embedding's on each stage that keeps a copy). Where dp divides no dim of a
// tensor, its split is padded (docs/memory.md): less than numel / (its
// largest dim) elements per rank and category, which the check allows.
// `planc verify` reports a mismatch as a structural violation.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_MODELSTATESCHECK_H
#define PLANC_COMPILER_MODELSTATESCHECK_H

#include "frontend/Frontend.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace planc {

struct ModelStatesCheck {
  std::vector<std::string> violations; // one per stage and category that differs
  std::string skipped;                 // why the formula does not apply (8-bit Adam), else empty
};

/// Partitions the checked plan of `c` (rolled), plans its memory and
/// compares each stage's model states with the formula.
/// verifyEach: verify the IR after every pass (PassManagerOptions::verifyEach).
llvm::Expected<ModelStatesCheck> checkModelStates(Compilation &c, bool verifyEach = true);

} // namespace planc

#endif
