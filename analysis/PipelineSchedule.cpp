//===- analysis/PipelineSchedule.cpp - GPipe, 1F1B, interleaved, zero-bubble ===//
//
// Each style first fixes the order of compute on every rank; the messages are
// then put around the compute that produces or consumes them (a receive right
// before its use, a send right after its producer).
//
//===----------------------------------------------------------------------===//

#include "analysis/PipelineSchedule.h"
#include "support/Error.h"

#include <algorithm>
#include <deque>
#include <map>
#include <tuple>

using namespace planc;
using namespace planc::pipeline;

int64_t pipeline::costInTicks(const ScheduleOptions &options, InstrKind kind) {
  bool split = options.style == ScheduleStyle::ZeroBubble;
  switch (kind) {
  case InstrKind::Forward: return 1;
  case InstrKind::Backward: return split ? 1 : 2;
  case InstrKind::WeightGrad: return 1;
  default: return 0;
  }
}

namespace {

Instr compute(InstrKind kind, int mb, int chunk) { return Instr{kind, mb, chunk, -1}; }

/// GPipe: all forwards, then all backwards; every micro-batch's activations
/// are alive at once.
std::vector<Instr> gpipeOrder(const ScheduleOptions &o) {
  std::vector<Instr> order;
  for (int mb = 0; mb < o.microBatches; ++mb) order.push_back(compute(InstrKind::Forward, mb, 0));
  for (int mb = 0; mb < o.microBatches; ++mb) order.push_back(compute(InstrKind::Backward, mb, 0));
  return order;
}

/// 1F1B (and, with v > 1, Megatron's interleaved 1F1B): a warm-up of
/// forwards deep enough to fill the pipeline below this rank, then one forward
/// and one backward in turn, then the remaining backwards. Forward k runs
/// chunk (k / p) % v of micro-batch (k / pv) * p + k % p: groups of p
/// micro-batches go through one chunk before the next chunk; backwards visit
/// the chunks in reverse.
std::vector<Instr> oneFOneBOrder(const ScheduleOptions &o, int rank) {
  int p = o.stages, v = o.virtualStages, total = o.microBatches * v;
  int warmup = v == 1 ? p - rank - 1 : (p - rank - 1) * 2 + (v - 1) * p;
  warmup = std::min(warmup, total);
  auto unit = [&](InstrKind kind, int k) {
    int group = k / (p * v), within = k % (p * v);
    int chunk = within / p;
    if (kind != InstrKind::Forward) chunk = v - 1 - chunk;
    // With v = 1 the groups are plain micro-batch numbers.
    int mb = v == 1 ? k : group * p + within % p;
    return compute(kind, mb, chunk);
  };
  std::vector<Instr> order;
  for (int k = 0; k < warmup; ++k) order.push_back(unit(InstrKind::Forward, k));
  for (int k = 0; k < total - warmup; ++k) {
    order.push_back(unit(InstrKind::Forward, warmup + k));
    order.push_back(unit(InstrKind::Backward, k));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(unit(InstrKind::Backward, k));
  return order;
}

/// Zero-bubble (in the spirit of ZB-H1): the 1F1B order of forwards and
/// input-gradient backwards, whose weight-gradient halves wait in a queue and
/// run whenever the next F or B would have to wait for a neighbour. A unit-cost
/// replay places them, so the W work lands exactly in the bubbles of 1F1B.
std::vector<std::vector<Instr>> zeroBubbleOrders(const ScheduleOptions &o) {
  int p = o.stages;
  std::vector<std::vector<Instr>> base(p), orders(p);
  for (int r = 0; r < p; ++r) base[r] = oneFOneBOrder(o, r);
  // Finish time of (F or B, micro-batch, stage), for the neighbours' waits.
  std::map<std::tuple<bool, int, int>, int64_t> done;
  std::vector<size_t> next(p, 0);
  std::vector<int64_t> freeAt(p, 0);
  std::vector<std::deque<int>> pendingW(p);
  size_t issued = 0, totalWork = 0; // every B brings one W
  for (auto &b : base)
    for (const Instr &i : b) totalWork += i.kind == InstrKind::Backward ? 2 : 1;
  for (int64_t t = 0; issued < totalWork; ++t) {
    for (int r = 0; r < p; ++r) {
      if (freeAt[r] > t) continue;
      auto ready = [&](const Instr &i) {
        bool fwd = i.kind == InstrKind::Forward;
        int dep = fwd ? r - 1 : r + 1;
        if (dep < 0 || dep >= p) return true;
        auto it = done.find({fwd, i.microBatch, dep});
        return it != done.end() && it->second <= t;
      };
      if (next[r] < base[r].size() && ready(base[r][next[r]])) {
        const Instr &i = base[r][next[r]++];
        int64_t cost = costInTicks(o, i.kind);
        done[{i.kind == InstrKind::Forward, i.microBatch, r}] = t + cost;
        if (i.kind == InstrKind::Backward) pendingW[r].push_back(i.microBatch);
        orders[r].push_back(i);
        freeAt[r] = t + cost;
        ++issued;
      } else if (!pendingW[r].empty()) {
        orders[r].push_back(compute(InstrKind::WeightGrad, pendingW[r].front(), 0));
        pendingW[r].pop_front();
        freeAt[r] = t + costInTicks(o, InstrKind::WeightGrad);
        ++issued;
      }
    }
  }
  return orders;
}

/// Puts the messages around the compute: a stage receives its input right
/// before the forward that needs it and sends its output right after.
std::vector<Instr> withMessages(const std::vector<Instr> &order, int rank, const PipelineSchedule &s) {
  int p = s.options.stages, last = s.numVirtualStages() - 1;
  int prev = (rank + p - 1) % p, next = (rank + 1) % p;
  std::vector<Instr> out;
  for (const Instr &i : order) {
    int stage = s.virtualStage(rank, i.chunk);
    if (i.kind == InstrKind::Forward) {
      if (stage > 0) out.push_back(Instr{InstrKind::RecvAct, i.microBatch, i.chunk, prev});
      out.push_back(i);
      if (stage < last) out.push_back(Instr{InstrKind::SendAct, i.microBatch, i.chunk, next});
    } else if (i.kind == InstrKind::Backward) {
      if (stage < last) out.push_back(Instr{InstrKind::RecvGrad, i.microBatch, i.chunk, next});
      out.push_back(i);
      if (stage > 0) out.push_back(Instr{InstrKind::SendGrad, i.microBatch, i.chunk, prev});
    } else {
      out.push_back(i);
    }
  }
  return out;
}

} // namespace

llvm::Expected<PipelineSchedule> pipeline::buildSchedule(const ScheduleOptions &o) {
  if (o.stages < 1 || o.microBatches < 1 || o.virtualStages < 1)
    return makeError("a pipeline needs at least one stage, micro-batch and chunk (p = " + std::to_string(o.stages) +
                ", m = " + std::to_string(o.microBatches) + ", v = " + std::to_string(o.virtualStages) + ")");
  if (o.virtualStages > 1 && o.style != ScheduleStyle::Interleaved)
    return makeError(std::string("v = ") + std::to_string(o.virtualStages) + " chunks per rank needs the interleaved schedule, not " +
                spelling(o.style));
  if (o.style == ScheduleStyle::Interleaved && o.microBatches % o.stages != 0)
    return makeError("interleaved 1F1B needs the micro-batches (m = " + std::to_string(o.microBatches) +
                ") to be a multiple of the stages (p = " + std::to_string(o.stages) + ")");

  PipelineSchedule s;
  s.options = o;
  std::vector<std::vector<Instr>> orders;
  if (o.style == ScheduleStyle::ZeroBubble) {
    orders = zeroBubbleOrders(o);
  } else {
    for (int r = 0; r < o.stages; ++r)
      orders.push_back(o.style == ScheduleStyle::GPipe ? gpipeOrder(o) : oneFOneBOrder(o, r));
  }
  for (int r = 0; r < o.stages; ++r) s.ranks.push_back(withMessages(orders[r], r, s));
  return s;
}
