//===- exec/BuildPlan.cpp - the execution plan of a placed step ------------===//

#include "exec/BuildPlan.h"
#include "exec/Groups.h"

#include "analysis/StageSequence.h"
#include "analysis/StepSchedule.h"
#include "ir/Interpreter.h"
#include "ir/LocalAttrs.h"
#include "ir/LocalBlocks.h"
#include "ir/MeshLayout.h"
#include "ir/OpDef.h"
#include "ir/Placement.h"
#include "support/Error.h"
#include "support/Parallel.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

using namespace planc;
using namespace planc::exec;
using namespace planc::ir;

namespace {

/// The dp blocks of the batch rows: what dropout's `batch_split` needs to
/// find micro-batch j's rows in the whole batch's mask.
int64_t batchRowBlocks(const Module &m) {
  int64_t blocks = 1;
  for (const Value *in : m.inputs) {
    if (in->type.rank() == 0 || in->type.sharding.dims.empty()) continue;
    int64_t d = 1;
    for (MeshAxis a : in->type.sharding.dims[0]) d *= m.mesh[unsigned(a)];
    blocks = std::max(blocks, d);
  }
  return blocks;
}

class PlanBuilder {
public:
  PlanBuilder(const Module &m, memory::MemoryPlan &placed, const sequence::StageSequencer &sequencer,
              const BuildOptions &options)
      : m(m), placed(placed), sequencer(sequencer), options(options), mesh(m.mesh), rowBlocks(batchRowBlocks(m)) {
    for (const Output &o : m.outputs)
      if (o.isUpdate()) updatedPaths.insert(o.path);
  }

