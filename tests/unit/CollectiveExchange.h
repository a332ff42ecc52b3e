//===- tests/unit/CollectiveExchange.h - collectives of ranks run in step -*- C++ -*-===//
//
// The CollectiveSimulator of the tests' multi-rank run (MultiRank.h): every rank's
// kernel for a collective op hands over its operand and its result slot,
// and once all ranks have done so, `complete` exchanges the blocks across each
// group of the op's axis (MeshLayout::groups, members in coordinate order):
//
//   all_reduce      every member gets the sum of the group's blocks
//   reduce_scatter  the sum, cut along `dim` into n blocks; member j keeps block j
//                   (blocks of ceil(rows / n), the last padded with zeros)
//   all_gather      the members' blocks concatenated along `dim`, in member order,
//                   their padding dropped
//   all_to_all      member i cuts its block along `split_dim` into n pieces and
//                   sends piece j to member j; each member concatenates what it
//                   receives along `concat_dim`, in member order
//   broadcast       every member gets the block of the member at coordinate `root`
//   send / recv     a rank at coordinate c sends to the rank at coordinate
//                   (c + peer_offset) mod n of its group; a recv takes from the
//                   rank at (c + peer_offset) mod n. A recv {peer_offset = -k}
//                   thus matches a send {peer_offset = k} with the same tag;
//                   matching messages are received in the order they were sent.
//                   The offsets wrap so the same program runs on every rank.
//
// The sharding change this implies is the shape rule's (ir/ops/Collective.cpp):
// the axis gathered or moved must be the minor-most axis of its dim, and the
// axis scattered is added as the minor-most; anything else is an error, as is a
// result whose declared local shape is not what the exchange produces.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_TESTS_UNIT_COLLECTIVEEXCHANGE_H
#define PLANC_TESTS_UNIT_COLLECTIVEEXCHANGE_H

#include "ir/Interpreter.h"
#include "ir/MeshLayout.h"

#include <deque>
#include <map>
#include <tuple>

namespace planc::ir {

class CollectiveExchange : public CollectiveSimulator {
public:
  explicit CollectiveExchange(const MeshLayout &mesh);

  /// The rank whose kernel calls `perform` next.
  void setRank(int64_t rank) { current = rank; }
  /// Records the current rank's operand and result slot for the op.
  void perform(EvalContext &ctx, const Op &op, llvm::ArrayRef<const Tensor *> in,
               llvm::MutableArrayRef<Tensor> out) override;
  /// Exchanges the recorded blocks as `op` says and writes every rank's result.
  /// Returns "" or the error.
  std::string complete(const Op &op);
  /// "" when every message sent has been received, else the first one that was not.
  std::string checkAllReceived() const;

private:
  const MeshLayout &mesh;
  int64_t current = 0;
  std::vector<const Tensor *> operands; // per rank, null for recv
  std::vector<Tensor *> results;        // per rank, null for send
  std::vector<bool> joined;             // per rank: issued the current op
  /// Messages in flight by (destination, source, tag), oldest first.
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::deque<Tensor>> mailbox;
};

} // namespace planc::ir

#endif
