//===- exec/PlanVerifier.h - is an execution plan sound? --------*- C++ -*-===//
//
// Checks the rules exec/ExecutionPlan.h states on a built (or parsed) plan
// and returns every violation as one message naming the program (its
// stage), the step (index and op) and the buffers (index and name); empty
// when the plan is sound. docs/exec.md lists the rules:
//
//   (a) buffers: aligned, inside the arena, big enough for their block, an
//       alias names another buffer at its offset, live ranges in order;
//   (b) no two buffers live at one step share a byte unless one aliases the
//       other (a sweep over the steps, O(n log n) in the buffers);
//   (c) a step reads only what was written before it and is still live, and
//       writes its outputs first there, accumulates or works in place;
//   (d) events: each communication step records its own, compute steps
//       none; waits name events recorded earlier; a read of a
//       communication step's output waits for its event first;
//   (e) no deadlock: one representative rank of every program replayed
//       against the others (sends, recvs by tag and size, collectives
//       over pp), exec/PlanDeadlock.h.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_EXEC_PLANVERIFIER_H
#define PLANC_EXEC_PLANVERIFIER_H

#include "exec/ExecutionPlan.h"

#include <string>
#include <vector>

namespace planc::exec {

std::vector<std::string> checkPlan(const ExecutionPlan &plan);

/// The bytes of a buffer's local block: numel(local) x byteSize(dtype),
/// saturating; 0 for a block with a dimension of 0 or less.
uint64_t blockBytes(const Buffer &b);

/// `#3 %x.mb0`, or `#3` for an index outside the program's buffers.
std::string describeBuffer(const RankProgram &p, int64_t index);
/// `step 4 (all_reduce)`.
std::string describeStep(const RankProgram &p, size_t index);

} // namespace planc::exec

#endif
