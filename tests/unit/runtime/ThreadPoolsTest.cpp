//===- tests/unit/runtime/ThreadPoolsTest.cpp - how the thread pools wait ---===//

#include "runtime/ThreadPools.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace planc::runtime;

namespace {

using Settings = std::vector<std::string>;

/// One rank of 2 threads on 2 free cores, as the development machine runs
/// a plan.
ThreadPoolContext context(BlasThreading blas, long localRanks = 1) {
  ThreadPoolContext c;
  c.blas = blas;
  c.localRanks = localRanks;
  c.threads = 2;
  c.cores = 2;
  c.spinTurns = 1234;
  return c;
}

TEST(ThreadPoolsTest, OneOpenMPPoolOnFreeCoresSpinsAFewMicroseconds) {
  ThreadPoolChoice choice = chooseThreadPools(context(BlasThreading::OpenMP));
  EXPECT_EQ(choice.settings, Settings{"GOMP_SPINCOUNT=1234"});
  EXPECT_EQ(choice.why, "spin 1234 turns, about 50 us, then sleep: at start-up 1 rank x 2 threads and 0 other "
                        "running tasks fit the 2 cores");
  // libomp counts its spin in milliseconds: its shortest.
  ThreadPoolContext llvm = context(BlasThreading::OpenMP);
  llvm.openmp = OpenMPRuntime::LLVM;
  EXPECT_EQ(chooseThreadPools(llvm).settings, Settings{"KMP_BLOCKTIME=1"});
}

TEST(ThreadPoolsTest, CoresOversubscribedAtStartUpWaitPassively) {
  // One busy process beside one rank that wants every core.
  ThreadPoolContext busy = context(BlasThreading::OpenMP);
  busy.othersRunning = 1;
  EXPECT_TRUE(oversubscribed(busy));
  ThreadPoolChoice choice = chooseThreadPools(busy);
  EXPECT_EQ(choice.settings, Settings{"OMP_WAIT_POLICY=passive"});
  EXPECT_EQ(choice.why, "passive: at start-up 1 rank x 2 threads and 1 other running task oversubscribed the 2 "
                        "cores");
  // Four ranks of two threads on two cores (mpirun --oversubscribe).
  EXPECT_EQ(chooseThreadPools(context(BlasThreading::OpenMP, 4)).settings, Settings{"OMP_WAIT_POLICY=passive"});
  // Two ranks bound to a core each, one thread apiece: the cores suffice.
  ThreadPoolContext bound = context(BlasThreading::OpenMP, 2);
  bound.threads = 1;
  EXPECT_FALSE(oversubscribed(bound));
  EXPECT_EQ(chooseThreadPools(bound).settings, Settings{"GOMP_SPINCOUNT=1234"});
  // One thread on two cores leaves room for one busy process, not two.
  ThreadPoolContext one = context(BlasThreading::OpenMP);
  one.threads = 1;
  one.othersRunning = 1;
  EXPECT_FALSE(oversubscribed(one));
  one.othersRunning = 2;
  EXPECT_TRUE(oversubscribed(one));
}

TEST(ThreadPoolsTest, WaitsTheUserSetAreNeverChanged) {
  ThreadPoolContext c = context(BlasThreading::OpenMP, 4);
  c.othersRunning = 3;
  c.userWaits = true;
  ThreadPoolChoice choice = chooseThreadPools(c);
  EXPECT_EQ(choice.settings, Settings{});
  EXPECT_EQ(choice.why, "as the environment sets them");
}

TEST(ThreadPoolsTest, TwoPoolsStopSpinningUnlessTheUserSaidOtherwise) {
  const Settings both{"OMP_WAIT_POLICY=passive", "OPENBLAS_THREAD_TIMEOUT=4"};
  EXPECT_EQ(chooseThreadPools(context(BlasThreading::Pthreads)).settings, both);
  EXPECT_EQ(chooseThreadPools(context(BlasThreading::None)).settings, both);
  ThreadPoolContext c = context(BlasThreading::Pthreads);
  c.userBlasTimeout = true;
  EXPECT_EQ(chooseThreadPools(c).settings, Settings{"OMP_WAIT_POLICY=passive"});
  c.userWaits = true;
  EXPECT_EQ(chooseThreadPools(c).settings, Settings{});
}

TEST(ThreadPoolsTest, WhetherWaitingThreadsSpin) {
  // libgomp: its spin count decides, else the policy (unset: it spins a while).
  EXPECT_TRUE(threadsSpin(OpenMPRuntime::GNU, nullptr, nullptr, nullptr));
  EXPECT_FALSE(threadsSpin(OpenMPRuntime::GNU, "PASSIVE", nullptr, nullptr));
  EXPECT_TRUE(threadsSpin(OpenMPRuntime::GNU, "active", nullptr, nullptr));
  EXPECT_TRUE(threadsSpin(OpenMPRuntime::GNU, "passive", "1234", nullptr));
  EXPECT_FALSE(threadsSpin(OpenMPRuntime::GNU, nullptr, "0", nullptr));
  EXPECT_TRUE(threadsSpin(OpenMPRuntime::GNU, nullptr, nullptr, "0")); // libomp's variable
  // libomp: its block time decides, else the policy.
  EXPECT_FALSE(threadsSpin(OpenMPRuntime::LLVM, nullptr, nullptr, "0"));
  EXPECT_TRUE(threadsSpin(OpenMPRuntime::LLVM, nullptr, nullptr, "1"));
  EXPECT_FALSE(threadsSpin(OpenMPRuntime::LLVM, "passive", "1000", nullptr));
  EXPECT_FALSE(threadsSpin(OpenMPRuntime::None, nullptr, nullptr, nullptr));
}

TEST(ThreadPoolsTest, AProcessWithoutOpenBLASSaysSo) {
  // The unit tests link no OpenBLAS: the weak reference is null.
  EXPECT_EQ(blasThreading(), BlasThreading::None);
}

TEST(ThreadPoolsTest, ThisProcesssThreadsAndCores) {
  EXPECT_EQ(currentThreadPoolContext(3).threads, 3); // --threads first
  ::setenv("OMP_NUM_THREADS", "5,2", 1);             // then OpenMP's first level
  ThreadPoolContext c = currentThreadPoolContext(0);
  ::unsetenv("OMP_NUM_THREADS");
  EXPECT_EQ(c.threads, 5);
  EXPECT_GE(c.cores, 1);
  EXPECT_GE(currentThreadPoolContext(0).threads, 1); // then its cores
}

} // namespace
