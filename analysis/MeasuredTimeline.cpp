//===- analysis/MeasuredTimeline.cpp - one step of a run's trace ----------===//

#include "analysis/MeasuredTimeline.h"
#include "support/Plural.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>

using namespace planc::pipeline;

namespace {

struct Event {
  int64_t rank = 0, stream = 0, step = 0;
  double start = 0, end = 0;
  std::string name, category, work, what;
  int microBatch = -1, chunk = 0;
};

llvm::Error traceError(llvm::StringRef path, const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), path + ": " + why);
}

/// An integer held as a string in the event's args ("step": "3"); `otherwise` when absent.
std::optional<int64_t> intArg(const llvm::json::Object *args, llvm::StringRef key, int64_t otherwise) {
  if (!args) return otherwise;
  auto text = args->getString(key);
  if (!text) return otherwise;
  int64_t v;
  if (text->getAsInteger(10, v)) return std::nullopt;
  return v;
}

} // namespace

llvm::Expected<MeasuredTimeline> planc::pipeline::readMeasuredTimeline(llvm::StringRef path, int64_t numRanks) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) return traceError(path, "cannot read the trace: " + buffer.getError().message());
  auto document = llvm::json::parse((*buffer)->getBuffer());
  if (!document) return traceError(path, "not a trace (JSON): " + llvm::toString(document.takeError()));
  const llvm::json::Object *root = document->getAsObject();
  const llvm::json::Array *list = root ? root->getArray("traceEvents") : nullptr;
  if (!list) return traceError(path, "not a trace: no \"traceEvents\" list (write one with ./model --trace FILE)");

  std::vector<Event> events;
  for (size_t i = 0; i < list->size(); ++i) {
    const llvm::json::Object *e = (*list)[i].getAsObject();
    if (!e) return traceError(path, "trace event " + llvm::Twine(i) + " is not an object");
    if (e->getString("ph") != llvm::StringRef("X")) continue; // metadata: names of ranks and streams
    auto pid = e->getInteger("pid"), tid = e->getInteger("tid");
    auto ts = e->getNumber("ts"), dur = e->getNumber("dur");
    if (!pid || !tid || !ts || !dur || *dur < 0)
      return traceError(path, "trace event " + llvm::Twine(i) + " lacks pid, tid, ts or dur");
    const llvm::json::Object *args = e->getObject("args");
    auto step = intArg(args, "step", -1), micro = intArg(args, "micro_batch", -1), chunk = intArg(args, "chunk", 0);
    if (!step || !micro || !chunk || *step < 0)
      return traceError(path, "trace event " + llvm::Twine(i) + " names no training step (args.step)");
    Event ev;
    ev.rank = *pid;
    ev.stream = *tid;
    ev.step = *step;
    ev.start = *ts;
    ev.end = *ts + *dur;
    ev.name = e->getString("name").getValueOr("").str();
    ev.category = e->getString("cat").getValueOr("").str();
    if (args) {
      ev.work = args->getString("work").getValueOr("").str();
      ev.what = args->getString("step_of_plan").getValueOr("").str();
    }
    ev.microBatch = int(*micro);
    ev.chunk = int(*chunk);
    events.push_back(std::move(ev));
  }
  if (events.empty()) return traceError(path, "the trace holds no events");

  // The ranks, and the steps each recorded.
  std::map<int64_t, std::set<int64_t>> stepsOf;
  for (const Event &e : events) stepsOf[e.rank].insert(e.step);
  const int64_t lowest = stepsOf.begin()->first, highest = stepsOf.rbegin()->first, held = int64_t(stepsOf.size());
  if (held != numRanks || lowest != 0 || highest != numRanks - 1) {
    std::string what = "the trace holds " + counted(held, "rank");
    if (lowest != 0 || highest != held - 1)
      what += " numbered " + std::to_string(lowest) + " to " + std::to_string(highest);
    return traceError(path, what + "; the plan's mesh has " + std::to_string(numRanks) + " (a trace of another plan?)");
  }
  std::set<int64_t> common = stepsOf.begin()->second;
  for (const auto &[rank, steps] : stepsOf) {
    std::set<int64_t> both;
    std::set_intersection(common.begin(), common.end(), steps.begin(), steps.end(), std::inserter(both, both.end()));
    common = std::move(both);
  }
  if (common.empty()) return traceError(path, "no training step was recorded by every rank");

  MeasuredTimeline t;
  t.file = path.str();
  t.step = *common.rbegin();
  t.stepsTraced = int64_t(common.size());
  double origin = 0, last = 0;
  bool first = true;
  for (const Event &e : events)
    if (e.step == t.step) {
      origin = first ? e.start : std::min(origin, e.start);
      last = first ? e.end : std::max(last, e.end);
      first = false;
    }
  t.durationUs = last - origin;

  t.ranks.resize(size_t(numRanks));
  for (int64_t r = 0; r < numRanks; ++r) t.ranks[size_t(r)].rank = r;
  std::stable_sort(events.begin(), events.end(), [](const Event &a, const Event &b) { return a.start < b.start; });
  for (const Event &e : events) {
    if (e.step != t.step) continue;
    MeasuredRank &rank = t.ranks[size_t(e.rank)];
    MeasuredSpan s;
    s.startUs = e.start - origin;
    s.endUs = e.end - origin;
    s.microBatch = e.microBatch;
    s.chunk = e.chunk;
    if (e.stream != 0) {
      s.kind = e.category.empty() ? "collective" : e.category;
      s.label = e.name + (e.what.empty() ? "" : ": " + e.what);
      rank.communication.push_back(std::move(s));
      continue;
    }
    s.kind = e.category == "wait" ? "wait" : e.work.empty() ? "compute" : e.work;
    s.label = s.kind == "wait" ? "wait" : s.kind + (s.microBatch >= 0 ? ", micro-batch " + std::to_string(s.microBatch)
                                                                       : std::string(", once per step"));
    s.kernels = s.kind == "wait" ? 0 : 1;
    // A kernel of the section the last span is in extends that span.
    if (!rank.compute.empty() && s.kind != "wait") {
      MeasuredSpan &prev = rank.compute.back();
      if (prev.kind == s.kind && prev.microBatch == s.microBatch && prev.chunk == s.chunk) {
        prev.endUs = std::max(prev.endUs, s.endUs);
        ++prev.kernels;
        continue;
      }
    }
    rank.compute.push_back(std::move(s));
  }
  return t;
}
