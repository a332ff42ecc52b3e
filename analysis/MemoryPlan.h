//===- analysis/MemoryPlan.h - liveness and arena placement per rank -*- C++ -*-===//
//
// The memory of a partitioned training step, rank by rank, computed from the
// program and its schedule rather than from a formula: every value of the
// placed (rolled) step is a buffer of its rank-local size; each pipeline rank
// runs its ops instruction by instruction in the order of its schedule, every
// micro-batch's values living from the op that makes them to their last use
// on that rank (an activation saved in forward lives until its backward
// instruction, so the micro-batches a schedule keeps in flight are all there);
// buffers are placed at fixed offsets in one arena per rank (64-byte aligned)
// as they are made and freed, both first fit in address order and best fit
// (the smallest hole); the smaller arena is the plan's.
//
// Categories: parameters (and frozen weights), gradients (the values the
// optimizer reads, summed over micro-batches, live from the first
// micro-batch's backward to the update), optimizer state (the update ops'
// state operands, and under mixed precision the f32 master weights, which
// the model reads only through a narrowing cast), activations (forward values backward reads), temporaries
// (everything else), communication (results of collectives and receives
// that are none of the above). Updates write their parameter and states in
// place. Ranks of one pipeline stage run the same program on blocks of the
// same shape, so one plan stands for all of them.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_ANALYSIS_MEMORYPLAN_H
#define PLANC_ANALYSIS_MEMORYPLAN_H

#include "ir/IR.h"
#include "analysis/PipelineSchedule.h"
#include "ir/Placement.h"

#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace planc::memory {

enum class Category { Parameters, Gradients, OptimizerState, Activations, Temporaries, Communication };
constexpr size_t kNumCategories = 6;
const char *spelling(Category c);

using CategoryBytes = std::array<uint64_t, kNumCategories>;

/// Where one buffer of the plan lives (PlanOptions::keepPlacements): the
/// buffer of `value` in micro-batch slot `slot` (-1: one for the whole step),
/// at `offset` of the stage's arena. A buffer that reuses another's bytes in
/// place (an update's new parameter, an all-reduce of a buffer read by
/// nothing after it) names it in `aliasOf` (an index into placements).
/// `firstStep`/`lastStep` index StagePlan::program: -1 for what is there when
/// the step starts (parameters, states, the batch), INT64_MAX for what is kept
/// after it (parameters, states, the outputs).
struct PlacedBuffer {
  const ir::Value *value = nullptr;
  int slot = -1;
  uint64_t offset = 0, size = 0; // size: the block's bytes padded to the alignment
  Category category = Category::Temporaries;
  int64_t aliasOf = -1;
  int64_t firstStep = -1, lastStep = INT64_MAX;
};

/// One op run on one micro-batch, in the order the stage runs them
/// (analysis/StageSequence.h), with the placements it reads and writes.
struct PlacedStep {
  /// Null for a copy the planner adds: a gradient `planc verify` reports
  /// that is also read in every micro-batch (ZeRO-2/3 reduce it in each) is
  /// summed into a buffer of its own, `outputs[0] (+)= inputs[0]`, right
  /// after the step that makes it (`copyOf`).
  const ir::Op *op = nullptr;
  const ir::Op *copyOf = nullptr;
  int microBatch = -1;
  ir::Work work = ir::Work::Forward;
  int chunk = 0;
  std::vector<int64_t> inputs;  // per operand; -1: a stage_merge operand of another stage
  std::vector<int64_t> outputs; // per result
  std::vector<bool> accumulate; // per result: adds to what the buffer holds (a sum over micro-batches)
};

struct StagePlan {
  int stage = 0;                 // pipeline rank (pp coordinate)
  std::vector<int64_t> ranks;    // every rank running this program
  uint64_t peak = 0;             // bytes live at the peak
  CategoryBytes atPeak{};        // the peak by category
  std::string peakOp;            // the op making the buffer that reached the peak
  std::string peakPath;          // its layer path
  int peakMicroBatch = -1;       // -1: outside the micro-batches (optimizer)
  std::string peakWork;          // forward, backward, weight_grad, optimizer
  uint64_t arena = 0;            // the placed arena's size (>= peak)
  bool bestFit = false;          // placed best fit (else first fit), whichever is smaller
  uint64_t buffers = 0;          // buffers placed
  std::vector<uint64_t> timeline; // live bytes after every allocation (the memory over time)
  /// ZeRO's model states, counted from the program rather than at the peak:
  /// parameters as stored for the step (the narrow copy of each master
  /// weight, whole where it is gathered once per step, the shard under
  /// ZeRO-3; parameters without a master), gradients as held until the
  /// update (before a reduction the optimizer phase does; after one that
  /// backward does), optimizer state (master weights, moments) -- indexed
  /// by Category, unpadded (as the formulas count); the other entries are 0.
  CategoryBytes modelStates{};
  /// PlanOptions::keepPlacements: every buffer and step (else empty).
  std::vector<PlacedBuffer> placements;
  std::vector<PlacedStep> program;
  double fragmentation() const { return peak ? double(arena) / double(peak) - 1.0 : 0.0; }
};

struct MemoryPlan {
  std::vector<StagePlan> stages; // by pipeline rank
  const StagePlan &peakStage() const;
};

struct PlanOptions {
  /// Record every buffer's placement and the steps reading them (what the
  /// execution plan is built from); without it only the totals are kept.
  bool keepPlacements = false;
  /// Keep the parameters' gradients to the end of the step (a run that
  /// reports them: `planc verify`); else they die at their last use, as in a
  /// training run. Only the gradient outputs' lives change.
  bool keepGradientOutputs = false;
};

/// Plans the placed step `m` (after sharding propagation and, with pp > 1,
/// the `pipeline` pass; not unrolled) under the schedule the pipeline pass
/// recorded on it (m.schedule: its micro-batch count and style; without one,
/// a single micro-batch of 1F1B). Errors name an op the plan cannot place.
/// The outputs of the step other than the gradients live to its end.
llvm::Expected<MemoryPlan> planMemory(const ir::Module &m, const PlanOptions &options = {});

} // namespace planc::memory

#endif
