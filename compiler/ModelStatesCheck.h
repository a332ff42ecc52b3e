//===- compiler/ModelStatesCheck.h - ZeRO's bytes, stage by stage -*- C++ -*-===//
//
// The model states the memory planner finds on each pipeline stage against
// the published accounting (Rajbhandari et al., SC20; Megatron-LM's
// distributed optimizer with f32 gradients), computed from the plan, not
// from the program: per element of a parameter's tensor-parallel block, in
// bytes, from the parameter's dtype (as declared, else train.precision's
// master dtype), whether it trains, and the dtypes the layers reading it
// compute in (their `@precision`, else the compute dtype):
//
//   parameters       a master weight (under bf16 or f16 compute, a trained
//                    parameter every layer reads in a narrower dtype): its
//                    narrow copy, one per dtype it is read in; any other
//                    trained parameter (one an `@precision(f32)` layer
//                    reads) its own dtype; a frozen one the compute dtype
//                    if that is narrower, else its own (whole unless ZeRO-3)
//   gradients        the narrow dtype where a master weight is read in one
//                    and train.precision keeps gradients in it, else the
//                    parameter's dtype; per element of the gradient's own
//                    tp block (under sequence parallelism the positions'
//                    gradient is split over tp until the update); over dp
//                    from ZeRO-2 -- at least: the program may hold some whole
//                    (a tied parameter's parts until their sum across
//                    stages; plain SGD's, which has no state to split), never
//                    more than all of them
//   optimizer state  the master weight itself (its dtype) plus Adam's m and v
//                    or SGD's momentum (each in the parameter's dtype); over
//                    dp from ZeRO-1; a frozen parameter has none
//
// summed over the parameters whose update runs on the stage (a tied
// embedding's on each stage that keeps a copy) and the frozen ones its
// forward reads. Where dp divides no dim of a
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
