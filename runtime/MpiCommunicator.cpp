//===- runtime/MpiCommunicator.cpp - the ranks of a mesh as MPI processes ---===//

#include "runtime/MpiCommunicator.h"
#include "runtime/BlockExchange.h"
#include "runtime/Plural.h"
#include "runtime/Watchdog.h"

// The C interface only: MPI's deprecated C++ bindings would need their own library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <sched.h>
#include <thread>

using namespace planc::runtime;

namespace {

bool initialisedHere = false;
int64_t worldRank = -1, worldSize = 0; // for the watchdog's errors, once known

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, size_t(length));
}

/// "rank 2", "ranks 0, 2 and 3".
std::string ranksText(const std::vector<int64_t> &ranks) {
  if (ranks.empty()) return "no rank";
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i)
    out += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  return out;
}

/// Every rank of `group` but `self`: whom a wait waits for.
std::vector<int64_t> othersOf(const std::vector<int64_t> &group, int64_t self) {
  std::vector<int64_t> out;
  for (int64_t r : group)
    if (r != self) out.push_back(r);
  return out;
}

/// The end of a wait that passed the timeout: "waited 3 s for rank 0,
/// which has died or hangs (--comm-timeout 3)"; `whom` names one rank or several.
std::string waitedFor(const std::string &whom, bool one, double waited, double limit) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", limit);
  return "waited " + std::to_string(int64_t(waited)) + " s for " + whom +
         (one ? ", which has died or hangs" : "; one of them has died or hangs") + " (--comm-timeout " + seconds + ")";
}

std::string timedOut(const std::string &operation, const std::vector<int64_t> &peers, double waited, double limit) {
  return operation + ": " + waitedFor(ranksText(peers), peers.size() == 1, waited, limit);
}

/// A launcher's variable as a number, or -1.
int64_t launcherNumber(std::initializer_list<const char *> names) {
  for (const char *v : names)
    if (const char *text = std::getenv(v)) {
      char *end = nullptr;
      long long n = std::strtoll(text, &end, 10);
      if (end != text && *end == 0 && n >= 0) return n;
    }
  return -1;
}

/// Every rank of a world of `size` but `rank`.
std::vector<int64_t> othersInWorld(int64_t rank, int64_t size) {
  std::vector<int64_t> out;
  for (int64_t r = 0; r < size; ++r)
    if (r != rank) out.push_back(r);
  return out;
}

/// The error of a watchdog on the world-wide call `call`.
std::string worldCallTimedOut(const std::string &phase, const std::string &call, int64_t rank, int64_t size,
                              double limit) {
  const std::string self = rank >= 0 ? "rank " + std::to_string(rank) : "a rank";
  if (size <= 0) return self + ", " + phase + ": " + call + ": " + waitedFor("the job's other processes", false, limit, limit);
  return self + ", " + phase + ": " + timedOut(call, othersInWorld(rank, size), limit, limit);
}

