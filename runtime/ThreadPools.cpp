//===- runtime/ThreadPools.cpp - how the kernels' and the GEMMs' threads wait -===//

#include "runtime/ThreadPools.h"
#include "runtime/CpuLoad.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <strings.h>
#include <sys/prctl.h>
#include <thread>
#include <unistd.h>

// OpenBLAS's report of its threading (0 sequential, 1 pthreads, 2 OpenMP),
// and the OpenMP runtimes' (libomp alone has the kmp_ calls). Weak: the
// runtime library is also linked into processes without them.
extern "C" int openblas_get_parallel(void) __attribute__((weak));
extern "C" int omp_get_max_threads(void) __attribute__((weak));
extern "C" int kmp_get_blocktime(void) __attribute__((weak));

namespace {

/// What settleThreadPools chose, in the environment of the process it
/// starts again: its presence says the settling is done.
constexpr const char *kChoiceVariable = "PLANC_THREAD_WAITS";

bool isSet(const char *name) { return std::getenv(name) != nullptr; }

/// OMP_NUM_THREADS's first level ("4" or "4,2"); 0 when not set.
long ompNumThreads() {
  const char *s = std::getenv("OMP_NUM_THREADS");
  long n = s ? std::strtol(s, nullptr, 10) : 0;
  return n > 0 ? n : 0;
}

/// Tasks running besides this one, the median of three looks a millisecond
/// apart (a task that only passes through is not load); -1 unknown.
long othersRunningNow() {
  long looks[3];
  for (int i = 0; i < 3; ++i) {
    if (i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if ((looks[i] = planc::runtime::runningTasks()) < 0) return -1;
  }
  std::sort(std::begin(looks), std::end(looks));
  return std::max(0L, looks[1] - 1);
}

/// One turn of the wait loop as libgomp spins it: a load and a pause.
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  __asm__ __volatile__("" ::: "memory");
#endif
}

/// The turns of libgomp's wait loop that take kSpinSeconds on this core
/// (a pause costs about 3 ns on some x86 cores, 40 ns on others): the best
/// of five rounds, so that a round the scheduler interrupted does not count.
long spinTurnsHere() {
  std::atomic<int> flag{0};
  double best = 1;
  for (int round = 0; round < 5; ++round) {
    const auto begin = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000 && flag.load(std::memory_order_relaxed) == 0; ++i) relax();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() / 1000);
  }
  // Between libgomp's own shortest (100, when its threads outnumber the
  // cores) and its default (300,000).
  return std::clamp(long(planc::runtime::kSpinSeconds / std::max(best, 1e-10)), 100L, 300000L);
}

/// A count for a message: "1 rank", "2 threads".
std::string count(long n, const char *what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

} // namespace

planc::runtime::BlasThreading planc::runtime::blasThreading() {
  if (!openblas_get_parallel) return BlasThreading::None;
  switch (openblas_get_parallel()) {
  case 0: return BlasThreading::Sequential;
  case 2: return BlasThreading::OpenMP;
  default: return BlasThreading::Pthreads;
  }
}

planc::runtime::OpenMPRuntime planc::runtime::openmpRuntime() {
  if (kmp_get_blocktime) return OpenMPRuntime::LLVM;
  return omp_get_max_threads ? OpenMPRuntime::GNU : OpenMPRuntime::None;
}

