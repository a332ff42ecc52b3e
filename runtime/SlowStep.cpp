//===- runtime/SlowStep.cpp - the warning of steps far slower than predicted -===//

#include "runtime/SlowStep.h"
#include "runtime/CpuLoad.h"
#include "runtime/ThreadPools.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

using namespace planc::runtime;

namespace {

/// "152 ms", "4.5 ms", "2.61 s", "85 us".
std::string duration(double s) {
  char buf[32];
  if (s >= 1) std::snprintf(buf, sizeof buf, "%.3g s", s);
  else if (s >= 1e-3) std::snprintf(buf, sizeof buf, "%.3g ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.3g us", s * 1e6);
  return buf;
}

std::string cores(double n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", n);
  return buf;
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

} // namespace

std::string planc::runtime::slowStepWarning(const StepMachine &m, const StepWindow &w) {
  const int64_t steps = w.lastStep - w.firstStep + 1;
  if (m.predictedSeconds <= 0 || steps <= 0) return "";
  const double perStep = w.stepSeconds / double(steps);
  const double factor = perStep / m.predictedSeconds;
  if (!(factor >= kSlowFactor)) return "";
  char head[32];
  std::snprintf(head, sizeof head, factor >= 100 ? "%.0fx" : "%.1fx", factor);
  std::string line = "warning: " +
                     (steps == 1 ? "step " + std::to_string(w.firstStep)
                                 : "steps " + std::to_string(w.firstStep) + "-" + std::to_string(w.lastStep)) +
                     " took " + duration(perStep) + " a step, " + head + " the " + duration(m.predictedSeconds) +
                     " predicted at build time" + (m.basis.empty() ? "" : " (" + m.basis + ")") + ": ";
  const std::string total = " of the " + std::to_string(m.cores) + " core" + (m.cores == 1 ? "" : "s");
  const std::string waits = m.waits.empty() ? "" : " (" + m.waits + ")";
  // The job's other ranks on this machine are the rest of the machine too:
  // each is counted as busy as this one.
  const double ranks = double(std::max(1L, m.localRanks));
  const double outside = std::max(0.0, w.otherCores - (ranks - 1) * w.ownCores);
  if (w.otherCores >= 0 && outside >= 0.5) {
    line += "other processes kept " + cores(outside) + total + " busy (" +
            (m.localRanks > 1 ? "this job's " + std::to_string(m.localRanks) + " ranks used about "
                              : std::string("this one used ")) +
            cores(w.ownCores * ranks) + ")";
    if (m.threads == 1) return line + "; with its one thread, only a machine to itself helps";
    if (m.waitsSpin)
      return line + "; its waiting threads spin" + waits +
             ", which keeps cores from the work they wait for: OMP_WAIT_POLICY=passive makes them sleep at once";
    return line + "; its waiting threads sleep" + waits +
           ": fewer threads (--threads) or a machine to itself are what is left";
  }
  if (m.localRanks * m.threads > m.cores)
    return line + std::to_string(m.localRanks) + " ranks x " + std::to_string(m.threads) + " threads outnumber the " +
           std::to_string(m.cores) + " cores: fewer threads a rank (--threads) or fewer ranks a machine fit them";
  const double usable = double(std::min(m.threads, m.cores));
  if (w.ownCores < 0.5 * usable)
    return line + "the cores were free, but this process used " + cores(w.ownCores) + total +
           ": it waited (for other ranks, for I/O, or it was stopped)";
  const std::string threads = std::to_string(m.threads) + " thread" + (m.threads == 1 ? "" : "s");
  return line + "its " + threads + " had the cores (this process used " + cores(w.ownCores) + total +
         "): this machine, with " + threads + ", is slower than the one predicted for; `planc calibrate` measures "
         "it and `planc check --calibration` predicts for it";
}

StepMachine planc::runtime::thisMachine(double predictedSeconds, std::string basis) {
  StepMachine m;
  m.predictedSeconds = predictedSeconds;
  m.basis = std::move(basis);
  m.threads = kernelThreads();
  m.cores = onlineCores();
  m.localRanks = localRanks();
  m.waitsSpin = waitingThreadsSpin();
  m.waits = threadPoolsWhy();
  return m;
}

void SlowStepMonitor::beforeStep(int64_t step) {
  window_.lastStep = step;
  if (!warmedUp_ || open_ || warned_ || machine_.predictedSeconds <= 0) return;
  open_ = true;
  window_ = StepWindow{};
  window_.firstStep = window_.lastStep = step;
  wallStart_ = now();
  cpuStart_ = processCpuSeconds();
  busyStart_ = machineBusySeconds();
}

std::string SlowStepMonitor::afterStep(double stepSeconds) {
  if (!warmedUp_) {
    warmedUp_ = true; // the first step starts the threads and touches the arena
    return "";
  }
  if (!open_) return "";
  window_.stepSeconds += stepSeconds;
  if (window_.stepSeconds < kWindowSeconds) return "";
  open_ = false;
  const double wall = std::max(now() - wallStart_, 1e-9);
  window_.ownCores = (processCpuSeconds() - cpuStart_) / wall;
  const double busy = machineBusySeconds();
  if (busy >= 0 && busyStart_ >= 0)
    window_.otherCores = std::max(0.0, (busy - busyStart_) / wall - window_.ownCores);
  std::string warning = slowStepWarning(machine_, window_);
  warned_ = !warning.empty();
  return warning;
}
