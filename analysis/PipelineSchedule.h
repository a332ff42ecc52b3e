//===- analysis/PipelineSchedule.h - pipeline schedules as data ---*- C++ -*-===//
//
// A pipeline schedule is, for every pipeline rank, the list of instructions it
// issues in order: forward and backward work on one micro-batch and one model
// chunk, and the point-to-point messages between neighbouring stages. The
// schedule is data so that it can be printed, simulated, drawn and checked;
// the bubble fraction is measured by replaying it, not taken from a formula.
//
// Stages: with p ranks and v chunks per rank there are p*v virtual stages;
// chunk c of rank r is virtual stage c*p + r (Megatron's interleaving), so
// with v = 1 rank r is stage r.
//
// Costs (the unit is one whole stage's forward): a chunk's forward costs 1/v,
// its backward 2/v; zero-bubble splits the backward into the input gradient
// (B, 1) and the weight gradient (W, 1). Messages cost nothing here, so the
// simulation measures the schedule's own bubble.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_ANALYSIS_PIPELINESCHEDULE_H
#define PLANC_ANALYSIS_PIPELINESCHEDULE_H

#include "ir/TrainingKinds.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace planc::pipeline {

/// The styles, their spellings and the options of a schedule are the
/// plan's own (ir/TrainingKinds.h); a module records its own.
using planc::ScheduleOptions;
using planc::ScheduleStyle;

enum class InstrKind {
  Forward,    // F: a chunk's forward on one micro-batch
  Backward,   // B: the backward (zero-bubble: its input-gradient half)
  WeightGrad, // W: zero-bubble's weight-gradient half, free to run late
  SendAct,    // activations to the next stage
  RecvAct,    // activations from the previous stage
  SendGrad,   // input gradients to the previous stage
  RecvGrad,   // gradients from the next stage
};

struct Instr {
  InstrKind kind;
  int microBatch;
  int chunk;     // 0 <= chunk < v
  int peer = -1; // the other rank of a message; -1 for compute
  bool isCompute() const { return peer < 0; }
};

struct PipelineSchedule {
  ScheduleOptions options;
  std::vector<std::vector<Instr>> ranks; // ranks[r]: rank r's instructions in issue order
  int numVirtualStages() const { return options.stages * options.virtualStages; }
  int virtualStage(int rank, int chunk) const { return chunk * options.stages + rank; }
};

/// Builds the schedule. Errors name the offending values: p, m or v below 1,
/// v > 1 with a style other than interleaved, an interleaved m that is not a
/// multiple of p.
llvm::Expected<PipelineSchedule> buildSchedule(const ScheduleOptions &options);

/// A replay of the schedule. Times are in ticks: one tick is a chunk's
/// forward, so a whole stage's forward is ticksPerUnit = v ticks; integers
/// keep the bubble fractions exact.
struct TimedInstr {
  Instr instr;
  int64_t start, end; // end == start for messages
};

struct Simulation {
  int64_t ticksPerUnit = 1;
  std::vector<std::vector<TimedInstr>> timelines; // per rank, in issue order
  std::vector<int64_t> busy;                      // compute ticks per rank
  int64_t stepTime = 0;                           // the last rank's finish
  int64_t idleTime() const;                       // summed over ranks
  double bubbleFraction() const;                  // idle / (ranks x step time)
};

/// Replays every rank's list in order: work starts when the rank is free and
/// its message has arrived. Fails (naming the stuck ranks and instructions)
/// when no rank can go on, that is when the schedule deadlocks.
llvm::Expected<Simulation> simulate(const PipelineSchedule &schedule);

/// One instruction of a timed replay, in seconds.
struct TimedSpan {
  Instr instr;
  double start, end; // end == start for messages
};

/// A replay with real durations (the cost model's, analysis/CostModel.h).
struct TimedReplay {
  std::vector<std::vector<TimedSpan>> timelines; // per rank, in issue order
  std::vector<double> busy;                      // compute seconds per rank
  std::vector<double> finish;                    // when each rank's last instruction ends
  double stepTime = 0;                           // the last rank's finish
};

/// Replays the schedule as simulate() does, a compute instruction taking
/// cost(rank, instr) seconds and a message arriving delay(sender, send)
/// seconds after its send is issued.
llvm::Expected<TimedReplay> replayTimed(const PipelineSchedule &schedule,
                                        llvm::function_ref<double(int, const Instr &)> cost,
                                        llvm::function_ref<double(int, const Instr &)> delay);

/// The cost of one compute instruction, in ticks.
int64_t costInTicks(const ScheduleOptions &options, InstrKind kind);

/// "F(3)", "B(3, c1)", "send act(3) -> rank 1", ...
std::string describe(const Instr &instr, const ScheduleOptions &options);

/// Per rank the instruction list, then per rank busy and idle time, the step
/// time and the bubble fraction.
void printSchedule(const PipelineSchedule &schedule, const Simulation &sim, llvm::raw_ostream &os);

struct MeasuredTimeline;

/// A Gantt chart: one row per rank, forward, backward, weight-gradient,
/// messages and idle time in distinct colours, micro-batches in the boxes.
/// With `measured` (analysis/MeasuredTimeline.h), a second chart under it:
/// one row per rank of the run, its sections of the traced step in the same
/// colours, waits for communication, and its communication under the row.
void printScheduleSVG(const PipelineSchedule &schedule, const Simulation &sim, llvm::raw_ostream &os,
                      const MeasuredTimeline *measured = nullptr);

} // namespace planc::pipeline

#endif
