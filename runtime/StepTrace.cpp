//===- runtime/StepTrace.cpp - what each rank did, when (--trace) ----------===//

#include "runtime/StepTrace.h"
#include "runtime/StepProfile.h"

#include <nlohmann/json.hpp>

#include <sstream>

using namespace planc::runtime;

namespace {

struct Recorder {
  bool on = false;
  int64_t rank = 0, step = 0;
  std::map<std::string, std::string> section; // setTraceSection's args
  TraceClock::time_point origin;
  std::vector<TraceEvent> events;
} recorder;

double microseconds(TraceClock::time_point t) {
  return std::chrono::duration<double, std::micro>(t - recorder.origin).count();
}

void record(std::string name, int64_t stream, std::string category, TraceClock::time_point begin,
            TraceClock::time_point end, std::map<std::string, std::string> args = {}) {
  TraceEvent e;
  e.name = std::move(name);
  e.rank = recorder.rank;
  e.stream = stream;
  e.startUs = microseconds(begin);
  e.durationUs = std::max(0.0, microseconds(end) - e.startUs);
  e.category = std::move(category);
  e.args = std::move(args);
  e.args["step"] = std::to_string(recorder.step);
  recorder.events.push_back(std::move(e));
}

} // namespace

void planc::runtime::startStepTrace(int64_t rank) {
  recorder.on = true;
  recorder.rank = rank;
  recorder.origin = TraceClock::now();
}

void planc::runtime::stopStepTrace() { recorder.on = false; }
bool planc::runtime::tracing() { return recorder.on; }
void planc::runtime::setTraceStep(int64_t step) { recorder.step = step; }

void planc::runtime::setTraceSection(const char *work, int microBatch, int chunk) {
  recorder.section = {{"work", work}, {"micro_batch", std::to_string(microBatch)}, {"chunk", std::to_string(chunk)}};
}

int64_t planc::runtime::kernelStart(StepProfile *profile) {
  if (!profile) return 0;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(TraceClock::now().time_since_epoch()).count();
}

void planc::runtime::kernelEnd(StepProfile *profile, int kernelClass, const char *name, int64_t start) {
  if (!profile) return;
  const TraceClock::time_point end = TraceClock::now();
  const TraceClock::time_point begin(std::chrono::duration_cast<TraceClock::duration>(std::chrono::nanoseconds(start)));
  profile->seconds[kernelClass] += std::chrono::duration<double>(end - begin).count();
  ++profile->calls[kernelClass];
  if (kernelClass != 0 && tracing()) traceKernel(kernelClass, name, begin, end); // 0: communication
}

void planc::runtime::traceKernel(int kernelClass, const char *name, TraceClock::time_point begin,
                                 TraceClock::time_point end) {
  if (!recorder.on) return;
  const char *cls = kernelClass >= 0 && kernelClass < kNumKernelClasses ? kKernelClasses[kernelClass] : "kernel";
  record(name, 0, cls, begin, end, recorder.section);
}

void planc::runtime::traceCommunication(const std::string &name, const char *category, const std::string &what,
                                        TraceClock::time_point begin, TraceClock::time_point end) {
  if (!recorder.on) return;
  record(name, 1, category, begin, end, {{"step_of_plan", what}});
}

void planc::runtime::traceWait(const std::string &what, TraceClock::time_point begin, TraceClock::time_point end) {
  if (!recorder.on) return;
  auto args = recorder.section;
  args["for"] = what;
  record("wait", 0, "wait", begin, end, std::move(args));
}

const std::vector<TraceEvent> &planc::runtime::tracedEvents() { return recorder.events; }

std::string planc::runtime::encodeTraceEvents(const std::vector<TraceEvent> &events) {
  std::string out;
  for (const TraceEvent &e : events) {
    nlohmann::json j = {{"name", e.name},   {"rank", e.rank}, {"stream", e.stream}, {"ts", e.startUs},
                        {"dur", e.durationUs}, {"cat", e.category}, {"args", e.args}};
    out += j.dump() + "\n";
  }
  return out;
}

Result<std::vector<TraceEvent>> planc::runtime::decodeTraceEvents(const std::string &text) {
  std::vector<TraceEvent> events;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return errorStatus("a trace event that is not JSON: " + line.substr(0, 80));
    TraceEvent e;
    e.name = j.value("name", std::string());
    e.rank = j.value("rank", int64_t(0));
    e.stream = j.value("stream", int64_t(0));
    e.startUs = j.value("ts", 0.0);
    e.durationUs = j.value("dur", 0.0);
    e.category = j.value("cat", std::string());
    if (j.contains("args") && j["args"].is_object())
      for (const auto &[k, v] : j["args"].items())
        if (v.is_string()) e.args[k] = v.get<std::string>();
    events.push_back(std::move(e));
  }
  return events;
}
