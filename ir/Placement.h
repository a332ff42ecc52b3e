//===- ir/Placement.h - where and when an op of the step runs -*- C++ -*-===//
//
// An op's placement in the training step, read and written only through
// these accessors. It is stored as op attributes, so the textual IR spells
// it as any other attribute:
//
//   phase           the section of the step: "backward" or "optimizer";
//                   absent: forward
//   pipeline_stage  the pipeline rank (pp coordinate) that runs the op;
//                   absent: every rank runs it
//   virtual_stage   the model chunk's stage (interleaved: chunk c of rank r
//                   is virtual stage c * p + r); absent: = pipeline_stage
//   work            the schedule instruction the op is part of: "forward",
//                   "backward" or "weight_grad" (zero-bubble's W); refines
//                   the phase of a pipelined op
//   micro_batch     the micro-batch of an op written out per micro-batch
//                   (hand-written steps; the compiler never unrolls)
//
// A module after `pipeline` is rolled: one micro-batch's ops, placed; the
// execution plan (exec/BuildPlan.h) runs it once per micro-batch in schedule
// order (analysis/StageSequence.h). The verifier
// checks the spellings and ranges (placementProblem).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_PLACEMENT_H
#define PLANC_IR_PLACEMENT_H

#include "ir/IR.h"

#include <optional>
#include <string>

namespace planc::ir {

enum class Phase { Forward, Backward, Optimizer };
/// The schedule instruction an op belongs to: its phase refined by `work`.
enum class Work { Forward, Backward, WeightGrad, Optimizer };

const char *spelling(Phase p);
const char *spelling(Work w);
std::optional<Phase> parsePhase(llvm::StringRef s);

/// The op's phase; an op without one (or with a misspelt one, which the
/// verifier reports) is forward.
Phase phaseOf(const AttrMap &attrs);
inline Phase phaseOf(const Op &op) { return phaseOf(op.attrs); }
/// Whether the op names its phase (forward ops normally do not).
bool hasPhase(const Op &op);
/// Forward clears the attribute: forward is its absence.
void setPhase(AttrMap &attrs, Phase p);
inline void setPhase(Op &op, Phase p) { setPhase(op.attrs, p); }
/// Gives `to` the phase `from` names, if it names one.
void copyPhase(const AttrMap &from, AttrMap &to);
inline void copyPhase(const Op &from, Op &to) { copyPhase(from.attrs, to.attrs); }

/// The op's section of the training step (its phase) refined by its `work`.
Work workOf(const Op &op);
bool hasWork(const Op &op);
/// F, B and W set `work`; Optimizer moves the op to the optimizer phase,
/// where no schedule instruction applies (and clears `work`).
void setWork(AttrMap &attrs, Work w);
inline void setWork(Op &op, Work w) { setWork(op.attrs, w); }
void clearWork(Op &op);

/// The pipeline rank that runs the op, or -1 for an op every rank runs.
int64_t pipelineStageOf(const Op &op);
inline bool hasPipelineStage(const Op &op) { return pipelineStageOf(op) >= 0; }
void setPipelineStage(AttrMap &attrs, int64_t stage);
inline void setPipelineStage(Op &op, int64_t stage) { setPipelineStage(op.attrs, stage); }

/// The virtual stage of a placed op (its pipeline stage where it has no
/// virtual one), or -1 for an op every rank runs.
int virtualStageOf(const Op &op);
bool hasVirtualStage(const Op &op);
void setVirtualStage(Op &op, int64_t stage);
void clearVirtualStage(AttrMap &attrs);
/// Unplaces the op: clears both its pipeline and its virtual stage.
void clearStages(Op &op);

/// The micro-batch of an unrolled op, or -1 where the op is not unrolled.
int64_t microBatchOf(const Op &op);
inline bool hasMicroBatch(const Op &op) { return microBatchOf(op) >= 0; }
void setMicroBatch(Op &op, int64_t microBatch);
/// Gives `to` the micro-batch `from` has, if it has one.
void copyMicroBatch(const AttrMap &from, AttrMap &to);
/// Makes the micro-batch and work of `to` those of `from`, cleared where
/// `from` has none.
void matchMicroBatchAndWork(const Op &from, Op &to);
/// Every placement attribute of the op (phase, stages, work, micro-batch),
/// to stamp on ops made in its place.
AttrMap placementAttrs(const Op &op);
/// `attrs` less every placement attribute: what an op computes, without
/// where and when it runs (the execution plan says that by its own fields).
void clearPlacement(AttrMap &attrs);

/// The first thing wrong with the op's placement in `m` (a misspelt phase
/// or work, a stage outside the pp mesh, a virtual stage on another rank, a
/// negative micro-batch), or "" where it has none.
std::string placementProblem(const Op &op, const Module &m);

} // namespace planc::ir

#endif