/// Calls `done` until it says true, polling as MPI needs: without sleeping
/// while a transfer may be under way (MPI moves a large message a fragment
/// per progress call, and only inside MPI calls), yielding the core (ranks
/// may outnumber cores); after 100 ms, when the wait is for a rank still
/// computing, sleeping between bursts of polls. False when `limit` seconds
/// passed first; `waited` says how long it waited.
template <class Done> bool pollWithin(double limit, Done done, double &waited) {
  const auto begin = std::chrono::steady_clock::now();
  waited = 0;
  for (unsigned polls = 0;; ++polls) {
    if (done()) return true;
    if (polls <= 64) continue;
    waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    if (waited > limit) return false;
    if (waited < 0.1 || polls % 16) sched_yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

/// A started operation.
struct Pending {
  enum class Kind { Collective, Recv } kind = Kind::Collective;
  MPI_Request request = MPI_REQUEST_NULL;
  std::string description; // for errors: "all_reduce f32[4] on group {0, 1}", "recv of 16 bytes from rank 1, tag 3"
  std::vector<int64_t> peers; // the ranks it waits for
  // Collectives: every member's block arrives in `gathered`; the result
  // goes to `recv` when the exchange completes.
  CollectiveCall call;
  std::vector<uint8_t> mine, gathered;
  void *recv = nullptr;
  size_t member = 0;
  // Recvs: the bytes expected.
  uint64_t bytes = 0;
};

/// A send's copy, travelling.
struct Travelling {
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<uint8_t> data;
};

} // namespace

struct MpiCommunicator::State {
  MeshRanks mesh;
  int64_t rank = 0, size = 1;
  double timeout = 300;
  JobPhase phase = JobPhase::StartUp;
  int64_t phaseStep = -1;
  int tagUpperBound = 32767;
  MPI_Comm axisComm[kMeshAxes] = {MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL};
  std::vector<int64_t> axisGroup[kMeshAxes];
  std::map<Request, Pending> pending;
  std::vector<Travelling> sends;
  Request next = 1;
  // The copies collectives send and gather into, kept for the next step's
  // collective of the same size: fresh pages of a large block cost more
  // than moving it.
  std::multimap<size_t, std::vector<uint8_t>> spare;
  size_t spareBytes = 0;
  static constexpr size_t kSpareLimit = size_t(2) << 30;

  std::vector<uint8_t> take(size_t bytes) {
    auto it = spare.find(bytes);
    if (it == spare.end()) return std::vector<uint8_t>(bytes);
    std::vector<uint8_t> v = std::move(it->second);
    spare.erase(it);
    spareBytes -= bytes;
    return v;
  }
  void give(std::vector<uint8_t> &&v) {
    if (v.empty() || spareBytes + v.size() > kSpareLimit) return;
    spareBytes += v.size();
    const size_t n = v.size();
    spare.emplace(n, std::move(v));
  }
  /// Forgets a request, keeping its buffers for later ones.
  void erase(std::map<Request, Pending>::iterator it) {
    give(std::move(it->second.mine));
    give(std::move(it->second.gathered));
    pending.erase(it);
  }

  /// Completes what has arrived of the sends, freeing their copies.
  void progressSends() {
    for (size_t i = 0; i < sends.size();) {
      int done = 0;
      MPI_Test(&sends[i].request, &done, MPI_STATUS_IGNORE);
      if (done) {
        sends[i] = std::move(sends.back());
        sends.pop_back();
      } else {
        ++i;
      }
    }
  }

  std::vector<int64_t> everyOtherRank() const { return othersInWorld(rank, size); }

  /// Ends the job from this rank: "error: rank 1, step 4: <message>".
  [[noreturn]] void endJob(const std::string &message) const {
    std::fflush(stdout);
    std::fprintf(stderr, "error: rank %lld, %s: %s\n", (long long)rank, phaseText().c_str(), message.c_str());
    std::fflush(stderr);
    abortMpi(1);
  }

  std::string phaseText() const {
    const std::string step = std::to_string(phaseStep);
    switch (phase) {
    case JobPhase::StartUp: return "start-up";
    case JobPhase::Step: return "step " + step;
    case JobPhase::Checkpoint: return "the checkpoint after step " + step;
    case JobPhase::Shutdown: return phaseStep < 0 ? "shutdown" : "shutdown after step " + step;
    }
    return "";
  }

  /// Waits for a started world operation: an error on an MPI error; past
  /// the timeout, the end of the job.
  Status await(MPI_Request &request, const std::string &what) {
    int rc = MPI_SUCCESS;
    double waited = 0;
    bool done = pollWithin(
        timeout,
        [&] {
          int flag = 0;
          rc = MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
          return rc != MPI_SUCCESS || flag;
        },
        waited);
    if (!done) endJob(timedOut(what, everyOtherRank(), waited, timeout));
    if (rc != MPI_SUCCESS) return errorStatus(what + ": " + mpiError(rc));
    return Status::success();
  }

  /// Finishes a completed request: a collective's exchange, a recv's size check.
  bool finish(Pending &p, const MPI_Status &status, std::string &error) {
    if (p.kind == Pending::Kind::Recv) {
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      if (uint64_t(count) != p.bytes) {
        error = p.description + ": the message has " + counted(count, "byte");
        return false;
      }
      return true;
    }
    const size_t n = p.call.group.size(), block = p.mine.size();
    std::vector<const void *> send(n);
    std::vector<void *> recv(n, nullptr);
    for (size_t j = 0; j < n; ++j) send[j] = p.gathered.data() + j * block;
    recv[p.member] = p.recv;
    exchangeBlocks(p.call, send, recv);
    return true;
  }
};

bool planc::runtime::launchedByMpi() {
  for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

Status planc::runtime::initMpi(int &argc, char **&argv, int64_t &rank, int64_t &size, double timeoutSeconds) {
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    int provided = 0;
    // MPI_Init waits for every process of the job (the launcher's fence).
    Watchdog limit(timeoutSeconds,
                   worldCallTimedOut("start-up", "MPI_Init", launcherNumber({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}),
                                     launcherNumber({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}), timeoutSeconds));
    int rc = MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) return errorStatus("MPI_Init failed: " + mpiError(rc));
    initialisedHere = true;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int r = 0, s = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  rank = r;
  size = s;
  worldRank = r;
  worldSize = s;
  return Status::success();
}

void planc::runtime::finalizeMpi(double timeoutSeconds, const std::string &phase) {
  if (!initialisedHere) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    // MPI_Finalize waits for every process (the launcher's fence).
    Watchdog limit(timeoutSeconds, worldCallTimedOut(phase, "MPI_Finalize", worldRank, worldSize, timeoutSeconds));
    MPI_Finalize();
  }
  initialisedHere = false;
}

