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

} // namespace

llvm::Expected<Simulation> pipeline::simulate(const PipelineSchedule &s) {
  int p = int(s.ranks.size());
  Simulation sim;
  sim.ticksPerUnit = s.options.virtualStages;
  sim.timelines.resize(p);
  sim.busy.assign(p, 0);
  std::vector<int64_t> clock(p, 0);
  std::vector<size_t> next(p, 0);
  std::map<MessageKey, int64_t> sentAt;

  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < p; ++r) {
      while (next[r] < s.ranks[r].size()) {
        const Instr &i = s.ranks[r][next[r]];
        int64_t start = clock[r];
        if (i.kind == InstrKind::RecvAct || i.kind == InstrKind::RecvGrad) {
          auto it = sentAt.find(keyOf(i, r, s));
          if (it == sentAt.end()) break; // not sent yet: another rank must go first
          start = std::max(start, it->second);
        } else if (i.kind == InstrKind::SendAct || i.kind == InstrKind::SendGrad) {
          sentAt[keyOf(i, r, s)] = start;
        }
        int64_t cost = i.isCompute() ? costInTicks(s.options, i.kind) : 0;
        sim.timelines[r].push_back(TimedInstr{i, start, start + cost});
        sim.busy[r] += cost;
        clock[r] = start + cost;
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
  if (!stuck.empty())
    return makeError("the pipeline schedule deadlocks: " + stuck);
  sim.stepTime = *std::max_element(clock.begin(), clock.end());
  return sim;
}
