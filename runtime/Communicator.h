//===- runtime/Communicator.h - collectives and messages between ranks -*- C++ -*-===//
//
// The interface every backend's communication goes through: in-process for
// the interpreter (runtime/InProcessCommunicator.h, every rank of the mesh in
// one process), MPI between CPU processes and NCCL between GPUs later. It
// speaks of raw buffers and global rank numbers only; which ranks form a
// group and who the peer is are the execution plan's rules (exec/
// ExecutionPlan.h), resolved by the caller.
//
// Every call is non-blocking: it starts the operation on this rank's buffers
// and returns a request; `test` says whether it has completed (the receive
// buffer written, the send buffer free to reuse). The caller must keep both
// buffers untouched until then. A rank that can go no further waits: `wait`
// blocks (the MPI and NCCL communicators), while the in-process world, whose
// ranks take turns on one thread, answers `test` and lets the caller run
// another rank.
//
// Semantics, on a group of n ranks listed in member order, each holding a
// block of `shape` (row-major, elements of `type`):
//
//   AllReduce      every member gets the elementwise sum (max: `op`) of the blocks
//   ReduceScatter  the sum, cut along `dim` into n blocks of ceil(rows / n) rows
//                  (the last padded with zeros); member j keeps block j
//   AllGather      the blocks concatenated along `dim` in member order, each
//                  block's padding dropped: the result has `gatheredRows` rows
//   AllToAll       member i cuts its block along `splitDim` into n pieces and
//                  sends piece j to member j; each member concatenates what it
//                  receives along `concatDim`, in member order
//   Broadcast      every member gets the block of member `root`
//   send / recv    `bytes` bytes to / from one peer; messages between two ranks
//                  with the same tag are received in the order they were sent
//
// Sums of floats are taken in f64 in member order and rounded once to the
// element type, so every member gets the same bits on any backend that
// follows this order (the in-process one does).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_COMMUNICATOR_H
#define PLANC_RUNTIME_COMMUNICATOR_H

#include "runtime/ElementType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace planc::runtime {

enum class CollectiveKind { AllReduce, ReduceScatter, AllGather, AllToAll, Broadcast };
enum class ReduceOp { Sum, Max };

struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::AllReduce;
  ElementType type = ElementType::F32;
  ReduceOp op = ReduceOp::Sum;
  std::vector<int64_t> group;      // global ranks in member order; must hold this rank
  std::vector<int64_t> shape;      // this rank's send block
  int dim = 0;                     // ReduceScatter, AllGather
  int64_t gatheredRows = 0;        // AllGather: rows of the result along `dim`
  int splitDim = 0, concatDim = 0; // AllToAll
  int64_t root = 0;                // Broadcast: the member index
};

/// A started operation; 0 is never a valid one.
using Request = uint64_t;

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int64_t rank() const = 0;
  virtual int64_t size() const = 0;
  /// Starts a collective: `send` holds this rank's block, `recv` gets its
  /// result (the result's shape follows from the call; `recv` may equal
  /// `send` for AllReduce and Broadcast). Returns 0 and sets `error` when the
  /// call is malformed (a group without this rank, a shape that does not cut
  /// into n pieces) or does not match what the other members started.
  virtual Request start(const CollectiveCall &call, const void *send, void *recv, std::string &error) = 0;
  virtual Request send(int64_t peer, int64_t tag, const void *data, uint64_t bytes, std::string &error) = 0;
  virtual Request recv(int64_t peer, int64_t tag, void *data, uint64_t bytes, std::string &error) = 0;
  /// Whether the request has completed; sets `error` (and returns true) when
  /// it failed (a message of another size than the receive expects).
  virtual bool test(Request request, std::string &error) = 0;
};

} // namespace planc::runtime

#endif
