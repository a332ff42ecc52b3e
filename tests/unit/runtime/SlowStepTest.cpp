//===- tests/unit/runtime/SlowStepTest.cpp - the warning of slow steps ----===//

#include "runtime/SlowStep.h"

#include <gtest/gtest.h>

using namespace planc::runtime;

namespace {

/// tiny-gpt's prediction on the 2-core development machine, one rank of 2
/// threads that spin before they sleep.
StepMachine machine() {
  StepMachine m;
  m.predictedSeconds = 4.5e-3;
  m.basis = "defaults for CPUs";
  m.threads = 2;
  m.cores = 2;
  m.waitsSpin = true;
  m.waits = "spin 1250 turns, about 50 us, then sleep";
  return m;
}

StepWindow window(double perStep, double ownCores, double otherCores) {
  StepWindow w;
  w.firstStep = 1;
  w.lastStep = 40;
  w.stepSeconds = 40 * perStep;
  w.ownCores = ownCores;
  w.otherCores = otherCores;
  return w;
}

TEST(SlowStepTest, StepsNearThePredictionAreNotWarnedAbout) {
  EXPECT_EQ(slowStepWarning(machine(), window(4.5e-3 * 3.9, 0.4, 1.6)), "");
  StepMachine none = machine();
  none.predictedSeconds = 0; // a plan for another device: nothing to compare with
  EXPECT_EQ(slowStepWarning(none, window(10, 0.1, 1.9)), "");
}

TEST(SlowStepTest, OtherProcessesHaveTheCoresAndTheThreadsSpin) {
  EXPECT_EQ(slowStepWarning(machine(), window(0.152, 0.42, 1.58)),
            "warning: steps 1-40 took 152 ms a step, 33.8x the 4.5 ms predicted at build time (defaults for CPUs): "
            "other processes kept 1.6 of the 2 cores busy (this one used 0.4); its waiting threads spin (spin 1250 "
            "turns, about 50 us, then sleep), which keeps cores from the work they wait for: OMP_WAIT_POLICY=passive "
            "makes them sleep at once");
}

TEST(SlowStepTest, OtherProcessesHaveTheCoresAndTheThreadsSleep) {
  StepMachine m = machine();
  m.waitsSpin = false;
  m.waits = "passive: at start-up 1 rank x 2 threads and 1 other running task oversubscribed the 2 cores";
  std::string w = slowStepWarning(m, window(0.03, 0.8, 1.2));
  EXPECT_NE(w.find("6.7x the 4.5 ms"), std::string::npos) << w;
  EXPECT_NE(w.find("other processes kept 1.2 of the 2 cores busy (this one used 0.8); its waiting threads sleep "
                   "(passive: at start-up 1 rank x 2 threads and 1 other running task oversubscribed the 2 cores): fewer "
                   "threads (--threads) or a machine to itself are what is left"),
            std::string::npos)
      << w;
}

TEST(SlowStepTest, OtherProcessesHaveTheCoresOfOneThread) {
  StepMachine m = machine();
  m.threads = 1; // nothing waits for another thread
  std::string w = slowStepWarning(m, window(0.5, 0.02, 1.1));
  EXPECT_NE(w.find("other processes kept 1.1 of the 2 cores busy (this one used 0.0); with its one thread, only a "
                   "machine to itself helps"),
            std::string::npos)
      << w;
}

TEST(SlowStepTest, TheJobsOwnThreadsOutnumberTheCores) {
  StepMachine m = machine();
  m.localRanks = 4;
  // The other three ranks used about as much as this one: not other work.
  std::string w = slowStepWarning(m, window(0.05, 0.45, 1.5));
  EXPECT_NE(w.find(": 4 ranks x 2 threads outnumber the 2 cores: fewer threads a rank (--threads) or fewer ranks a "
                   "machine fit them"),
            std::string::npos)
      << w;
}

TEST(SlowStepTest, OtherProcessesBesideTheJobsRanks) {
  StepMachine m = machine();
  m.localRanks = 2;
  m.threads = 1;
  std::string w = slowStepWarning(m, window(0.05, 0.3, 1.3));
  EXPECT_NE(w.find(": other processes kept 1.0 of the 2 cores busy (this job's 2 ranks used about 0.6)"),
            std::string::npos)
      << w;
}

TEST(SlowStepTest, TheProcessWaitedOnFreeCores) {
  std::string w = slowStepWarning(machine(), window(0.05, 0.1, 0.1));
  EXPECT_NE(w.find(": the cores were free, but this process used 0.1 of the 2 cores: it waited (for other ranks, for "
                   "I/O, or it was stopped)"),
            std::string::npos)
      << w;
}

TEST(SlowStepTest, TheMachineIsSlowerThanPredicted) {
  std::string w = slowStepWarning(machine(), window(0.05, 1.9, 0.1));
  EXPECT_NE(w.find(": its 2 threads had the cores (this process used 1.9 of the 2 cores): this machine, with 2 "
                   "threads, is slower than the one predicted for; `planc calibrate` measures it"),
            std::string::npos)
      << w;
  // One thread of two cores: the prediction is for the whole device.
  StepMachine one = machine();
  one.threads = 1;
  EXPECT_NE(slowStepWarning(one, window(0.05, 0.98, 0.1)).find("this machine, with 1 thread, is slower"),
            std::string::npos);
  // What the rest of the machine did is unknown (no /proc/stat): judged by
  // this process's own use.
  EXPECT_NE(slowStepWarning(machine(), window(0.05, 1.9, -1)).find("its 2 threads had the cores"), std::string::npos);
}

TEST(SlowStepTest, OneStepByItself) {
  StepWindow w = window(2.5, 2, 0);
  w.firstStep = w.lastStep = 7;
  w.stepSeconds = 2.5;
  EXPECT_EQ(slowStepWarning(machine(), w).rfind("warning: step 7 took 2.5 s a step, 556x the 4.5 ms", 0), 0u);
}

TEST(SlowStepTest, TheMonitorJudgesWindowsOfASecondAfterTheFirstStepAndWarnsOnce) {
  StepMachine m = machine();
  m.predictedSeconds = 0.01;
  SlowStepMonitor monitor(m);
  // The first step (threads starting, pages touched) is never judged.
  monitor.beforeStep(0);
  EXPECT_EQ(monitor.afterStep(5.0), "");
  // Steps 1-3 are 0.9 s: not a window yet; step 4 closes it at 1.2 s.
  for (int64_t step = 1; step <= 3; ++step) {
    monitor.beforeStep(step);
    EXPECT_EQ(monitor.afterStep(0.3), "");
  }
  monitor.beforeStep(4);
  std::string w = monitor.afterStep(0.3);
  EXPECT_EQ(w.rfind("warning: steps 1-4 took 300 ms a step, 30.0x the 10 ms predicted at build time (defaults for "
                    "CPUs): ",
                    0),
            0u)
      << w;
  // Once a run.
  for (int64_t step = 5; step <= 10; ++step) {
    monitor.beforeStep(step);
    EXPECT_EQ(monitor.afterStep(0.5), "");
  }
}

TEST(SlowStepTest, TheMonitorKeepsQuietWhereTheStepsKeepUp) {
  StepMachine m = machine();
  m.predictedSeconds = 0.2;
  SlowStepMonitor monitor(m);
  for (int64_t step = 0; step <= 20; ++step) {
    monitor.beforeStep(step);
    EXPECT_EQ(monitor.afterStep(0.25), "") << step;
  }
}

} // namespace
