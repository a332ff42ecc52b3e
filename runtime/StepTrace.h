//===- runtime/StepTrace.h - what each rank did, when (--trace) -*- C++ -*-===//
//
// The executable's --trace FILE: Chrome / Perfetto trace events of every
// rank, merged by rank 0 into one file (runtime/Trace.h writes it):
//
//   compute stream        every kernel call of the step, its category the
//                         kernel class (gemm, elementwise, ...); "wait" where
//                         the step waits for a communication to complete;
//                         both with the section of the step they ran in
//   communication stream  every collective, send and recv from its start to
//                         the moment a wait saw it complete
//
// Times are microseconds since the origin every rank takes right after a
// barrier at start, so ranks on one machine share a clock. Recording is
// off until startStepTrace(); the generated step asks tracing() before it
// reads the clock.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_STEPTRACE_H
#define PLANC_RUNTIME_STEPTRACE_H

#include "runtime/Trace.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace planc::runtime {

using TraceClock = std::chrono::steady_clock;

/// Starts recording for `rank` from now.
void startStepTrace(int64_t rank);
/// Stops recording; what was recorded stays.
void stopStepTrace();
bool tracing();
/// The step (0-based) the events that follow belong to.
void setTraceStep(int64_t step);
/// The section of the step the kernels and waits that follow belong to: the
/// work ("forward", "backward", "weight_grad", "optimizer"), the micro-batch
/// (-1: once per step) and the model chunk, recorded as their args "work",
/// "micro_batch" and "chunk" (planc emit --emit=schedule-svg --trace draws them).
void setTraceSection(const char *work, int microBatch, int chunk);

/// A kernel of class `kernelClass` (runtime/StepProfile.h kKernelClasses) named `name`.
void traceKernel(int kernelClass, const char *name, TraceClock::time_point begin, TraceClock::time_point end);
/// A communication from its start to its completion seen at `end`;
/// `category` "collective", "send" or "recv".
void traceCommunication(const std::string &name, const char *category, const std::string &what,
                        TraceClock::time_point begin, TraceClock::time_point end);
/// Time the step spent waiting for a communication.
void traceWait(const std::string &what, TraceClock::time_point begin, TraceClock::time_point end);

/// The events recorded so far (this rank's).
const std::vector<TraceEvent> &tracedEvents();

/// Events as JSON lines and back: how ranks send theirs to rank 0.
std::string encodeTraceEvents(const std::vector<TraceEvent> &events);
Result<std::vector<TraceEvent>> decodeTraceEvents(const std::string &text);

} // namespace planc::runtime

#endif
