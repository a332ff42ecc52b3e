//===- runtime/SlowStep.h - the warning of steps far slower than predicted -*- C++ -*-===//
//
// `planc build` writes into the executable the step time the cost model
// predicts for the plan's device (docs/cost.md). A run whose steps take
// several times that is rarely slow code: other work has the cores (and
// threads that spin while they wait give it more of them), the job's own
// threads outnumber the cores, the process waited, or the machine is slower
// than the one predicted for. The executable measures its steps in windows
// of at least kWindowSeconds (not the first step, which touches the arena's
// pages and starts the threads) with the CPU time this process and the whole
// machine used meanwhile, and the first window slower than kSlowFactor times
// the prediction gets one line in the step log that says which:
//
//   warning: steps 1-40 took 152 ms a step, 33.8x the 4.5 ms predicted at build time (defaults
//   for CPUs): other processes kept 1.6 of the 2 cores busy (this one used 0.4); ...
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_SLOWSTEP_H
#define PLANC_RUNTIME_SLOWSTEP_H

#include <cstdint>
#include <string>
#include <utility>

namespace planc::runtime {

/// A step this many times the prediction is far slower: well past what the
/// cost model misses on an idle machine (bench/cost-vs-run.sh: within 1.4x
/// calibrated; the defaults for CPUs 1.5x on the development machine).
inline constexpr double kSlowFactor = 4;

/// The shortest stretch of steps judged at once: long enough that the CPU
/// times measured over it mean something, short enough to warn early.
inline constexpr double kWindowSeconds = 1;

/// The process and its machine, as the warning describes them.
struct StepMachine {
  double predictedSeconds = 0; ///< a step, at build time; 0: no prediction (never a warning)
  std::string basis;           ///< what the prediction assumed ("defaults for CPUs")
  long threads = 1;            ///< this process's kernel threads
  long cores = 1;              ///< the machine's
  long localRanks = 1;         ///< the job's ranks on this machine
  bool waitsSpin = false;      ///< waiting threads spin before they sleep
  std::string waits;           ///< how they wait and why (ThreadPools.h threadPoolsWhy)
};

/// This process and machine now (ThreadPools.h, CpuLoad.h), with the
/// prediction the executable carries.
StepMachine thisMachine(double predictedSeconds, std::string basis);

/// A stretch of consecutive steps and what the cores did meanwhile.
struct StepWindow {
  int64_t firstStep = 0, lastStep = 0;
  double stepSeconds = 0;  ///< the steps' wall time, summed
  double ownCores = 0;     ///< this process's CPU time over the stretch's wall time
  double otherCores = -1;  ///< the rest of the machine's busy CPU time over it (the job's other
                           ///< ranks included); < 0: unknown
};

/// The warning `window` deserves on `machine`, or "" when its steps took
/// less than kSlowFactor times the prediction.
std::string slowStepWarning(const StepMachine &machine, const StepWindow &window);

/// Watches a run's steps: call beforeStep and afterStep around each; the
/// first window that deserves it returns its warning, once per run.
class SlowStepMonitor {
public:
  explicit SlowStepMonitor(StepMachine machine) : machine_(std::move(machine)) {}
  void beforeStep(int64_t step);
  std::string afterStep(double stepSeconds);

private:
  StepMachine machine_;
  bool warmedUp_ = false, open_ = false, warned_ = false;
  StepWindow window_;
  double wallStart_ = 0, cpuStart_ = 0, busyStart_ = -1;
};

} // namespace planc::runtime

#endif
