//===- runtime/InProcessCommunicator.h - every rank of a mesh in one process -*- C++ -*-===//
//
// The communicator of the interpreter's plan executor: the ranks of the mesh
// live in one process and take turns on ONE thread. The caller runs each
// rank's program until it must wait for a request, then the next rank's,
// round-robin, asking test(); nothing here blocks, and there are no locks.
//
//   collectives  a collective completes for all members at once, when the
//                last member starts it: the exchange (runtime/BlockExchange.h)
//                then reads every member's send block and writes every
//                member's receive block. Calls on a group are matched in the
//                order each member starts them; the members must start the
//                same call (kind, type, shape, group in the same order, and
//                the fields the kind reads), else start() fails naming both.
//   messages     a send is eager: its bytes are copied when it starts, and
//                it is complete at once (its buffer free), as a buffered MPI
//                send; a recv completes when the matching send (same source,
//                destination and tag; oldest first) has started. Eager sends
//                keep a program whose ranks reuse a sent buffer's bytes from
//                waiting on each other's receives. A size mismatch fails the
//                recv (and the send, where it was still waiting).
//
// When no rank can go on, pending() lists what is started and not complete,
// for the deadlock message.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_INPROCESSCOMMUNICATOR_H
#define PLANC_RUNTIME_INPROCESSCOMMUNICATOR_H

#include "runtime/Communicator.h"

#include <memory>
#include <string>

namespace planc::runtime {

class InProcessWorld {
public:
  explicit InProcessWorld(int64_t ranks);
  ~InProcessWorld();
  InProcessWorld(const InProcessWorld &) = delete;
  InProcessWorld &operator=(const InProcessWorld &) = delete;

  int64_t size() const;
  /// The communicator of rank `r` (0 <= r < size(); std::out_of_range otherwise).
  Communicator &rank(int64_t r);
  /// What has been started and not completed, one line per request in the
  /// order they were started:
  ///   "rank 0: all_reduce f32[4] on group {0, 1}, waiting for rank 1"
  ///   "rank 1: send of 16 bytes to rank 2, tag 3"
  ///   "rank 2: recv of 16 bytes from rank 1, tag 3"
  /// Empty when nothing is pending.
  std::string pending() const;

  struct State; // the matching state, in the .cpp

private:
  std::unique_ptr<State> state;
};

} // namespace planc::runtime

#endif
