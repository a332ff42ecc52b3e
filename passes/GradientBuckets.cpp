//===- passes/GradientBuckets.cpp - data-parallel gradient sync in buckets -===//
//
// Sharding propagation reduces each gradient over dp where the optimizer (or
// the gradient norm) first reads it: one all-reduce (or, under ZeRO-2/3,
// reduce-scatter) per parameter, all after backward. This pass groups those
// reductions into buckets as PyTorch DDP and Megatron do, and moves each
// bucket to right after the backward op that completes its last gradient, so
// the communication of a bucket overlaps the rest of backward:
//
//  - gradients are taken in the order backward produces them (the last
//    layers first) and packed into buckets of at most `bucket_bytes` bytes
//    of local gradient (a gradient larger than a bucket is a bucket alone);
//  - every reduction of bucket k gets `bucket = k` (a backend issues a
//    bucket's collectives as one group), and the bucket's reductions sit
//    together right after the op making its last gradient, in backward
//    (`phase = "backward"`);
//  - with option overlap_grad_reduce = false, and under ZeRO-1 (which keeps
//    whole gradients until the step), the reductions stay after backward,
//    where the optimizer first reads them, with their buckets: once per
//    step (reducesOncePerStep).
//
// The reductions are in the dtype of the gradient they read: the compute
// dtype by default, f32 under grads = f32, where the optimizer pass marks
// backward's widening cast `main_grad` and the partial sum passes through it.
//
// With several micro-batches, a bucket runs once per step, after the last
// micro-batch's write of its gradients (analysis/StageSequence.h) (Megatron syncs on
// the last micro-batch only).
//
// Needs: sharding propagation has run. Reads "bucket_bytes" (default 25 MiB),
// "overlap_grad_reduce" (default true) and "zero_stage".
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/LocalBlocks.h"
#include "ir/MeshLayout.h"
#include "ir/OpDef.h"
#include "ir/Placement.h"

#include <cstdlib>
#include <map>
#include <unordered_map>

using namespace planc;
using namespace planc::ir;

namespace {

class GradientBucketsPass : public Pass {
public:
  explicit GradientBucketsPass(const PartitionOptions &o)
      : bucketBytes(o.bucketBytes),
        // ZeRO-1 keeps whole gradients until the optimizer step (only its
        // states are split): its reduce-scatters stay after backward, once
        // per step on the gradients summed over the micro-batches (f32 ones
        // under grads = f32: Megatron's distributed optimizer). ZeRO-2/3
        // reduce-scatter per bucket in every micro-batch's backward.
        overlap(o.overlapGradReduce && o.zeroStage != 1) {}

  llvm::Error run(Module &m) override {
    if (m.mesh[unsigned(MeshAxis::DP)] == 1) return llvm::Error::success();
    MeshLayout mesh(m.mesh);
    std::unordered_map<const Value *, size_t> madeAt;
    for (size_t i = 0; i < m.ops.size(); ++i)
      for (Value *r : m.ops[i]->results) madeAt[r] = i;

    // The dp reductions of gradients: read a backward value, issued for the
    // optimizer.
    struct Sync {
      Op *op;
      size_t ready; // index of the op making its gradient
      uint64_t bytes;
    };
    std::vector<Sync> syncs;
    for (auto &up : m.ops) {
      Op &op = *up;
      if (!isReducingCollective(op.kind) || op.getString("axis") != "dp" ||
          phaseOf(op) != Phase::Optimizer)
        continue;
      const Value *g = op.operands[0];
      if (!g->def || phaseOf(*g->def) != Phase::Backward) continue;
      Shape local = localShape(g->type, mesh);
      uint64_t n = 1;
      for (int64_t d : local) n *= uint64_t(d);
      syncs.push_back({&op, madeAt.at(g), n * byteSize(g->type.dtype)});
    }
    if (syncs.empty()) return llvm::Error::success();
    std::stable_sort(syncs.begin(), syncs.end(), [](const Sync &a, const Sync &b) { return a.ready < b.ready; });

    // Pack in production order; a bucket is ready when its last gradient is.
    std::vector<std::vector<Sync>> buckets(1);
    uint64_t filled = 0;
    for (const Sync &s : syncs) {
      if (!buckets.back().empty() && filled + s.bytes > bucketBytes) {
        buckets.emplace_back();
        filled = 0;
      }
      buckets.back().push_back(s);
      filled += s.bytes;
    }
    std::unordered_map<const Op *, std::pair<size_t, size_t>> placeAfter; // op -> (ready index, bucket)
    for (size_t k = 0; k < buckets.size(); ++k) {
      size_t ready = buckets[k].back().ready;
      for (const Sync &s : buckets[k]) {
        s.op->attrs["bucket"] = int64_t(k);
        if (overlap) setPhase(*s.op, Phase::Backward);
        placeAfter[s.op] = {ready, k};
      }
    }
    if (!overlap) return llvm::Error::success(); // they stay where the optimizer first reads them

    // Rebuild the op list with each bucket right after its ready point.
    std::map<size_t, std::vector<std::unique_ptr<Op>>> pending; // ready index -> bucket ops
    std::vector<std::unique_ptr<Op>> old = std::move(m.ops);
    m.ops.clear();
    for (size_t i = 0; i < old.size(); ++i) {
      if (!old[i]) continue;
      if (placeAfter.count(old[i].get())) {
        pending[placeAfter[old[i].get()].first].push_back(std::move(old[i]));
        continue;
      }
    }
    for (size_t i = 0; i < old.size(); ++i) {
      if (!old[i]) continue; // moved into `pending`
      m.ops.push_back(std::move(old[i]));
      if (auto it = pending.find(i); it != pending.end())
        for (auto &op : it->second) m.ops.push_back(std::move(op));
    }
    return llvm::Error::success();
  }

private:
  uint64_t bucketBytes;
  bool overlap;
};

} // namespace

std::unique_ptr<Pass> planc::createGradientBucketsPass(const PartitionOptions &options) {
  return std::make_unique<GradientBucketsPass>(options);
}
