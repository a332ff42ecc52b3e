//===- exec/CommCall.h - a communication step as a communicator call -*- C++ -*-===//
//
// What a communication step of the execution plan asks of a communicator:
// a collective (all_reduce, reduce_scatter, all_gather, all_to_all,
// broadcast) over the group of its `axis`, or a message (send, recv) to the
// peer at its `peer_offset` along that axis, matched by `tag`. Every backend
// maps a step through commCallOf(): the interpreter starts the call on its
// in-process communicator (backend/interp/PlanInterpreter.h), the CPU
// backend writes it as a runtime::CommStep constant (backend/cpu/
// CppEmitter.h), so the two cannot read a step's attributes differently.
// The group and the peer are exec/Groups.h's rules, asked with the rank.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_EXEC_COMMCALL_H
#define PLANC_EXEC_COMMCALL_H

#include "exec/ExecutionPlan.h"

#include <cstdint>
#include <optional>
#include <string>

namespace planc::exec {

struct CommCall {
  enum class Kind { Collective, Send, Recv };
  enum class Collective { AllReduce, ReduceScatter, AllGather, AllToAll, Broadcast };
  enum class Reduce { Sum, Max };

  Kind kind = Kind::Collective;
  Collective collective = Collective::AllReduce;
  Reduce reduce = Reduce::Sum;
  MeshAxis axis = MeshAxis::DP;
  /// The buffer read (-1 for a recv) and the buffer written (-1 for a send).
  int64_t input = -1, output = -1;
  /// The buffer whose block (local shape and dtype) the call moves: a
  /// collective's input, a message's one buffer.
  int64_t block = -1;
  int dim = 0;                  // reduce_scatter, all_gather: the dim split or gathered (normalised)
  int64_t gatheredRows = 0;     // all_gather: the output's extent along dim
  int splitDim = 0, concatDim = 0; // all_to_all (normalised)
  int64_t root = 0;             // broadcast: the group member that sends
  int64_t peerOffset = 0, tag = 0; // send, recv
  uint64_t outputBytes = 0;     // the written block's bytes (a message: its buffer's)
  bool accumulates = false;     // the output gets the result added to what it holds
};

const char *spelling(CommCall::Kind k);       // "Send", "Recv", "Collective"
const char *spelling(CommCall::Collective c); // "AllReduce", ...
const char *spelling(CommCall::Reduce r);     // "Sum", "Max"

/// The call step `i` of `program` makes, or nullopt with the reason in
/// `why` ("the step names no mesh axis", "a message moves one buffer", ...).
std::optional<CommCall> commCallOf(const RankProgram &program, size_t i, std::string &why);

} // namespace planc::exec

#endif