long planc::runtime::localRanks() {
  for (const char *v : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"})
    if (const char *s = std::getenv(v))
      if (long n = std::strtol(s, nullptr, 10); n > 0) return n;
  return 1;
}

long planc::runtime::kernelThreads() { return omp_get_max_threads ? std::max(1, omp_get_max_threads()) : 1; }

planc::runtime::ThreadPoolContext planc::runtime::currentThreadPoolContext(long threadsOption) {
  ThreadPoolContext c;
  c.blas = blasThreading();
  c.openmp = openmpRuntime();
  c.localRanks = localRanks();
  c.threads = threadsOption > 0 ? threadsOption : ompNumThreads() > 0 ? ompNumThreads() : allowedCores();
  c.cores = onlineCores();
  c.userWaits = isSet("OMP_WAIT_POLICY") || isSet("GOMP_SPINCOUNT") || isSet("KMP_BLOCKTIME");
  c.userBlasTimeout = isSet("OPENBLAS_THREAD_TIMEOUT");
  if (!c.userWaits && c.blas == BlasThreading::OpenMP) {
    // This job's other ranks on the node are starting too: they are not
    // other work.
    c.othersRunning = std::max(0L, othersRunningNow() - (c.localRanks - 1));
    c.spinTurns = spinTurnsHere();
  }
  return c;
}

bool planc::runtime::oversubscribed(const ThreadPoolContext &c) {
  return c.localRanks * c.threads + c.othersRunning > c.cores;
}

planc::runtime::ThreadPoolChoice planc::runtime::chooseThreadPools(const ThreadPoolContext &c) {
  ThreadPoolChoice out;
  if (c.blas != BlasThreading::OpenMP) {
    // Two pools: OpenMP threads spinning between kernels slow the GEMMs,
    // and OpenBLAS's threads spin about 0.1 s after every GEMM beside the
    // kernels.
    if (!c.userWaits) out.settings.push_back("OMP_WAIT_POLICY=passive");
    if (!c.userBlasTimeout) out.settings.push_back("OPENBLAS_THREAD_TIMEOUT=4");
    out.why = c.userWaits ? "as the environment sets them (OpenBLAS's own threads beside OpenMP's)"
                          : "passive (OpenBLAS's own threads beside OpenMP's: two pools would take each "
                            "other's cores)";
    return out;
  }
  // One pool: the GEMMs run on the kernels' threads, and a thread that spins
  // a moment starts the next small kernel at once (tiny-gpt: 3.7x the steps
  // a second of passive waits). But a thread that spins while the cores are
  // shared keeps a core from the work it waits for: on a machine with other
  // load, OpenMP's default spin of milliseconds made a step 10-15x slower.
  if (c.userWaits) {
    out.why = "as the environment sets them";
    return out;
  }
  const std::string load = "at start-up " + count(c.localRanks, "rank") + " x " + count(c.threads, "thread") +
                           " and " + count(c.othersRunning, "other running task");
  const std::string cores = " the " + count(c.cores, "core");
  if (oversubscribed(c)) {
    out.settings.push_back("OMP_WAIT_POLICY=passive");
    out.why = "passive: " + load + " oversubscribed" + cores;
    return out;
  }
  if (c.openmp == OpenMPRuntime::LLVM) {
    out.settings.push_back("KMP_BLOCKTIME=1"); // milliseconds: libomp's shortest spin
    out.why = "spin 1 ms, then sleep: " + load + " fit" + cores;
  } else {
    out.settings.push_back("GOMP_SPINCOUNT=" + std::to_string(c.spinTurns));
    out.why = "spin " + std::to_string(c.spinTurns) + " turns, about " + std::to_string(int(kSpinSeconds * 1e6)) +
              " us, then sleep: " + load + " fit" + cores;
  }
  return out;
}

void planc::runtime::settleThreadPools(char **argv, long threadsOption) {
  if (!argv || !argv[0]) return;
  if (isSet(kChoiceVariable)) {
    // Started again: /proc/self/exe named the process "exe"; its name is
    // what it was started as (at most 15 bytes, as the kernel keeps it).
    const char *slash = std::strrchr(argv[0], '/');
    ::prctl(PR_SET_NAME, slash ? slash + 1 : argv[0], 0, 0, 0);
    return;
  }
  const ThreadPoolChoice choice = chooseThreadPools(currentThreadPoolContext(threadsOption));
  ::setenv(kChoiceVariable, choice.why.c_str(), 1);
  if (choice.settings.empty()) return;
  for (const std::string &s : choice.settings) {
    const size_t eq = s.find('=');
    ::setenv(s.substr(0, eq).c_str(), s.substr(eq + 1).c_str(), 1);
  }
  ::execv("/proc/self/exe", argv);
  // Not started again: the libraries keep the values they read.
  for (const std::string &s : choice.settings) ::unsetenv(s.substr(0, s.find('=')).c_str());
  ::setenv(kChoiceVariable, "OpenMP's defaults (the executable could not start itself again to change them)", 1);
}

std::string planc::runtime::threadPoolsWhy() {
  const char *why = std::getenv(kChoiceVariable);
  return why ? why : "";
}

bool planc::runtime::threadsSpin(OpenMPRuntime runtime, const char *waitPolicy, const char *spinCount,
                                 const char *blockTime) {
  const bool passive = waitPolicy && ::strcasecmp(waitPolicy, "passive") == 0; // OpenMP ignores the case
  switch (runtime) {
  case OpenMPRuntime::None: return false;
  case OpenMPRuntime::LLVM: return blockTime ? std::strtol(blockTime, nullptr, 10) != 0 : !passive;
  case OpenMPRuntime::GNU: return spinCount ? std::strtoll(spinCount, nullptr, 10) != 0 : !passive;
  }
  return false;
}

bool planc::runtime::waitingThreadsSpin() {
  return threadsSpin(openmpRuntime(), std::getenv("OMP_WAIT_POLICY"), std::getenv("GOMP_SPINCOUNT"),
                     std::getenv("KMP_BLOCKTIME"));
}

const char *planc::runtime::threadPoolsHelp() {
  return "Threads: the kernels' loops and the GEMMs share OpenMP's threads (--threads). Between kernels a\n"
         "waiting thread spins about 50 us, so that the next kernel starts at once, then sleeps; when the\n"
         "cores are oversubscribed at start-up (ranks x threads + other running tasks > cores) it sleeps at\n"
         "once, so that it does not keep a core from the work it waits for. OMP_WAIT_POLICY=passive (always\n"
         "sleep: a shared machine) or active (always spin: a machine to itself), GOMP_SPINCOUNT and\n"
         "KMP_BLOCKTIME choose otherwise and are never changed. A run whose steps take far longer than the\n"
         "step predicted at build time says so in its log, and why.\n";
}
