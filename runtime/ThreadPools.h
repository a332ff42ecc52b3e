//===- runtime/ThreadPools.h - how the kernels' and the GEMMs' threads wait -===//
//
// A compiled plan runs two kinds of parallel work on the same cores: its
// kernels' OpenMP loops and OpenBLAS's GEMMs. How their threads wait between
// jobs decides whether small kernels start at once (a spinning thread) and
// whether waiting takes the cores from work that needs them: the other
// pool's, or another process's on a shared machine, where threads that spin
// for milliseconds made a step ten times slower (docs/cpu-backend.md,
// "Threads"). Both libraries read their settings before main, so settling
// them may start the executable again, once; the process keeps its name.
//
//===----------------------------------------------------------------------===//

#ifndef PLANC_RUNTIME_THREADPOOLS_H
#define PLANC_RUNTIME_THREADPOOLS_H

#include <string>
#include <vector>

namespace planc::runtime {

/// How the OpenBLAS the process linked runs its GEMMs; None: not linked (a
/// unit test's process).
enum class BlasThreading { None, Sequential, Pthreads, OpenMP };

/// The OpenMP runtime the process linked: GCC's libgomp (its spin is
/// GOMP_SPINCOUNT turns of a wait loop) or LLVM's libomp (KMP_BLOCKTIME,
/// in milliseconds); None: none.
enum class OpenMPRuntime { None, GNU, LLVM };

/// How long a waiting thread spins before it sleeps when the cores are
/// free: long enough that the next kernel of a step of small kernels finds
/// it awake (tiny-gpt: 12 us of spinning ran 2.4x slower than 40 us, which
/// ran as fast as OpenMP's default of milliseconds), short enough that a
/// busy neighbour gets the core back soon.
inline constexpr double kSpinSeconds = 50e-6;

/// What decides the thread pools' settings.
struct ThreadPoolContext {
  BlasThreading blas = BlasThreading::None; ///< blasThreading()
  OpenMPRuntime openmp = OpenMPRuntime::GNU; ///< openmpRuntime()
  long localRanks = 1;         ///< ranks sharing this node's cores, as the launcher says
  long threads = 1;            ///< this rank's kernel threads: --threads, OMP_NUM_THREADS, or its cores
  long cores = 1;              ///< the node's online cores
  long othersRunning = 0;      ///< tasks running at start-up besides this job's ranks
  long spinTurns = 1000;       ///< turns of OpenMP's wait loop that take kSpinSeconds here
  bool userWaits = false;      ///< OMP_WAIT_POLICY, GOMP_SPINCOUNT or KMP_BLOCKTIME is set (never overridden)
  bool userBlasTimeout = false; ///< OPENBLAS_THREAD_TIMEOUT is set (never overridden)
};

/// This process's context: the libraries it linked, its environment, its
/// threads (`threadsOption`: --threads, 0 when not given) and the machine's
/// cores and running tasks now (the median of three looks a millisecond
/// apart).
ThreadPoolContext currentThreadPoolContext(long threadsOption);

/// Whether the cores are oversubscribed: the job's threads on this node and
/// the other running tasks outnumber the cores.
bool oversubscribed(const ThreadPoolContext &context);

/// The environment the thread pools run under, and why.
struct ThreadPoolChoice {
  std::vector<std::string> settings; ///< NAME=VALUE each; what the user set is never among them
  std::string why;                   ///< one line: how the threads wait and why
};

/// With an OpenBLAS threaded by OpenMP the GEMMs run on the kernels' own
/// pool: a waiting thread spins kSpinSeconds, then sleeps -- or sleeps at
/// once (passive) when the cores are oversubscribed at start-up. With
/// OpenBLAS's own pthreads two pools compete: OpenMP waits passively and
/// OpenBLAS's threads stop spinning soon after a GEMM.
ThreadPoolChoice chooseThreadPools(const ThreadPoolContext &context);

/// Applies chooseThreadPools(currentThreadPoolContext(threadsOption)) and,
/// when that changes anything, starts this executable again with argv (the
/// libraries have read the old values); the process started again keeps
/// argv[0] and takes its name back from it (ps and top would show "exe").
/// Returns when nothing changed, in the process started again, or when
/// starting again failed (no /proc: the libraries' defaults stay).
void settleThreadPools(char **argv, long threadsOption);

/// How this process's threads wait and why (settleThreadPools' choice); ""
/// before it ran.
std::string threadPoolsWhy();

/// Whether a waiting thread of `runtime` spins before it sleeps under these
/// values of OMP_WAIT_POLICY, GOMP_SPINCOUNT and KMP_BLOCKTIME (null: not
/// set): a spin count (libgomp) or block time (libomp) of 0 does not, else
/// a passive policy does not.
bool threadsSpin(OpenMPRuntime runtime, const char *waitPolicy, const char *spinCount, const char *blockTime);

/// threadsSpin in this process's environment.
bool waitingThreadsSpin();

/// Ranks that share this node's cores, as the launcher says (1 when none does).
long localRanks();

/// The kernels' threads: OpenMP's maximum (1 without OpenMP).
long kernelThreads();

/// The paragraph of `--help` on the threads and the knobs of their waits.
const char *threadPoolsHelp();

/// Which OpenBLAS the process linked.
BlasThreading blasThreading();

/// Which OpenMP runtime the process linked.
OpenMPRuntime openmpRuntime();

} // namespace planc::runtime

#endif
