//===- runtime/Trace.h - a timeline of a run, for chrome://tracing -*- C++ -*-===//
//
// The steps a backend ran, as Chrome's trace-event format (the JSON that
// chrome://tracing and Perfetto open): one complete event ("ph": "X") per
// kernel or transfer, with its rank as the process and its stream as the
// thread, so each rank shows as one row per stream and overlap of compute
// and communication is visible. Times are microseconds from the run's start.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_TRACE_H
#define PLANC_RUNTIME_TRACE_H

#include "runtime/Status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace planc::runtime {

struct TraceEvent {
  std::string name;        // the op or kernel: "matmul", "all_reduce", ...
  int64_t rank = 0;        // the "pid"
  int64_t stream = 0;      // the "tid": 0 compute, 1 communication, ...
  double startUs = 0;      // "ts"
  double durationUs = 0;   // "dur"
  std::string category;    // "cat", optional: "forward", "backward", ...
  std::map<std::string, std::string> args; // shown when the event is selected
};

class TraceWriter {
public:
  void add(TraceEvent event) { events.push_back(std::move(event)); }
  /// Names a stream in the viewer ("compute", "communication"); unnamed ones show their number.
  void nameStream(int64_t stream, std::string name) { streamNames[stream] = std::move(name); }
  const std::vector<TraceEvent> &all() const { return events; }

  /// The JSON document: {"traceEvents": [...], "displayTimeUnit": "ms"}, the
  /// events in the order added, after metadata events naming each rank
  /// ("rank N") and each named stream of it.
  std::string json() const;
  /// Writes json() to `path` atomically (runtime/AtomicFile.h).
  Status write(const std::string &path) const;

private:
  std::vector<TraceEvent> events;
  std::map<int64_t, std::string> streamNames;
};

} // namespace planc::runtime

#endif
