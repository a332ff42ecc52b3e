//===- runtime/BlockExchange.h - what a collective computes, on bytes -*- C++ -*-===//
//
// The arithmetic of runtime/Communicator.h's collectives, apart from how the
// blocks travel: given every member's send block it writes every member's
// receive block, with the semantics listed there (those of the unit tests'
// lock-step exchange, tests/unit/CollectiveExchange.cpp). Sums and maxima are taken in f64 in member
// order and rounded once to the element type; everything else moves bytes
// unchanged (so i64 values and NaN payloads survive a gather). A communicator
// that has all blocks in one address space (runtime/InProcessCommunicator.h)
// calls it; so can a test that wants the expected result of a call.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_BLOCKEXCHANGE_H
#define PLANC_RUNTIME_BLOCKEXCHANGE_H

#include "runtime/Communicator.h"

#include <string>
#include <vector>

namespace planc::runtime {

/// "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast" (the IR's op names).
const char *spelling(CollectiveKind kind);

/// "" or why `call` is malformed for rank `rank` of a world of `worldSize`
/// ranks: a group that is empty, repeats a rank, names one outside the world
/// or lacks `rank`; a negative extent; a dim outside the shape; an all_to_all
/// block whose split dim does not cut into n pieces; gatheredRows outside
/// 1 ..= n * rows; a root that is not a member index; an unknown element type.
std::string checkCollectiveCall(const CollectiveCall &call, int64_t rank, int64_t worldSize);

/// "" or how `b` differs from `a` in what the members of a collective must
/// agree on (the kind, type, op, group and shape, and the fields the kind reads).
std::string collectiveCallMismatch(const CollectiveCall &a, const CollectiveCall &b);

/// "all_gather f32[2, 3] dim 0 (6 rows) on group {0, 1}": the call as messages show it.
std::string describeCollectiveCall(const CollectiveCall &call);

/// The shape of a member's receive block (the call must pass checkCollectiveCall).
std::vector<int64_t> collectiveResultShape(const CollectiveCall &call);

/// Writes recv[j] of every member j from send[0 ..< n] (member order); `call`
/// must pass checkCollectiveCall. Every send block is read before any receive
/// block is written, so a receive may share bytes with any send. A null
/// receive is not written (a rank that holds every block but wants its own).
/// All-reduce and reduce-scatter sum (in f64, in member order) a piece at a
/// time straight into the receive blocks, allocating nothing tensor-sized.
void exchangeBlocks(const CollectiveCall &call, const std::vector<const void *> &send, const std::vector<void *> &recv);

} // namespace planc::runtime

#endif
