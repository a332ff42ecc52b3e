//===- runtime/StepComms.h - the communication steps of a compiled step -*- C++ -*-===//
//
// What the generated training step calls for its communication steps
// (backend/cpu/CppEmitter.h renders each as a CommStep constant and a call):
//
//   commStart(step, in, out)   starts the step on this rank's communicator:
//                              a collective over the group of its mesh axis,
//                              or a send / recv to the peer at its offset
//   commWait(event)            before a step that reads what it wrote (or
//                              writes what it reads): waits for it
//   commWaitAll()              at the end of the training step
//
// An output the step accumulates (micro-batches after the first of a value
// summed over them) keeps what it held and gets it added when the operation
// completes, in f64, rounded once -- as the interpreter does. Groups and
// peers are runtime/MeshRanks.h's rules for this process's rank.
//
// A failure here -- a wait past --comm-timeout included -- cannot be undone
// mid-step and the other ranks would wait for this one: it prints the error
// (naming the training step the log prints, the plan's operation and the
// ranks waited for) and ends the whole job (MPI_Abort), so no rank hangs.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_STEPCOMMS_H
#define PLANC_RUNTIME_STEPCOMMS_H

#include "runtime/Communicator.h"
#include "runtime/ElementType.h"

#include <cstdint>
#include <vector>

namespace planc::runtime {

class MpiCommunicator;
class MeshRanks;

/// One communication step of the program, as the emitter writes it.
struct CommStep {
  enum class Kind { Collective, Send, Recv };
  Kind kind = Kind::Collective;
  CollectiveKind collective = CollectiveKind::AllReduce;
  ReduceOp op = ReduceOp::Sum;
  ElementType type = ElementType::F32;
  int axis = 0;                    // runtime/MeshRanks.h's axis index
  std::vector<int64_t> shape;      // the rank's send block (a message: its block)
  int dim = 0;                     // ReduceScatter, AllGather
  int64_t gatheredRows = 0;        // AllGather
  int splitDim = 0, concatDim = 0; // AllToAll
  int64_t root = 0;                // Broadcast
  int64_t peerOffset = 0, tag = 0; // Send, Recv
  uint64_t outBytes = 0;           // bytes of the output (a message's bytes)
  bool accumulate = false;         // the output gets the result added
  int64_t event = -1;
  const char *what = "";           // "op 17 (all_reduce in blocks.0.mlp)": for errors
};

/// Makes the calls below go to `comm` for rank `rank` of `mesh` (null: no
/// communicator; a communication step is then an error).
void setStepComms(MpiCommunicator *comm, const MeshRanks *mesh, int64_t rank);

void commStart(const CommStep &step, const void *in, void *out);
void commWait(int64_t event);
void commWaitAll();

} // namespace planc::runtime

#endif
