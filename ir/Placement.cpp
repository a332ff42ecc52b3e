//===- ir/Placement.cpp - where and when an op of the step runs ----------===//
//
// The attribute names and spellings of placement live here and nowhere
// else; see Placement.h for what each means.
//
//===----------------------------------------------------------------------===//

#include "ir/Placement.h"

using namespace planc;
using namespace planc::ir;

namespace {

constexpr const char *kPhase = "phase";
constexpr const char *kPipelineStage = "pipeline_stage";
constexpr const char *kVirtualStage = "virtual_stage";
constexpr const char *kWork = "work";
constexpr const char *kMicroBatch = "micro_batch";

const std::string *stringAttr(const AttrMap &attrs, const char *name) {
  auto it = attrs.find(name);
  return it == attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
}

const int64_t *intAttr(const AttrMap &attrs, const char *name) {
  auto it = attrs.find(name);
  return it == attrs.end() ? nullptr : std::get_if<int64_t>(&it->second);
}

void copyAttr(const AttrMap &from, AttrMap &to, const char *name) {
  if (auto it = from.find(name); it != from.end()) to[name] = it->second;
}

/// The spellings of `work`: the schedule instructions of a pipelined op.
std::optional<Work> parseWorkAttr(llvm::StringRef s) {
  if (s == "forward") return Work::Forward;
  if (s == "backward") return Work::Backward;
  if (s == "weight_grad") return Work::WeightGrad;
  return std::nullopt;
}

} // namespace

const char *ir::spelling(Phase p) {
  switch (p) {
  case Phase::Forward: return "forward";
  case Phase::Backward: return "backward";
  case Phase::Optimizer: return "optimizer";
  }
  return "";
}

const char *ir::spelling(Work w) {
  switch (w) {
  case Work::Forward: return "forward";
  case Work::Backward: return "backward";
  case Work::WeightGrad: return "weight_grad";
  case Work::Optimizer: return "optimizer";
  }
  return "";
}

std::optional<Phase> ir::parsePhase(llvm::StringRef s) {
  if (s == "forward") return Phase::Forward;
  if (s == "backward") return Phase::Backward;
  if (s == "optimizer") return Phase::Optimizer;
  return std::nullopt;
}

Phase ir::phaseOf(const AttrMap &attrs) {
  const std::string *s = stringAttr(attrs, kPhase);
  std::optional<Phase> p = s ? parsePhase(*s) : std::nullopt;
  return p ? *p : Phase::Forward;
}

bool ir::hasPhase(const Op &op) { return op.attrs.count(kPhase) > 0; }

void ir::setPhase(AttrMap &attrs, Phase p) {
  if (p == Phase::Forward) attrs.erase(kPhase);
  else attrs[kPhase] = std::string(spelling(p));
}

void ir::copyPhase(const AttrMap &from, AttrMap &to) { copyAttr(from, to, kPhase); }

Work ir::workOf(const Op &op) {
  Phase phase = phaseOf(op);
  if (phase == Phase::Optimizer) return Work::Optimizer;
  const std::string *s = stringAttr(op.attrs, kWork);
  if (std::optional<Work> w = s ? parseWorkAttr(*s) : std::nullopt) return *w;
  return phase == Phase::Backward ? Work::Backward : Work::Forward;
}

bool ir::hasWork(const Op &op) { return op.attrs.count(kWork) > 0; }

void ir::setWork(AttrMap &attrs, Work w) {
  if (w == Work::Optimizer) {
    setPhase(attrs, Phase::Optimizer);
    attrs.erase(kWork);
    return;
  }
  attrs[kWork] = std::string(spelling(w));
}

void ir::clearWork(Op &op) { op.attrs.erase(kWork); }

int64_t ir::pipelineStageOf(const Op &op) {
  const int64_t *s = intAttr(op.attrs, kPipelineStage);
  return s ? *s : -1;
}

void ir::setPipelineStage(AttrMap &attrs, int64_t stage) { attrs[kPipelineStage] = stage; }

int ir::virtualStageOf(const Op &op) {
  if (const int64_t *vs = intAttr(op.attrs, kVirtualStage)) return int(*vs);
  return int(pipelineStageOf(op));
}

bool ir::hasVirtualStage(const Op &op) { return op.attrs.count(kVirtualStage) > 0; }

void ir::setVirtualStage(Op &op, int64_t stage) { op.attrs[kVirtualStage] = stage; }

void ir::clearVirtualStage(AttrMap &attrs) { attrs.erase(kVirtualStage); }

void ir::clearStages(Op &op) {
  op.attrs.erase(kPipelineStage);
  op.attrs.erase(kVirtualStage);
}

int64_t ir::microBatchOf(const Op &op) {
  const int64_t *mb = intAttr(op.attrs, kMicroBatch);
  return mb ? *mb : -1;
}

void ir::setMicroBatch(Op &op, int64_t microBatch) { op.attrs[kMicroBatch] = microBatch; }

void ir::copyMicroBatch(const AttrMap &from, AttrMap &to) { copyAttr(from, to, kMicroBatch); }

void ir::matchMicroBatchAndWork(const Op &from, Op &to) {
  for (const char *name : {kMicroBatch, kWork}) {
    if (auto it = from.attrs.find(name); it != from.attrs.end()) to.attrs[name] = it->second;
    else to.attrs.erase(name);
  }
}

AttrMap ir::placementAttrs(const Op &op) {
  AttrMap attrs;
  for (const char *name : {kPipelineStage, kVirtualStage, kWork, kMicroBatch, kPhase}) copyAttr(op.attrs, attrs, name);
  return attrs;
}

void ir::clearPlacement(AttrMap &attrs) {
  for (const char *name : {kPipelineStage, kVirtualStage, kWork, kMicroBatch, kPhase}) attrs.erase(name);
}

std::string ir::placementProblem(const Op &op, const Module &m) {
  auto it = op.attrs.find(kPhase);
  if (it != op.attrs.end()) {
    const std::string *s = std::get_if<std::string>(&it->second);
    if (!s || !parsePhase(*s)) return "phase must be \"forward\", \"backward\" or \"optimizer\"";
  }
  it = op.attrs.find(kWork);
  if (it != op.attrs.end()) {
    const std::string *s = std::get_if<std::string>(&it->second);
    if (!s || !parseWorkAttr(*s)) return "work must be \"forward\", \"backward\" or \"weight_grad\"";
  }
  const int64_t pp = m.mesh[unsigned(MeshAxis::PP)];
  for (const char *name : {kPipelineStage, kVirtualStage, kMicroBatch})
    if (op.attrs.count(name) && !intAttr(op.attrs, name)) return std::string(name) + " must be an integer";
  const int64_t *stage = intAttr(op.attrs, kPipelineStage);
  if (stage && (*stage < 0 || *stage >= pp))
    return "pipeline_stage " + std::to_string(*stage) + " is outside the pp mesh of size " + std::to_string(pp);
  if (const int64_t *vs = intAttr(op.attrs, kVirtualStage)) {
    if (!stage) return "virtual_stage without a pipeline_stage";
    // Interleaved: chunk c of rank r is virtual stage c * pp + r.
    if (*vs < 0 || *vs % pp != *stage)
      return "virtual_stage " + std::to_string(*vs) + " does not run on pipeline_stage " + std::to_string(*stage) +
             " (a virtual stage v runs on rank v mod " + std::to_string(pp) + ")";
  }
  if (const int64_t *mb = intAttr(op.attrs, kMicroBatch); mb && *mb < 0)
    return "micro_batch " + std::to_string(*mb) + " is negative";
  return "";
}