  llvm::Expected<ExecutionPlan> build() {
    ExecutionPlan plan;
    plan.name = m.name;
    plan.mesh = m.mesh;
    plan.schedule = sequencer.scheduleOf().options;
    plan.alignment = 64;
    plan.foldProducers = options.foldProducers;
    for (const memory::StagePlan &stage : placed.stages)
      if (stage.program.empty() && stage.placements.empty() && stage.buffers > 0)
        return makeError("the memory plan of stage " + std::to_string(stage.stage) +
                         " kept no placements (plan it with keepPlacements)");
    // Each stage's program reads only the module, the placements and the
    // sequencer: built on every core, each at its stage's index.
    std::vector<std::optional<RankProgram>> programs(placed.stages.size());
    std::vector<std::string> errors(placed.stages.size());
    parallelFor(placed.stages.size(), [&](size_t i) {
      auto program = buildProgram(placed.stages[i]);
      // What the program holds now: a large plan's placements are hundreds
      // of megabytes.
      std::vector<memory::PlacedBuffer>().swap(placed.stages[i].placements);
      std::vector<memory::PlacedStep>().swap(placed.stages[i].program);
      if (program) programs[i] = std::move(*program);
      else errors[i] = llvm::toString(program.takeError());
    });
    for (size_t i = 0; i < programs.size(); ++i) {
      if (!programs[i]) return makeError(errors[i]);
      plan.programs.push_back(std::move(*programs[i]));
    }
    return plan;
  }

private:
  llvm::Expected<RankProgram> buildProgram(memory::StagePlan &stage) {
    RankProgram p;
    p.stage = stage.stage;
    p.ranks = stage.ranks;
    p.arenaSize = stage.arena;
    p.buffers.reserve(stage.placements.size());
    std::unordered_map<const Value *, std::shared_ptr<BufferValue>> values;
    for (const memory::PlacedBuffer &pb : stage.placements) setBuffer(p.buffers.emplace_back(), pb, values);
    const int mbs = sequencer.microBatches();
    p.steps.reserve(stage.program.size());
    // An op's local attributes are the same in every micro-batch (what a
    // micro-batch changes is set below): made once per op and shared. Where
    // and when it runs is the step's own fields, so its placement
    // attributes are left out.
    std::unordered_map<const Op *, StepAttrs> local;
    for (size_t i = 0; i < stage.program.size(); ++i) {
      memory::PlacedStep &ps = stage.program[i];
      if (!ps.op) {
        // The planner's copy of a reported gradient into its sum.
        Step &s = p.steps.emplace_back();
        s.kind = OpKind::Scale;
        s.attrs["factor"] = 1.0;
        s.microBatch = ps.microBatch;
        s.work = ps.work;
        s.chunk = ps.chunk;
        s.inputs = std::move(ps.inputs);
        s.outputs = std::move(ps.outputs);
        if (ps.accumulate.size() == 1 && ps.accumulate[0]) s.accumulate = std::move(ps.accumulate);
        if (ps.copyOf) {
          s.loc = ps.copyOf->loc;
          s.path = ps.copyOf->path;
        }
        continue;
      }
      const Op &op = *ps.op;
      // Made in place: a large plan has hundreds of thousands of steps.
      Step &s = p.steps.emplace_back();
      s.kind = op.kind;
      auto cached = local.find(&op);
      if (cached == local.end()) {
        AttrMap attrs = localAttrs(op, mesh);
        clearPlacement(attrs);
        cached = local.emplace(&op, StepAttrs(std::move(attrs))).first;
      }
      s.attrs = cached->second;
      s.microBatch = ps.microBatch;
      s.work = ps.work;
      s.chunk = ps.chunk;
      s.stream = isCommunicationStep(op.kind) ? Stream::Communication : Stream::Compute;
      s.inputs = std::move(ps.inputs);
      s.outputs = std::move(ps.outputs);
      s.accumulate = std::move(ps.accumulate);
      if (std::find(s.accumulate.begin(), s.accumulate.end(), true) == s.accumulate.end()) s.accumulate.clear();
      s.loc = op.loc;
      s.path = op.path;
      for (size_t k = 0; k < s.inputs.size(); ++k)
        if (s.inputs[k] < 0 && !(op.kind == OpKind::StageMerge && int64_t(k) != stage.stage))
          return makeError("stage " + std::to_string(stage.stage) + ", step " + std::to_string(i) + " (" +
                           describeOp(op) + "): no buffer holds its operand %" + op.operands[k]->name);
      for (size_t k = 0; k < s.outputs.size(); ++k)
        if (s.outputs[k] < 0)
          return makeError("stage " + std::to_string(stage.stage) + ", step " + std::to_string(i) + " (" +
                           describeOp(op) + "): no buffer holds its result %" + op.results[k]->name);
      // What the micro-batch changes.
      if (mbs > 1 && op.kind == OpKind::Fill && !op.results.empty() && op.results[0]->name == "grad.loss")
        s.attrs["value"] = op.getFloat("value", 1.0) / double(mbs);
      // Dropout's mask, and fused attention's on its probabilities, is drawn
      // by the element's place in the whole batch.
      bool drawsMask = op.kind == OpKind::Dropout || ((op.kind == OpKind::FlashAttention ||
                                                       op.kind == OpKind::FlashAttentionGrad) &&
                                                      op.getFloat("p") > 0);
      if (mbs > 1 && drawsMask)
        s.attrs["batch_split"] = std::vector<int64_t>{rowBlocks, int64_t(mbs), int64_t(std::max(ps.microBatch, 0))};
      if (isPointToPoint(op.kind)) s.attrs["tag"] = sequencer.tagOf(op, ps.microBatch);
    }
    bindOutputs(stage, p);
    if (mbs > 1) meanOfLoss(p, mbs);
    placeEvents(p);
    return p;
  }

  /// `values`: the value each buffer holds, one per value of the program.
  void setBuffer(Buffer &b, const memory::PlacedBuffer &pb,
                 std::unordered_map<const Value *, std::shared_ptr<BufferValue>> &values) const {
    const Value *v = pb.value;
    b.name.reserve(v->name.size() + 8);
    b.name = v->name;
    if (pb.slot >= 0) b.name.append(".mb").append(std::to_string(pb.slot));
    std::shared_ptr<BufferValue> &held = values[v];
    if (!held) held = std::make_shared<BufferValue>(BufferValue{v->name, v->type, localShape(v->type, mesh)});
    b.setValue(held);
    b.slot = pb.slot;
    b.offset = pb.offset;
    b.size = pb.size;
    b.category = pb.category;
    b.aliasOf = pb.aliasOf;
    b.firstStep = pb.firstStep;
    b.lastStep = pb.lastStep;
    if (v->kind == Value::Kind::Param) {
      b.role = BufferRole::Param;
      b.path = v->path.empty() ? v->name : v->path;
      // A frozen value with an update is an optimizer state.
      b.init = {v->init, v->initStd, !(v->frozen && updatedPaths.count(b.path))};
    } else if (v->kind == Value::Kind::Input) {
      b.role = BufferRole::Input;
      b.path = v->name;
    }
  }

