//===- runtime/Trace.cpp - Chrome trace-event JSON -----------------------===//

#include "runtime/Trace.h"
#include "runtime/AtomicFile.h"

#include <nlohmann/json.hpp>

#include <set>

using namespace planc::runtime;
using Json = nlohmann::json;

std::string TraceWriter::json() const {
  Json list = Json::array();
  std::set<int64_t> ranks;
  std::set<std::pair<int64_t, int64_t>> streams;
  for (const TraceEvent &e : events) {
    ranks.insert(e.rank);
    streams.insert({e.rank, e.stream});
  }
  for (int64_t r : ranks)
    list.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r}, {"tid", 0},
                    {"args", {{"name", "rank " + std::to_string(r)}}}});
  for (const auto &[rank, stream] : streams)
    if (auto name = streamNames.find(stream); name != streamNames.end())
      list.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", stream},
                      {"args", {{"name", name->second}}}});
  for (const TraceEvent &e : events) {
    Json event = {{"name", e.name}, {"ph", "X"}, {"pid", e.rank}, {"tid", e.stream},
                  {"ts", e.startUs},  {"dur", e.durationUs}};
    if (!e.category.empty()) event["cat"] = e.category;
    if (!e.args.empty()) event["args"] = e.args;
    list.push_back(std::move(event));
  }
  return Json{{"traceEvents", list}, {"displayTimeUnit", "ms"}}.dump(1) + "\n";
}

Status TraceWriter::write(const std::string &path) const { return writeFileAtomically(path, json()); }
