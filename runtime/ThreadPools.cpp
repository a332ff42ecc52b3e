//===- runtime/ThreadPools.cpp - how the kernels' and the GEMMs' threads wait -===//

#include "runtime/ThreadPools.h"

#include <cstdlib>
#include <unistd.h>

// OpenBLAS's report of its threading (0 sequential, 1 pthreads, 2 OpenMP).
// Weak: the runtime library is also linked into processes without OpenBLAS.
extern "C" int openblas_get_parallel(void) __attribute__((weak));

planc::runtime::BlasThreading planc::runtime::blasThreading() {
  if (!openblas_get_parallel) return BlasThreading::None;
  switch (openblas_get_parallel()) {
  case 0: return BlasThreading::Sequential;
  case 2: return BlasThreading::OpenMP;
  default: return BlasThreading::Pthreads;
  }
}

namespace {

/// Ranks that share this node's cores, as the launcher says (1 when none does).
long localRanks() {
  for (const char *v : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"})
    if (const char *s = std::getenv(v))
      if (long n = std::strtol(s, nullptr, 10); n > 0) return n;
  return 1;
}

} // namespace

planc::runtime::ThreadPoolContext planc::runtime::currentThreadPoolContext() {
  ThreadPoolContext c;
  c.blas = blasThreading();
  c.localRanks = localRanks();
  c.userWaitPolicy = std::getenv("OMP_WAIT_POLICY") != nullptr;
  c.userBlasTimeout = std::getenv("OPENBLAS_THREAD_TIMEOUT") != nullptr;
  return c;
}

std::vector<std::string> planc::runtime::threadPoolSettings(const ThreadPoolContext &c) {
  std::vector<std::string> out;
  if (c.blas == BlasThreading::OpenMP) {
    // One pool: the GEMMs run on the kernels' threads, so nothing competes
    // and a thread that spins a moment starts the next small kernel at once
    // (tiny-gpt: 3.5x the steps a second of passive waits). Only ranks that
    // share the node make a spinning thread take another process's core.
    if (c.localRanks > 1 && !c.userWaitPolicy) out.push_back("OMP_WAIT_POLICY=passive");
    return out;
  }
  // Two pools: OpenMP threads spinning between kernels slow the GEMMs, and
  // OpenBLAS's threads spin about 0.1 s after every GEMM beside the kernels.
  if (!c.userWaitPolicy) out.push_back("OMP_WAIT_POLICY=passive");
  if (!c.userBlasTimeout) out.push_back("OPENBLAS_THREAD_TIMEOUT=4");
  return out;
}

void planc::runtime::settleThreadPools(char **argv) {
  std::vector<std::string> settings = threadPoolSettings(currentThreadPoolContext());
  if (settings.empty() || !argv || !argv[0]) return;
  for (const std::string &s : settings) {
    const size_t eq = s.find('=');
    ::setenv(s.substr(0, eq).c_str(), s.substr(eq + 1).c_str(), 1);
  }
  ::execv("/proc/self/exe", argv);
}