  /// The step's outputs this stage holds at its end.
  void bindOutputs(const memory::StagePlan &stage, RankProgram &p) {
    std::unordered_map<const Value *, int64_t> kept;
    for (size_t b = 0; b < stage.placements.size(); ++b)
      if (stage.placements[b].slot < 0 && stage.placements[b].lastStep == kAfterSteps)
        kept[stage.placements[b].value] = int64_t(b);
    for (const Output &out : m.outputs) {
      auto it = kept.find(out.value);
      if (it == kept.end()) continue;
      p.outputs.push_back({out.name, out.role, out.path, out.owner, it->second});
    }
  }

  /// The step's loss is the mean of the micro-batches' losses: their sum,
  /// scaled by 1/m right after the last one is added.
  void meanOfLoss(RankProgram &p, int mbs) {
    int64_t loss = -1;
    for (const OutputBinding &o : p.outputs)
      if (o.role == OutputRole::Loss) loss = o.buffer;
    if (loss < 0) return;
    int64_t last = -1;
    for (size_t i = 0; i < p.steps.size(); ++i)
      if (std::find(p.steps[i].outputs.begin(), p.steps[i].outputs.end(), loss) != p.steps[i].outputs.end())
        last = int64_t(i);
    if (last < 0) return;
    const Step &from = p.steps[size_t(last)];
    Step mean;
    mean.kind = OpKind::Scale;
    mean.attrs["factor"] = 1.0 / double(mbs);
    mean.microBatch = -1;
    mean.work = from.work;
    mean.chunk = from.chunk;
    mean.inputs = {loss};
    mean.outputs = {loss};
    mean.loc = from.loc;
    mean.path = from.path;
    const int64_t at = last + 1;
    for (Buffer &b : p.buffers) {
      if (b.firstStep != kBeforeSteps && b.firstStep >= at) ++b.firstStep;
      if (b.lastStep != kAfterSteps && b.lastStep >= at) ++b.lastStep;
    }
    p.steps.insert(p.steps.begin() + at, std::move(mean));
  }

  /// Each communication step records an event; a later step waits for it
  /// before it reads the step's outputs or writes bytes the step uses, as
  /// long as it may be in flight.
  void placeEvents(RankProgram &p) {
    struct InFlight {
      int64_t event;
      std::vector<int64_t> reads, writes; // buffers
    };
    std::vector<InFlight> inFlight;
    auto overlaps = [&](int64_t a, int64_t b) {
      const Buffer &x = p.buffers[size_t(a)], &y = p.buffers[size_t(b)];
      return a == b || (x.offset < y.offset + y.size && y.offset < x.offset + x.size);
    };
    for (Step &s : p.steps) {
      std::vector<size_t> done;
      for (size_t f = 0; f < inFlight.size(); ++f) {
        bool wait = false;
        for (int64_t in : s.inputs)
          for (int64_t w : inFlight[f].writes) wait |= in >= 0 && overlaps(in, w);
        for (int64_t out : s.outputs) {
          for (int64_t w : inFlight[f].writes) wait |= overlaps(out, w);
          for (int64_t r : inFlight[f].reads) wait |= r >= 0 && overlaps(out, r);
        }
        if (wait) done.push_back(f);
      }
      for (size_t k = done.size(); k-- > 0;) {
        s.waits.push_back(inFlight[done[k]].event);
        inFlight.erase(inFlight.begin() + long(done[k]));
      }
      std::sort(s.waits.begin(), s.waits.end());
      if (s.stream == Stream::Communication) {
        s.event = p.events++;
        inFlight.push_back({s.event, s.inputs, s.outputs});
      }
    }
  }

  const Module &m;
  memory::MemoryPlan &placed;
  const sequence::StageSequencer &sequencer;
  BuildOptions options;
  MeshLayout mesh;
  int64_t rowBlocks;
  std::unordered_set<std::string> updatedPaths; // the paths of the step's update outputs
};

} // namespace

llvm::Expected<ExecutionPlan> exec::buildExecutionPlan(const Module &m, memory::MemoryPlan &placed,
                                                       const BuildOptions &options) {
  auto schedule = pipeline::buildSchedule(pipeline::scheduleOf(m));
  if (!schedule) return schedule.takeError();
  sequence::StageSequencer sequencer(m, *schedule);
  return PlanBuilder(m, placed, sequencer, options).build();
}

llvm::Expected<ExecutionPlan> exec::buildExecutionPlan(const Module &m, const memory::PlanOptions &options) {
  memory::PlanOptions keep = options;
  keep.keepPlacements = true;
  auto placed = memory::planMemory(m, keep);
  if (!placed) return placed.takeError();
  return buildExecutionPlan(m, *placed);
}
