//===- analysis/InstructionTimes.h - when each schedule instruction starts -*- C++ -*-===//
//
// The replay of a pipeline schedule (analysis/PipelineSchedule.h) as a table
// the passes and the memory planner look placed ops up in.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_ANALYSIS_INSTRUCTIONTIMES_H
#define PLANC_ANALYSIS_INSTRUCTIONTIMES_H

#include "analysis/PipelineSchedule.h"
#include "analysis/Placement.h"

#include <cstdint>
#include <unordered_map>

namespace planc {

/// Start times of a schedule's compute instructions in its replay, by
/// (virtual stage, kind, micro-batch).
class InstructionTimes {
public:
  llvm::Error build(const pipeline::ScheduleOptions &so) {
    auto schedule = pipeline::buildSchedule(so);
    if (!schedule) return schedule.takeError();
    auto sim = pipeline::simulate(*schedule);
    if (!sim) return sim.takeError();
    stages = so.stages;
    weightGrad = so.style == pipeline::ScheduleStyle::ZeroBubble;
    for (size_t r = 0; r < sim->timelines.size(); ++r)
      for (const pipeline::TimedInstr &t : sim->timelines[r])
        if (t.instr.isCompute()) start[key(int(r) + t.instr.chunk * stages, t.instr.kind, t.instr.microBatch)] = t.start;
    return llvm::Error::success();
  }
  /// The start of `work` of micro-batch `mb` on virtual stage `vs`.
  int64_t of(int vs, Work work, int mb) const {
    if (work == Work::Optimizer) return INT64_MAX / 2;
    if (vs < 0) return -1;
    pipeline::InstrKind k = work == Work::Forward                     ? pipeline::InstrKind::Forward
                            : work == Work::WeightGrad && weightGrad ? pipeline::InstrKind::WeightGrad
                                                                      : pipeline::InstrKind::Backward;
    auto it = start.find(key(vs, k, mb));
    return it == start.end() ? 0 : it->second;
  }
  bool hasWeightGrad() const { return weightGrad; }

private:
  static int64_t key(int vs, pipeline::InstrKind kind, int mb) {
    return (int64_t(vs) * 8 + int64_t(kind)) * 1000003 + mb;
  }
  int stages = 1;
  bool weightGrad = false;
  std::unordered_map<int64_t, int64_t> start;
};

} // namespace planc

#endif
