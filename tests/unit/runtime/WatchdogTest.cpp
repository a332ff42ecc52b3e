//===- tests/unit/runtime/WatchdogTest.cpp - a limit on a blocking call ---===//

#include "runtime/Watchdog.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using namespace planc::runtime;

namespace {

// A call still running at the limit: the process ends with status 1 and the message.
TEST(WatchdogDeathTest, EndsTheProcessAtTheLimit) {
  EXPECT_EXIT(
      {
        Watchdog limit(0.05, "rank 1, shutdown after step 9: MPI_Finalize: waited 0 s for rank 0");
        std::this_thread::sleep_for(std::chrono::seconds(30));
      },
      testing::ExitedWithCode(1), "^error: rank 1, shutdown after step 9: MPI_Finalize: waited 0 s for rank 0\n$");
}

// A call that returns in time: nothing happens, and the watchdog does not hold it up.
TEST(WatchdogTest, QuietWhenTheCallReturnsInTime) {
  auto begin = std::chrono::steady_clock::now();
  {
    Watchdog limit(60, "never printed");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count(), 30.0);
  // No limit at all: no thread.
  { Watchdog none(0, "never printed"); }
}

} // namespace
