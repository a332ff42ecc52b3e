//===- runtime/ThreadPools.h - how the kernels' and the GEMMs' threads wait -===//
//
// A compiled plan runs two kinds of parallel work on the same cores: its
// kernels' OpenMP loops and OpenBLAS's GEMMs. How their threads wait between
// jobs decides whether small kernels start at once (a spinning thread) and
// whether one pool's waiting takes the cores from the other's work
// (docs/cpu-backend.md, "Threads"). Both libraries read their settings before
// main, so settling them may start the executable again, once.
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

/// What decides the thread pools' settings.
struct ThreadPoolContext {
  BlasThreading blas = BlasThreading::None; ///< blasThreading()
  long localRanks = 1;          ///< ranks sharing this node's cores, as the launcher says
  bool userWaitPolicy = false;  ///< OMP_WAIT_POLICY is set (never overridden)
  bool userBlasTimeout = false; ///< OPENBLAS_THREAD_TIMEOUT is set (never overridden)
};

/// This process's context: the OpenBLAS it linked and its environment.
ThreadPoolContext currentThreadPoolContext();

/// The environment the thread pools should run under: with an OpenBLAS
/// threaded by OpenMP the GEMMs run on the kernels' own pool, and OpenMP's
/// default wait (spin briefly, then sleep) stays -- unless several ranks share
/// the node, whose spinning threads would take each other's cores (passive).
/// With OpenBLAS's own pthreads, two pools compete: OpenMP waits passively
/// and OpenBLAS's threads stop spinning soon after a GEMM. Each entry is
/// NAME=VALUE; what the user set is never changed.
std::vector<std::string> threadPoolSettings(const ThreadPoolContext &context);

/// Applies threadPoolSettings(currentThreadPoolContext()) and, when that
/// changed anything, starts this executable again with argv (the libraries
/// have read the old values). Returns only when nothing changed or the
/// re-execution failed (no /proc: the libraries' defaults stay).
void settleThreadPools(char **argv);

/// Which OpenBLAS the process linked.
BlasThreading blasThreading();

} // namespace planc::runtime

#endif
