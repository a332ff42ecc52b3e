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
// Waiting: every wait on another rank is bounded by the timeout
// (--comm-timeout). The step's operations and the job's own agreements (the
// build check, the error and checkpoint agreements, the step's numbers, the
// trace's gather, barriers, the sends still travelling at the end) are
// non-blocking MPI calls whose wait polls MPI_Test, yielding the core
// between polls (ranks may outnumber cores: mpirun --oversubscribe), until a
// deadline. The calls with no non-blocking form -- MPI_Init, MPI_Comm_split,
// MPI_Finalize -- run under a runtime/Watchdog.h. A wait that passes the
// timeout ends the whole job (MPI_Abort; the watchdog: exit status 1, which
// the launcher turns into the end of the job) with an error naming the
// rank, the training step (the phase: start-up, step N, its checkpoint,
// shutdown), the operation and the ranks it waited for; a rank that died
// or hangs outside mpirun's care never leaves the others spinning. MPI
// errors return (MPI_ERRORS_RETURN) and become messages.
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
/// With `timeoutSeconds` > 0, a rank still waiting for the others after it
/// ends the job (the launcher's fence waits for every process).
Status initMpi(int &argc, char **&argv, int64_t &rank, int64_t &size, double timeoutSeconds = 0);
/// MPI_Finalize, once, if initMpi ran; bounded as initMpi is (`phase`
/// names the job's place in the error: "shutdown after step 9").
void finalizeMpi(double timeoutSeconds = 0, const std::string &phase = "shutdown");
/// Ends every process of the job (MPI_Abort) with `code`.
[[noreturn]] void abortMpi(int code);

/// Where the job is, for the errors of a wait: they name the training step
/// the log prints.
enum class JobPhase { StartUp, Step, Checkpoint, Shutdown };

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

  /// What the errors of a wait name as the job's place: "start-up",
  /// "step 4", "step 4's checkpoint", "shutdown after step 9" (`step`: the
  /// training step, -1 when none ran).
  void setPhase(JobPhase phase, int64_t step = -1);
  std::string phaseText() const;

  // The job's own agreements, each over the whole world; `what` names it in
  // the timeout's error ("the agreement on the step's errors"). A wait past
  // the timeout ends the job here.

  /// Every process's `text` (the build id), gathered; "" or the first rank
  /// whose text differs from this one's, as a sentence.
  std::string compareAcrossRanks(const std::string &what, const std::string &text);
  /// Broadcasts `count` doubles from world rank `root`.
  Status broadcast(double *values, int count, int64_t root, const std::string &what);
  /// The lowest rank whose `flag` is true, or -1 (collective): which rank
  /// reports an error that several may have.
  int64_t lowestRank(bool flag, const std::string &what);
  /// Every rank's `text`, on rank 0 (in rank order); empty elsewhere.
  Result<std::vector<std::string>> gatherToRankZero(const std::string &text, const std::string &what);
  /// A barrier over the world; an error when a rank failed on the way.
  Status barrier(const std::string &what);

  struct State;

private:
  explicit MpiCommunicator(std::unique_ptr<State> state);
  std::unique_ptr<State> state;
};

} // namespace planc::runtime

#endif
