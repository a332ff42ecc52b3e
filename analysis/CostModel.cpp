//===- analysis/CostModel.cpp - op costs, overlap, the timed pipeline replay ===//

#include "analysis/CostModel.h"

#include "analysis/CommSummary.h"
#include "analysis/Placement.h"
#include "ir/LocalBlocks.h"
#include "ir/MeshLayout.h"
#include "ir/OpDef.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

using namespace planc;
using namespace planc::cost;
using ir::Op;
using ir::OpKind;

double Calibration::gemmEfficiency(double flops) const {
  if (gemm.empty()) return 1.0;
  if (flops <= gemm.front().first) return gemm.front().second;
  if (flops >= gemm.back().first) return gemm.back().second;
  for (size_t i = 1; i < gemm.size(); ++i) {
    if (flops > gemm[i].first) continue;
    double x0 = std::log(gemm[i - 1].first), x1 = std::log(gemm[i].first);
    double t = x1 > x0 ? (std::log(flops) - x0) / (x1 - x0) : 1.0;
    return gemm[i - 1].second + t * (gemm[i].second - gemm[i - 1].second);
  }
  return gemm.back().second;
}

double Hardware::peakFor(const std::string &dtype) const {
  auto it = peakFlops.find(dtype);
  if (it != peakFlops.end() && it->second > 0) return it->second;
  it = peakFlops.find("f32");
  if (it != peakFlops.end() && it->second > 0) return it->second;
  double best = 0;
  for (const auto &[name, f] : peakFlops) best = std::max(best, f);
  return best;
}

namespace {

/// Latency-bound steps of a ring over n ranks.
double ringSteps(OpKind kind, int64_t n) {
  switch (kind) {
  case OpKind::AllReduce: return 2.0 * double(n - 1);
  case OpKind::Send: return 1.0;
  default: return double(n - 1);
  }
}

/// Bytes of a value's local block on one rank.
double localBytes(const ir::Value &v, const MeshLayout &mesh) {
  double n = 1;
  for (int64_t d : ir::localShape(v.type, mesh)) n *= double(d);
  return n * double(ir::byteSize(v.type.dtype));
}

bool isGemm(OpKind k) {
  return k == OpKind::MatMul || k == OpKind::FlashAttention || k == OpKind::FlashAttentionGrad;
}

/// What an op costs on one rank, and what kind of cost it is.
enum class Kind { Free, Gemm, Other, CommBlocking, CommOverlapped, Message, OnceOverlapped };

struct OpCost {
  Kind kind = Kind::Free;
  double seconds = 0;
  double flops = 0; // of the whole mesh (model FLOPs), forward and backward only
  double recomputedFlops = 0; // of those, work of the forward done again (ir::OpDef::recomputedFlops)
};

/// Time accumulated for one (chunk, work) of one pipeline rank, per micro-batch.
struct Slot {
  double gemm = 0, other = 0, recompute = 0, blocking = 0, overlapped = 0, message = 0;
  double compute() const { return gemm + other; }
  /// The instruction's duration: compute, blocking collectives, and the
  /// overlapped ones the compute does not hide.
  double duration() const { return compute() + blocking + std::max(0.0, overlapped - compute()); }
};

class Estimator {
public:
  explicit Estimator(const CostInputs &in)
      : in(in), m(*in.placed), hw(in.hardware), mesh(m.mesh),
        stages(int(std::max<int64_t>(m.mesh[unsigned(MeshAxis::PP)], 1))),
        chunks(in.schedule->options.virtualStages), microBatches(in.schedule->options.microBatches) {}

  llvm::Expected<StepCost> run();

private:
  OpCost costOf(const Op &op) const;
  int64_t strideOf(MeshAxis axis) const {
    int64_t stride = 1;
    for (MeshAxis a : MeshLayout::kFastestFirst) {
      if (a == axis) return stride;
      stride *= m.mesh[unsigned(a)];
    }
    return stride;
  }

