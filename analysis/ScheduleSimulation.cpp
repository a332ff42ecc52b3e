//===- analysis/ScheduleSimulation.cpp - replay a pipeline schedule ---------===//
//
// Every rank runs its list in order. Sends do not block (the message waits in
// the receiver's buffer); a receive waits until the matching send was issued.
// That is the only wait, so the idle time of a rank is exactly what its
// schedule makes it wait for its neighbours.
//
//===----------------------------------------------------------------------===//

#include "analysis/PipelineSchedule.h"
#include "support/Error.h"

#include <algorithm>
#include <map>
#include <string>
#include <variant>
#include <tuple>

using namespace planc;
using namespace planc::pipeline;

int64_t Simulation::idleTime() const {
  int64_t idle = 0;
  for (int64_t b : busy) idle += stepTime - b;
  return idle;
}

double Simulation::bubbleFraction() const {
  if (stepTime == 0 || busy.empty()) return 0;
  return double(idleTime()) / (double(busy.size()) * double(stepTime));
}

namespace {

/// A message is named by its direction, micro-batch and the virtual stage
/// that receives it: unique within one step.
using MessageKey = std::tuple<bool, int, int>; // (gradient?, micro-batch, receiving stage)

MessageKey keyOf(const Instr &i, int rank, const PipelineSchedule &s) {
  int stage = s.virtualStage(rank, i.chunk);
  switch (i.kind) {
  case InstrKind::SendAct: return {false, i.microBatch, stage + 1};
  case InstrKind::RecvAct: return {false, i.microBatch, stage};
  case InstrKind::SendGrad: return {true, i.microBatch, stage - 1};
  default: return {true, i.microBatch, stage}; // RecvGrad
  }
}

/// The replay both simulations share: every rank runs its list in order; a
/// compute instruction takes cost(rank, instr); a message arrives
/// delay(rank of the sender, send) after its send was issued. `record` sees
/// every instruction with its start and end. Returns the ranks' clocks, or
/// the stuck ranks' description when the schedule deadlocks.
template <typename Time, typename Cost, typename Delay, typename Record>
std::variant<std::vector<Time>, std::string> replay(const PipelineSchedule &s, Cost cost, Delay delay, Record record) {
  int p = int(s.ranks.size());
  std::vector<Time> clock(size_t(p), Time(0));
  std::vector<size_t> next(size_t(p), 0);
  std::map<MessageKey, Time> arrivesAt;

  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < p; ++r) {
      while (next[r] < s.ranks[r].size()) {
        const Instr &i = s.ranks[r][next[r]];
        Time start = clock[r];
        if (i.kind == InstrKind::RecvAct || i.kind == InstrKind::RecvGrad) {
          auto it = arrivesAt.find(keyOf(i, r, s));
          if (it == arrivesAt.end()) break; // not sent yet: another rank must go first
          start = std::max(start, it->second);
        } else if (i.kind == InstrKind::SendAct || i.kind == InstrKind::SendGrad) {
          arrivesAt[keyOf(i, r, s)] = start + delay(r, i);
        }
        Time c = i.isCompute() ? cost(r, i) : Time(0);
        record(r, i, start, start + c);
        clock[r] = start + c;
        ++next[r];
        progress = true;
      }
    }
  }

  std::string stuck;
  for (int r = 0; r < p; ++r)
    if (next[r] < s.ranks[r].size())
      stuck += (stuck.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " at " +
               describe(s.ranks[r][next[r]], s.options);
  if (!stuck.empty()) return stuck;
  return clock;
}

} // namespace

llvm::Expected<Simulation> pipeline::simulate(const PipelineSchedule &s) {
  int p = int(s.ranks.size());
  Simulation sim;
  sim.ticksPerUnit = s.options.virtualStages;
  sim.timelines.resize(p);
  sim.busy.assign(p, 0);
  auto clocks = replay<int64_t>(
      s, [&](int, const Instr &i) { return costInTicks(s.options, i.kind); }, [](int, const Instr &) { return int64_t(0); },
      [&](int r, const Instr &i, int64_t start, int64_t end) {
        sim.timelines[r].push_back(TimedInstr{i, start, end});
        sim.busy[r] += end - start;
      });
  if (auto *stuck = std::get_if<std::string>(&clocks))
    return makeError("the pipeline schedule deadlocks: " + *stuck);
  const auto &clock = std::get<std::vector<int64_t>>(clocks);
  sim.stepTime = *std::max_element(clock.begin(), clock.end());
  return sim;
}

llvm::Expected<TimedReplay> pipeline::replayTimed(const PipelineSchedule &s,
                                                  llvm::function_ref<double(int, const Instr &)> cost,
                                                  llvm::function_ref<double(int, const Instr &)> delay) {
  TimedReplay t;
  size_t p = s.ranks.size();
  t.timelines.resize(p);
  t.busy.assign(p, 0.0);
  auto clocks = replay<double>(s, cost, delay, [&](int r, const Instr &i, double start, double end) {
    t.timelines[size_t(r)].push_back(TimedSpan{i, start, end});
    t.busy[size_t(r)] += end - start;
  });
  if (auto *stuck = std::get_if<std::string>(&clocks))
    return makeError("the pipeline schedule deadlocks: " + *stuck);
  t.finish = std::get<std::vector<double>>(clocks);
  t.stepTime = *std::max_element(t.finish.begin(), t.finish.end());
  return t;
}
