//===- tests/unit/runtime/ThreadPoolsTest.cpp - how the thread pools wait ---===//

#include "runtime/ThreadPools.h"

#include <gtest/gtest.h>

using namespace planc::runtime;

namespace {

using Settings = std::vector<std::string>;

ThreadPoolContext context(BlasThreading blas, long localRanks = 1) {
  ThreadPoolContext c;
  c.blas = blas;
  c.localRanks = localRanks;
  return c;
}

TEST(ThreadPoolsTest, OneOpenMPPoolKeepsOpenMPsDefaultWait) {
  EXPECT_EQ(threadPoolSettings(context(BlasThreading::OpenMP)), Settings{});
}

TEST(ThreadPoolsTest, RanksSharingTheNodeWaitPassively) {
  EXPECT_EQ(threadPoolSettings(context(BlasThreading::OpenMP, 4)), Settings{"OMP_WAIT_POLICY=passive"});
  ThreadPoolContext c = context(BlasThreading::OpenMP, 4);
  c.userWaitPolicy = true;
  EXPECT_EQ(threadPoolSettings(c), Settings{});
}

TEST(ThreadPoolsTest, TwoPoolsStopSpinningUnlessTheUserSaidOtherwise) {
  const Settings both{"OMP_WAIT_POLICY=passive", "OPENBLAS_THREAD_TIMEOUT=4"};
  EXPECT_EQ(threadPoolSettings(context(BlasThreading::Pthreads)), both);
  EXPECT_EQ(threadPoolSettings(context(BlasThreading::None)), both);
  ThreadPoolContext c = context(BlasThreading::Pthreads);
  c.userBlasTimeout = true;
  EXPECT_EQ(threadPoolSettings(c), Settings{"OMP_WAIT_POLICY=passive"});
  c.userWaitPolicy = true;
  EXPECT_EQ(threadPoolSettings(c), Settings{});
}

TEST(ThreadPoolsTest, AProcessWithoutOpenBLASSaysSo) {
  // The unit tests link no OpenBLAS: the weak reference is null.
  EXPECT_EQ(blasThreading(), BlasThreading::None);
}

} // namespace