  const CostInputs &in;
  const ir::Module &m;
  const Hardware &hw;
  MeshLayout mesh;
  int stages, chunks, microBatches;
};

OpCost Estimator::costOf(const Op &op) const {
  OpCost c;
  const ir::OpDef &def = ir::opDef(op.kind);
  if (op.kind == OpKind::ShardSlice || op.kind == OpKind::Recv || op.kind == OpKind::StageMerge) return c;
  if (ir::isCommunication(op.kind)) {
    CommOp comm = commOpOf(op, mesh, 0);
    if (comm.groupSize <= 1) return c;
    c.seconds = collectiveSeconds(op.kind, comm.groupSize, strideOf(comm.axis), comm.messageBytes, hw);
    if (op.kind == OpKind::Send) c.kind = Kind::Message;
    else if (op.has("bucket")) c.kind = reducesOncePerStep(op) ? Kind::OnceOverlapped : Kind::CommOverlapped;
    else if (op.getBool("prefetch")) c.kind = Kind::CommOverlapped;
    else c.kind = Kind::CommBlocking;
    return c;
  }
  if (ir::isView(op.kind)) return c;
  double flops = def.flops ? def.flops(op) : 0.0;
  double local = flops * rankShare(op, m.mesh);
  double bytes = 0;
  for (const ir::Value *v : op.operands) bytes += localBytes(*v, mesh);
  for (const ir::Value *v : op.results) bytes += localBytes(*v, mesh);
  const Calibration &cal = hw.calibration;
  double memory = hw.memoryBandwidth > 0 ? bytes / (hw.memoryBandwidth * cal.memoryEfficiency) : 0;
  double compute = 0;
  if (isGemm(op.kind)) {
    const ir::Value *a = op.operands.empty() ? op.results[0] : op.operands[0];
    double peak = hw.peakFor(ir::spelling(a->type.dtype));
    compute = peak > 0 ? local / (peak * cal.gemmEfficiency(local)) : 0;
    c.kind = Kind::Gemm;
  } else {
    double peak = hw.peakFor("f32") * cal.elementwiseEfficiency;
    compute = peak > 0 ? local / peak : 0;
    c.kind = Kind::Other;
  }
  c.seconds = std::max(compute, memory) + cal.kernelLaunch;
  if (ir::workOf(op) != ir::Work::Optimizer) {
    c.flops = flops;
    c.recomputedFlops = def.recomputedFlops ? def.recomputedFlops(op) : 0.0;
  }
  return c;
}

llvm::Expected<StepCost> Estimator::run() {
  const pipeline::PipelineSchedule &schedule = *in.schedule;
  const bool splitW = schedule.options.style == ScheduleStyle::ZeroBubble;
  const std::unordered_set<const ir::Value *> once = oncePerStepValues(m);

  // Per pipeline rank: per (chunk, work) slots of one micro-batch, and the
  // once-per-step parts.
  enum { F, B, W };
  const size_t numStages = static_cast<size_t>(stages), numChunks = static_cast<size_t>(chunks);
  std::vector<std::vector<std::array<Slot, 3>>> slots(numStages, std::vector<std::array<Slot, 3>>(numChunks));
  std::vector<double> optimizer(numStages, 0.0), onceReduce(numStages, 0.0);

  StepCost out;
  out.devices = MeshLayout(m.mesh).numRanks();
  out.tokens = in.tokensPerStep;
  out.peakFlops = hw.peakFor(in.computeDType);

  for (const auto &opPtr : m.ops) {
    const Op &op = *opPtr;
    OpCost c = costOf(op);
    const ir::Work work = ir::workOf(op);
    const bool recomputed = op.getBool("recomputed");
    const bool isOnce = runsOncePerStep(op, once);
    if (c.flops > 0) {
      double times = isOnce ? 1.0 : double(microBatches);
      double again = recomputed ? c.flops : c.recomputedFlops;
      out.hardwareFlops += again * times;
      out.modelFlops += (c.flops - again) * times;
    }
    if (c.kind == Kind::Free) continue;
    int64_t st = ir::pipelineStageOf(op);
    int vs = ir::hasVirtualStage(op) ? ir::virtualStageOf(op) : int(std::max<int64_t>(st, 0));
    int chunk = std::min(chunks - 1, std::max(0, vs / stages));
    int w = work == ir::Work::Forward ? F : work == ir::Work::WeightGrad && splitW ? W : B;
    for (int s = 0; s < stages; ++s) {
      if (st >= 0 && st != s) continue;
      if (c.kind == Kind::OnceOverlapped) {
        onceReduce[size_t(s)] += c.seconds;
        continue;
      }
      if (work == ir::Work::Optimizer || isOnce) {
        optimizer[size_t(s)] += c.seconds;
        continue;
      }
      Slot &slot = slots[size_t(s)][size_t(chunk)][size_t(w)];
      switch (c.kind) {
      case Kind::Gemm: slot.gemm += c.seconds; break;
      case Kind::Other: slot.other += c.seconds; break;
      case Kind::CommBlocking: slot.blocking += c.seconds; break;
      case Kind::CommOverlapped: slot.overlapped += c.seconds; break;
      case Kind::Message: slot.message += c.seconds; break;
      default: break;
      }
      if (recomputed && (c.kind == Kind::Gemm || c.kind == Kind::Other)) slot.recompute += c.seconds;
    }
  }
  out.hardwareFlops += out.modelFlops;

  auto slotOf = [&](int rank, const pipeline::Instr &i) -> const Slot & {
    int w = i.kind == pipeline::InstrKind::Forward || i.kind == pipeline::InstrKind::SendAct ? F
            : i.kind == pipeline::InstrKind::WeightGrad                                   ? W
                                                                                          : B;
    return slots[size_t(rank)][size_t(std::min(i.chunk, chunks - 1))][size_t(w)];
  };
  auto replay = pipeline::replayTimed(
      schedule, [&](int r, const pipeline::Instr &i) { return slotOf(r, i).duration(); },
      [&](int r, const pipeline::Instr &i) { return slotOf(r, i).message; });
  if (!replay) return replay.takeError();

  double idle = 0;
  for (int s = 0; s < stages; ++s) {
    StageCost sc;
    sc.stage = s;
    Breakdown &b = sc.breakdown;
    double lastBackward = 0;
    for (int ch = 0; ch < chunks; ++ch) {
      const auto &sl = slots[size_t(s)][size_t(ch)];
      sc.forward.push_back(sl[F].duration());
      sc.backward.push_back(sl[B].duration());
      sc.weightGrad.push_back(sl[W].duration());
      for (const Slot &x : sl) {
        double mb = double(microBatches);
        b.gemm += x.gemm * mb;
        b.other += x.other * mb;
        b.recompute += x.recompute * mb;
        b.commBlocking += x.blocking * mb;
        double exposed = std::max(0.0, x.overlapped - x.compute());
        b.commExposed += exposed * mb;
        b.commHidden += (x.overlapped - exposed) * mb;
      }
      lastBackward += sl[B].compute() + sl[W].compute();
    }
    // The once-per-step reductions start as the last micro-batch's backward
    // makes their gradients: that backward hides what it can.
    double reduceExposed = std::max(0.0, onceReduce[size_t(s)] - lastBackward);
    b.commExposed += reduceExposed;
    b.commHidden += onceReduce[size_t(s)] - reduceExposed;
    b.optimizer = optimizer[size_t(s)];
    sc.busy = replay->busy[size_t(s)];
    sc.finish = replay->finish[size_t(s)];
    sc.tail = reduceExposed + optimizer[size_t(s)];
    sc.total = sc.finish + sc.tail;
    out.stages.push_back(std::move(sc));
  }
  out.stepTime = 0;
  for (size_t s = 0; s < out.stages.size(); ++s)
    if (out.stages[s].total > out.stepTime) {
      out.stepTime = out.stages[s].total;
      out.busiest = int(s);
    }
  for (StageCost &sc : out.stages) {
    sc.breakdown.pipelineWait = std::max(0.0, out.stepTime - sc.busy - sc.tail);
    idle += sc.breakdown.pipelineWait;
  }
  out.bubbleFraction = out.stepTime > 0 ? idle / (double(stages) * out.stepTime) : 0;
  return out;
}

} // namespace

double cost::collectiveSeconds(OpKind kind, int64_t n, int64_t stride, uint64_t messageBytes, const Hardware &hw) {
  if (n <= 1) return 0;
  // A group inside one node: its span of ranks fits in a node's devices.
  const bool inNode = hw.nodes <= 1 || (n - 1) * stride + 1 <= hw.devicesPerNode;
  const Link &link = inNode ? hw.intraNode : hw.interNode;
  double bw = link.bandwidth * hw.calibration.busEfficiency;
  double bytes = sentBytes(kind, n, messageBytes);
  return ringSteps(kind, n) * link.latency + (bw > 0 ? bytes / bw : 0);
}

llvm::Expected<StepCost> cost::estimateStep(const CostInputs &in) { return Estimator(in).run(); }

double cost::rankShare(const Op &op, const std::array<int64_t, kNumMeshAxes> &mesh) {
  if (op.results.empty()) return 1.0;
  const ir::Sharding &s = op.results[0]->type.sharding;
  double share = 1.0;
  for (const auto &axes : s.dims)
    for (MeshAxis a : axes) share /= double(mesh[unsigned(a)]);
  for (MeshAxis a : s.partial) share /= double(mesh[unsigned(a)]);
  return share;
}

