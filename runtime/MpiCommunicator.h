//===- runtime/MpiCommunicator.h - the ranks of a mesh as MPI processes -*- C++ -*-===//
//
// runtime/Communicator.h over MPI (OpenMPI from Debian): one process per
// rank, launched by `mpirun -np N`, `srun` or `planc run --target=cpu
// --ranks N`. At start every process splits MPI_COMM_WORLD once per mesh
// axis larger than one (runtime/MeshRanks.h's groups: the members of a
// group are the ranks that differ only along that axis, in coordinate
// order), so a collective of the execution plan runs on the communicator of
// its axis.
//
// Collectives keep the communicator's exact semantics -- sums in f64 in
// member order, rounded once -- so every member gets the same bits as the
// in-process world (and the interpreter) gives: each member's block travels
// to every member (MPI_Iallgather of bytes) and runtime/BlockExchange.h
// computes the member's own result from them. For two members that is what
// a ring all-reduce sends; for more it sends more, the price of results
// that do not depend on the reduction tree.
//
// Messages: a send copies its bytes and is complete at once, as the
// in-process world's eager sends are (the copy travels by MPI_Isend and is
// freed when delivered); a recv is an MPI_Irecv into the caller's buffer,
// and a message of another size than it expects fails it, naming the peer.
// Tags are the plan's, matched in order per (source, tag).
//
// Waiting: wait() polls MPI_Test, yielding the core between polls (ranks
// may outnumber cores: mpirun --oversubscribe), and gives up after the
// timeout with an error naming the operation and its peers, so a rank that
// died or hangs outside mpirun's care ends the job instead of hanging it.
// MPI errors return (MPI_ERRORS_RETURN) and become messages.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_MPICOMMUNICATOR_H
#define PLANC_RUNTIME_MPICOMMUNICATOR_H

#include "runtime/Communicator.h"
#include "runtime/MeshRanks.h"
#include "runtime/Status.h"

#include <memory>
#include <string>

namespace planc::runtime {

/// Whether this process was started by an MPI launcher (mpirun, srun under
/// PMIx): it must then call MPI_Init even for a world of one.
bool launchedByMpi();

/// MPI_Init_thread (funneled) unless already done; the world's rank and size.
Status initMpi(int &argc, char **&argv, int64_t &rank, int64_t &size);
/// MPI_Finalize, once, if initMpi ran.
void finalizeMpi();
/// Ends every process of the job (MPI_Abort) with `code`.
[[noreturn]] void abortMpi(int code);

class MpiCommunicator final : public Communicator {
public:
  /// After initMpi: the world must have exactly mesh.ranks() processes.
  /// Collective over the world (every rank must call it, in the same order).
  static Result<std::unique_ptr<MpiCommunicator>> create(const MeshRanks &mesh, double timeoutSeconds);
  ~MpiCommunicator() override;

  int64_t rank() const override;
  int64_t size() const override;
  Request start(const CollectiveCall &call, const void *send, void *recv, std::string &error) override;
  Request send(int64_t peer, int64_t tag, const void *data, uint64_t bytes, std::string &error) override;
  Request recv(int64_t peer, int64_t tag, void *data, uint64_t bytes, std::string &error) override;
  bool test(Request request, std::string &error) override;
  /// Blocks until the request completes; false (with `error`) when it failed
  /// or the timeout passed.
  bool wait(Request request, std::string &error);
  /// Waits for every send still travelling (before the process ends).
  Status flushSends();

  /// Every process's `text` (the build id), gathered; "" or the first rank
  /// whose text differs from this one's, as a sentence.
  std::string compareAcrossRanks(const std::string &what, const std::string &text);
  /// Broadcasts `count` doubles from world rank `root`.
  Status broadcast(double *values, int count, int64_t root);
  /// The lowest rank whose `flag` is true, or -1 (collective): which rank
  /// reports an error that several may have.
  int64_t lowestRank(bool flag);
  /// Every rank's `text`, on rank 0 (in rank order); empty elsewhere.
  Result<std::vector<std::string>> gatherToRankZero(const std::string &text);
  /// A barrier over the world; an error when a rank failed on the way.
  Status barrier();

  struct State;

private:
  explicit MpiCommunicator(std::unique_ptr<State> state);
  std::unique_ptr<State> state;
};

} // namespace planc::runtime

#endif
