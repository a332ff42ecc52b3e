//===- analysis/StageSequence.cpp - what one pipeline rank runs, in order ---===//

#include "analysis/StageSequence.h"
#include "analysis/Placement.h"

#include "ir/OpDef.h"

#include <algorithm>
#include <map>
#include <unordered_map>

using namespace planc;
using namespace planc::ir;
using namespace planc::sequence;

StageSequencer::StageSequencer(const Module &m, const pipeline::PipelineSchedule &schedule)
    : m(m), schedule(schedule), once(oncePerStepValues(m)) {
  places.reserve(m.ops.size());
  for (const auto &op : m.ops) {
    if (isPointToPoint(op->kind)) largestTag = std::max(largestTag, op->getInt("tag"));
    places.push_back({!hasPipelineStage(*op), pipelineStageOf(*op), workOf(*op), virtualStageOf(*op),
                      reducesOncePerStep(*op), !op->results.empty() && once.count(op->results[0]) > 0});
  }
}

int64_t StageSequencer::tagOf(const Op &op, int microBatch) const {
  return op.getInt("tag") + (microBatch > 0 ? int64_t(microBatch) * largestTag : 0);
}

std::vector<SequencedOp> StageSequencer::sequence(int stage) const {
  const int mbs = schedule.options.microBatches;
  const bool zeroBubble = schedule.options.style == pipeline::ScheduleStyle::ZeroBubble;
  // The ops of each instruction, by (virtual stage, work), in module order,
  // each with its work and whether it is made once per step (looked up once
  // here, not once per micro-batch: a large model has millions of those).
  struct Grouped {
    const Op *op;
    Work work;
    bool stepWide;
  };
  std::map<std::pair<int, Work>, std::vector<Grouped>> groups;
  std::vector<const Op *> optimizer, buckets;
  for (size_t i = 0; i < m.ops.size(); ++i) {
    const Op &op = *m.ops[i];
    const OpPlace &at = places[i];
    if (!at.everyStage && int(at.stage) != stage) continue;
    Work w = at.work;
    if (w == Work::Optimizer) {
      optimizer.push_back(&op);
      continue;
    }
    if (mbs > 1 && at.oncePerStep) {
      buckets.push_back(&op);
      continue;
    }
    int vs = at.virtualStage;
    groups[{vs < 0 ? stage : vs, w == Work::WeightGrad && !zeroBubble ? Work::Backward : w}].push_back(
        {&op, w, at.stepWide});
  }
  std::vector<SequencedOp> out;
  // Where each value of the last micro-batch (and each step-wide one) is
  // written last, for the buckets.
  std::unordered_map<const Value *, size_t> lastWrite;
  const bool placeBuckets = !buckets.empty();
  for (const pipeline::Instr &in : schedule.ranks[size_t(stage)]) {
    if (!in.isCompute()) continue;
    Work w = in.kind == pipeline::InstrKind::Forward      ? Work::Forward
             : in.kind == pipeline::InstrKind::WeightGrad ? Work::WeightGrad
                                                          : Work::Backward;
    auto it = groups.find({schedule.virtualStage(stage, in.chunk), w});
    if (it == groups.end()) continue;
    for (const Grouped &g : it->second) {
      if (g.stepWide && in.microBatch > 0) continue; // made once, in the first micro-batch
      out.push_back({g.op, g.stepWide ? -1 : in.microBatch, g.work, in.chunk});
      if (placeBuckets && (g.stepWide || in.microBatch == mbs - 1))
        for (const Value *r : g.op->results) lastWrite[r] = out.size() - 1;
    }
  }
  // Each bucket right after the last write of its operands (in their order
  // where several are ready at one step).
  if (!buckets.empty()) {
    std::vector<std::pair<size_t, size_t>> at; // (insert after, bucket)
    for (size_t b = 0; b < buckets.size(); ++b) {
      size_t after = 0;
      bool any = false;
      for (const Value *v : buckets[b]->operands)
        if (auto it = lastWrite.find(v); it != lastWrite.end()) after = std::max(after, it->second), any = true;
      at.push_back({any ? after + 1 : out.size(), b});
    }
    std::stable_sort(at.begin(), at.end());
    std::vector<SequencedOp> merged;
    merged.reserve(out.size() + buckets.size());
    size_t next = 0;
    for (size_t i = 0; i <= out.size(); ++i) {
      for (; next < at.size() && at[next].first == i; ++next) {
        const Op *op = buckets[at[next].second];
        merged.push_back({op, -1, workOf(*op), 0});
      }
      if (i < out.size()) merged.push_back(out[i]);
    }
    out = std::move(merged);
  }
  for (const Op *op : optimizer) out.push_back({op, -1, Work::Optimizer, 0});
  return out;
}

std::vector<std::vector<SequencedOp>> StageSequencer::sequenceAll() const {
  const int stages = schedule.options.stages;
  std::vector<std::vector<SequencedOp>> all;
  for (int s = 0; s < stages; ++s) all.push_back(sequence(s));
  // Per channel (from, to): the sends in the sender's order, by tag.
  std::map<std::pair<int, int>, std::vector<int64_t>> sent;
  for (int s = 0; s < stages; ++s)
    for (const SequencedOp &q : all[size_t(s)])
      if (q.op->kind == OpKind::Send) {
        int to = int(((s + q.op->getInt("peer_offset", 0)) % stages + stages) % stages);
        sent[{s, to}].push_back(tagOf(*q.op, q.microBatch));
      }
  for (int s = 0; s < stages; ++s) {
    std::vector<SequencedOp> &seq = all[size_t(s)];
    std::map<int, std::vector<size_t>> recvsFrom; // by peer, positions in seq
    for (size_t i = 0; i < seq.size(); ++i)
      if (seq[i].op->kind == OpKind::Recv) {
        int from = int(((s + seq[i].op->getInt("peer_offset", 0)) % stages + stages) % stages);
        recvsFrom[from].push_back(i);
      }
    if (recvsFrom.empty()) continue;
    // Where each receive goes: walking the sender's order backwards, a
    // receive placed after the next message's moves to just before it.
    // Positions are doubles so a move needs no renumbering; ties keep the
    // order of the moves.
    std::vector<std::pair<double, size_t>> key;
    for (size_t i = 0; i < seq.size(); ++i) key.push_back({double(i), i});
    for (auto &[from, positions] : recvsFrom) {
      std::map<int64_t, size_t> byTag;
      for (size_t p : positions) byTag[tagOf(*seq[p].op, seq[p].microBatch)] = p;
      std::vector<size_t> inSendOrder;
      for (int64_t tag : sent[{from, s}])
        if (auto it = byTag.find(tag); it != byTag.end()) inSendOrder.push_back(it->second);
      for (size_t k = inSendOrder.size(); k-- > 1;) {
        double &mine = key[inSendOrder[k - 1]].first, next = key[inSendOrder[k]].first;
        if (mine > next) mine = next - 1e-6 * double(inSendOrder.size() - k + 1);
      }
    }
    std::stable_sort(key.begin(), key.end());
    std::vector<SequencedOp> ordered;
    ordered.reserve(seq.size());
    for (const auto &[_, i] : key) ordered.push_back(seq[i]);
    seq = std::move(ordered);
  }
  return all;
}