void planc::runtime::abortMpi(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

MpiCommunicator::MpiCommunicator(std::unique_ptr<State> s) : state(std::move(s)) {}

MpiCommunicator::~MpiCommunicator() {
  for (MPI_Comm &c : state->axisComm)
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
}

Result<std::unique_ptr<MpiCommunicator>> MpiCommunicator::create(const MeshRanks &mesh, double timeoutSeconds) {
  auto s = std::make_unique<State>();
  s->mesh = mesh;
  s->timeout = timeoutSeconds;
  int r = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  s->rank = r;
  s->size = n;
  if (n != mesh.ranks())
    return errorStatus("the plan's mesh (" + mesh.describe() + ") has " + counted(mesh.ranks(), "rank") +
                       ", but MPI started " + std::to_string(n) + "; launch it with mpirun -np " +
                       std::to_string(mesh.ranks()));
  int *ub = nullptr, found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
  if (found && ub) s->tagUpperBound = *ub;
  // One communicator per axis: colour = the group's first rank, key = the
  // member index, so the communicator's ranks are the group's member order.
  for (int a = 0; a < kMeshAxes; ++a) {
    if (mesh.size(a) <= 1) continue;
    std::vector<int64_t> g = mesh.group(r, a);
    int member = 0;
    for (size_t j = 0; j < g.size(); ++j)
      if (g[j] == r) member = int(j);
    // Over the whole world, and with no non-blocking form.
    Watchdog limit(timeoutSeconds, worldCallTimedOut("start-up", "MPI_Comm_split for the " + std::string(meshAxisName(a)) +
                                                                     " groups",
                                                     r, n, timeoutSeconds));
    int rc = MPI_Comm_split(MPI_COMM_WORLD, int(g.front()), member, &s->axisComm[a]);
    if (rc != MPI_SUCCESS) return errorStatus("MPI_Comm_split for the " + std::string(meshAxisName(a)) + " groups: " + mpiError(rc));
    MPI_Comm_set_errhandler(s->axisComm[a], MPI_ERRORS_RETURN);
    s->axisGroup[a] = std::move(g);
  }
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(std::move(s)));
}

int64_t MpiCommunicator::rank() const { return state->rank; }
int64_t MpiCommunicator::size() const { return state->size; }

Request MpiCommunicator::start(const CollectiveCall &call, const void *send, void *recv, std::string &error) {
  if (std::string e = checkCollectiveCall(call, state->rank, state->size); !e.empty()) {
    error = e;
    return 0;
  }
  int axis = -1;
  for (int a = 0; a < kMeshAxes; ++a)
    if (state->axisComm[a] != MPI_COMM_NULL && state->axisGroup[a] == call.group) axis = a;
  if (axis < 0) {
    error = describeCollectiveCall(call) + ": the group is not one of a mesh axis (" + state->mesh.describe() + ")";
    return 0;
  }
  Pending p;
  p.kind = Pending::Kind::Collective;
  p.call = call;
  p.description = describeCollectiveCall(call);
  p.peers = othersOf(call.group, state->rank);
  p.recv = recv;
  for (size_t j = 0; j < call.group.size(); ++j)
    if (call.group[j] == state->rank) p.member = j;
  uint64_t elements = 1;
  for (int64_t d : call.shape) elements *= uint64_t(d);
  const uint64_t bytes = elements * byteSize(call.type);
  if (bytes > uint64_t(INT32_MAX)) {
    error = p.description + ": a block of " + std::to_string(bytes) + " bytes is more than one MPI call moves (2 GiB)";
    return 0;
  }
  p.mine = state->take(bytes);
  if (bytes) std::memcpy(p.mine.data(), send, bytes);
  p.gathered = state->take(bytes * call.group.size());
  int rc = MPI_Iallgather(p.mine.data(), int(bytes), MPI_BYTE, p.gathered.data(), int(bytes), MPI_BYTE,
                          state->axisComm[axis], &p.request);
  if (rc != MPI_SUCCESS) {
    error = p.description + ": " + mpiError(rc);
    return 0;
  }
  Request id = state->next++;
  state->pending.emplace(id, std::move(p));
  return id;
}

