//===- compiler/PlanAnalysis.cpp - a plan's memory and cost ---------------===//

#include "compiler/PlanAnalysis.h"
#include "compiler/Pipeline.h"
#include "compiler/StepTime.h"

#include "analysis/CommSummary.h"
#include "analysis/Placement.h"
#include "analysis/SavedActivations.h"
#include "ir/LocalBlocks.h"
#include "ir/MeshLayout.h"
#include "ir/OpDef.h"
#include "ir/Placement.h"

#include <algorithm>

using namespace planc;

namespace {

/// Bytes the busiest rank sends in one step. The placed step holds one
/// micro-batch: every op runs once per micro-batch except the optimizer's, a
/// bucketed all-reduce and a gather of parameters kept for the step, which
/// run once per step (as analysis/StageSequence.h runs them).
double commBytesPerStep(const ir::Module &m, int microBatches) {
  double most = 0;
  const std::unordered_set<const ir::Value *> oncePerStep = oncePerStepValues(m);
  for (const RankCommList &list : summarizeComm(m, MeshLayout(m.mesh)).lists) {
    double sent = 0;
    for (const CommOp &c : list.ops) {
      bool once = !c.op || runsOncePerStep(*c.op, oncePerStep);
      sent += c.sentBytes * (once ? 1 : microBatches);
    }
    most = std::max(most, sent);
  }
  return most;
}

/// FLOPs of the ops the recompute pass cloned into backward, on the busiest
/// pipeline stage, for every micro-batch of the step.
double recomputeFlopsPerStep(const ir::Module &m, int microBatches) {
  const int64_t stages = m.mesh[unsigned(MeshAxis::PP)];
  std::vector<double> perStage(size_t(std::max<int64_t>(stages, 1)), 0.0);
  for (const auto &op : m.ops) {
    if (!op->getBool("recomputed")) continue;
    auto flops = ir::opDef(op->kind).flops;
    if (!flops) continue;
    double f = flops(*op) * cost::rankShare(*op, m.mesh) * microBatches;
    int64_t st = pipelineStageOf(*op);
    for (int64_t s = 0; s < int64_t(perStage.size()); ++s)
      if (st < 0 || st == s) perStage[size_t(s)] += f;
  }
  return *std::max_element(perStage.begin(), perStage.end());
}

} // namespace

llvm::Expected<PlanAnalysis> planc::analyzePlan(Compilation &c, bool verifyEach,
                                                const cost::Calibration *calibration) {
  CompileOptions options;
  options.passes.verifyEach = verifyEach;
  options.stopAfter = CompileStage::MemoryPlanned;
  auto compiled = compile(c, options);
  if (!compiled) return compiled.takeError();
  const ir::Module &m = *compiled->module;
  const pipeline::ScheduleOptions &so = *compiled->scheduleOptions;
  PlanAnalysis a;
  a.ops = m.ops.size();
  a.memory = std::move(*compiled->memory);
  a.cost.commBytes = commBytesPerStep(m, so.microBatches);
  a.cost.recomputeFlops = recomputeFlopsPerStep(m, so.microBatches);
  if (so.stages > 1) a.cost.bubble = compiled->simulation->bubbleFraction();
  auto time = estimateStepTime(c, *compiled, calibration);
  if (!time) return time.takeError();
  a.time = std::move(*time);
  a.hardware = hardwareOf(c.getConfig().cluster, calibration);
  a.cost.stepSeconds = a.time.stepTime;
  const MeshLayout mesh(m.mesh);
  const std::unordered_set<const ir::Value *> ofParams = oncePerStepValues(m); // copies of weights: parameters
  for (const ir::Value *v : savedActivations(m)) {
    if (ofParams.count(v)) continue;
    double n = double(ir::byteSize(v->type.dtype));
    for (int64_t d : ir::localShape(v->type, mesh)) n *= double(d);
    a.savedActivationBytes += n;
  }
  return a;
}