Request MpiCommunicator::send(int64_t peer, int64_t tag, const void *data, uint64_t bytes, std::string &error) {
  if (peer < 0 || peer >= state->size || tag < 0 || tag > state->tagUpperBound || bytes > uint64_t(INT32_MAX)) {
    error = "send of " + counted(int64_t(bytes), "byte") + " to rank " + std::to_string(peer) + ", tag " +
            std::to_string(tag) + ": the peer, the tag or the size is out of MPI's range";
    return 0;
  }
  state->progressSends();
  Travelling t;
  t.data.assign(static_cast<const uint8_t *>(data), static_cast<const uint8_t *>(data) + bytes);
  int rc = MPI_Isend(t.data.data(), int(bytes), MPI_BYTE, int(peer), int(tag), MPI_COMM_WORLD, &t.request);
  if (rc != MPI_SUCCESS) {
    error = "send of " + counted(int64_t(bytes), "byte") + " to rank " + std::to_string(peer) + ": " + mpiError(rc);
    return 0;
  }
  state->sends.push_back(std::move(t));
  // Eager: complete for the caller now (its buffer is free).
  return state->next++;
}

Request MpiCommunicator::recv(int64_t peer, int64_t tag, void *data, uint64_t bytes, std::string &error) {
  Pending p;
  p.kind = Pending::Kind::Recv;
  p.bytes = bytes;
  p.peers = {peer};
  p.description = "recv of " + counted(int64_t(bytes), "byte") + " from rank " + std::to_string(peer) + ", tag " +
                  std::to_string(tag);
  if (peer < 0 || peer >= state->size || tag < 0 || tag > state->tagUpperBound || bytes > uint64_t(INT32_MAX)) {
    error = p.description + ": the peer, the tag or the size is out of MPI's range";
    return 0;
  }
  // A longer message fails with MPI's truncation error, a shorter one by its count (finish()).
  int rc = MPI_Irecv(data, int(bytes), MPI_BYTE, int(peer), int(tag), MPI_COMM_WORLD, &p.request);
  if (rc != MPI_SUCCESS) {
    error = p.description + ": " + mpiError(rc);
    return 0;
  }
  Request id = state->next++;
  state->pending.emplace(id, std::move(p));
  return id;
}

bool MpiCommunicator::test(Request request, std::string &error) {
  state->progressSends();
  auto it = state->pending.find(request);
  if (it == state->pending.end()) return true; // a send (complete when started), or finished
  int done = 0;
  MPI_Status status;
  int rc = MPI_Test(&it->second.request, &done, &status);
  if (rc != MPI_SUCCESS) {
    error = it->second.description + ": " + mpiError(rc);
    state->erase(it);
    return true;
  }
  if (!done) return false;
  state->finish(it->second, status, error);
  state->erase(it);
  return true;
}

bool MpiCommunicator::wait(Request request, std::string &error) {
  double waited = 0;
  if (pollWithin(state->timeout, [&] { return test(request, error); }, waited)) return error.empty();
  auto it = state->pending.find(request);
  if (it == state->pending.end()) error = timedOut("a request", {}, waited, state->timeout);
  else error = timedOut(it->second.description, it->second.peers, waited, state->timeout);
  return false;
}

Status MpiCommunicator::flushSends() {
  // A send whose receiver hangs never completes: the same limit as any wait.
  double waited = 0;
  std::string failed;
  bool done = pollWithin(
      state->timeout,
      [&] {
        for (Travelling &t : state->sends) {
          int flag = 0;
          if (int rc = MPI_Test(&t.request, &flag, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) {
            failed = "a send did not complete: " + mpiError(rc);
            return true;
          }
          if (!flag) return false;
        }
        return true;
      },
      waited);
  if (!done) state->endJob(timedOut("the sends still travelling", state->everyOtherRank(), waited, state->timeout));
  if (!failed.empty()) return errorStatus(failed);
  state->sends.clear();
  return Status::success();
}

void MpiCommunicator::setPhase(JobPhase phase, int64_t step) {
  state->phase = phase;
  state->phaseStep = step;
}

std::string MpiCommunicator::phaseText() const { return state->phaseText(); }

std::string MpiCommunicator::compareAcrossRanks(const std::string &what, const std::string &text) {
  // Fixed-size records: the text's first 63 bytes (build ids are 16).
  char mine[64] = {};
  std::strncpy(mine, text.c_str(), sizeof mine - 1);
  std::vector<char> all(size_t(state->size) * sizeof mine);
  const std::string operation = "comparing the " + what + " of the ranks";
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = MPI_Iallgather(mine, int(sizeof mine), MPI_CHAR, all.data(), int(sizeof mine), MPI_CHAR, MPI_COMM_WORLD,
                          &request);
  if (rc != MPI_SUCCESS) return operation + ": " + mpiError(rc);
  if (Status s = state->await(request, operation); !s.ok()) return s.message();
  for (int64_t r = 0; r < state->size; ++r) {
    std::string theirs(all.data() + size_t(r) * sizeof mine);
    if (theirs != mine)
      return "rank " + std::to_string(r) + " runs " + what + " '" + theirs + "' but rank " + std::to_string(state->rank) +
             " runs '" + mine + "': every rank must run the same build of the same plan";
  }
  return "";
}

Status MpiCommunicator::broadcast(double *values, int count, int64_t root, const std::string &what) {
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = MPI_Ibcast(values, count, MPI_DOUBLE, int(root), MPI_COMM_WORLD, &request);
  if (rc != MPI_SUCCESS) return errorStatus(what + ": " + mpiError(rc));
  return state->await(request, what);
}

int64_t MpiCommunicator::lowestRank(bool flag, const std::string &what) {
  int mine = flag ? int(state->rank) : INT32_MAX, lowest = INT32_MAX;
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Iallreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &request) != MPI_SUCCESS) return state->rank;
  if (!state->await(request, what).ok()) return state->rank;
  return lowest == INT32_MAX ? -1 : int64_t(lowest);
}

Status MpiCommunicator::barrier(const std::string &what) {
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = MPI_Ibarrier(MPI_COMM_WORLD, &request);
  if (rc != MPI_SUCCESS) return errorStatus(what + ": " + mpiError(rc));
  return state->await(request, what);
}

Result<std::vector<std::string>> MpiCommunicator::gatherToRankZero(const std::string &text, const std::string &what) {
  if (text.size() > size_t(INT32_MAX)) return errorStatus(what + ": " + std::to_string(text.size()) + " bytes: too many");
  int mine = int(text.size());
  std::vector<int> sizes(size_t(state->size)), displacements(size_t(state->size));
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = MPI_Igather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &request);
  if (rc != MPI_SUCCESS) return errorStatus(what + ": " + mpiError(rc));
  if (Status s = state->await(request, what); !s.ok()) return s;
  int64_t total = 0;
  for (size_t r = 0; r < sizes.size(); ++r) {
    displacements[r] = int(total);
    total += sizes[r];
  }
  // (The other ranks' gather then waits for rank 0 until the timeout.)
  if (state->rank == 0 && total > int64_t(INT32_MAX)) return errorStatus(what + ": " + std::to_string(total) + " bytes: too many");
  std::vector<char> all(state->rank == 0 ? size_t(total) + 1 : 1);
  rc = MPI_Igatherv(text.data(), mine, MPI_CHAR, all.data(), sizes.data(), displacements.data(), MPI_CHAR, 0,
                    MPI_COMM_WORLD, &request);
  if (rc != MPI_SUCCESS) return errorStatus(what + ": " + mpiError(rc));
  if (Status s = state->await(request, what); !s.ok()) return s;
  std::vector<std::string> out;
  if (state->rank == 0)
    for (size_t r = 0; r < sizes.size(); ++r) out.emplace_back(all.data() + displacements[r], size_t(sizes[r]));
  return out;
}
