//===- passes/ZeroSharding.cpp - ZeRO stages as layouts -------------------===//
//
// ZeRO (Rajbhandari et al., SC20) is a choice of layouts over dp, which
// sharding propagation then makes consistent with collectives:
//   stage 1: every optimizer state (Adam's m and v, SGD's momentum) is split
//            over dp, so each rank updates 1/dp of every parameter: the
//            gradients are reduce-scattered into that shard after backward
//            (whole gradient buffers live until then) and the new parameter
//            shards all-gathered -- the volume of one all-reduce (ZeRO's 2 Psi);
//   stage 2: the same layouts, and the reduce-scatters are issued in buckets
//            during backward (grad-buckets), so a gradient is released as
//            soon as its bucket is reduced;
//   stage 3: the parameters too are split over dp: gathered before each use
//            in forward and again in backward, the gradient reduce-scattered;
//            frozen weights (a LoRA base) are split and gathered the same way.
// Any tensor of rank >= 1 is split, whatever dp is: along the dim that pads
// least (after any tp split of that dim, dp minor-most), in ceil(rows / dp)
// blocks, the last ranks' padded with zeros (GSPMD's uneven sharding; the
// layout is the type's, ir/LocalBlocks.h, so the interpreter, the ledger and
// the communication summary all see the padded blocks). A dim that divides
// pads nothing and is taken first. Scalars stay whole. Per dim rather than
// a flat padded buffer (DeepSpeed, Megatron's distributed optimizer): the
// split stays a sharding every op rule understands, at the price of more
// padding where dp nears a dim (docs/memory.md). 8-bit Adam's
// block-quantised states keep the parameter's layout (stage 3 still splits
// the parameter). Under mixed precision the f32 master weights are
// optimizer state: stage 1 splits them, and the narrow copy made from the
// shard is all-gathered once per step (DeepSpeed gathers it after the
// update; the volume is the same).
//
// Needs: the optimizer pass's update ops. Reads option "zero_stage" (0-3).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "ir/Placement.h"

#include "ir/OpDef.h"

#include "llvm/ADT/STLExtras.h"
#include "support/Error.h"

#include <cstdlib>
#include <optional>
#include <tuple>
#include <unordered_set>

using namespace planc;
using namespace planc::ir;

namespace {

class ZeroShardingPass : public Pass {
public:
  explicit ZeroShardingPass(const PartitionOptions &o) : stage(int(o.zeroStage)) {}

  llvm::Error run(Module &m) override {
    if (stage < 0 || stage > 3)
      return makeError("zero_stage must be 0, 1, 2 or 3");
    int64_t dp = m.mesh[unsigned(MeshAxis::DP)];
    if (stage == 0 || dp == 1) return llvm::Error::success();
    // Master weights: parameters the model reads only through a cast to a
    // narrower dtype (mixed precision). The master copy is optimizer state
    // (ZeRO's K = 12 counts it with the moments), so stage 1 splits it too;
    // the narrow copy the model reads is gathered whole once per step.
    const std::unordered_set<const Value *> masters = masterWeights(m);
    for (const auto &op : m.ops) {
      if (!isOptimizerUpdate(op->kind)) continue;
      // States shaped as the parameter split with it; block-quantised ones stay whole.
      std::vector<Value *> split = operandsWithRole(*op, OperandRole::State);
      if (stage == 3 || masters.count(op->operands[0])) split.push_back(op->operands[0]);
      for (Value *v : split)
        if (v->kind == Value::Kind::Param) splitAlongLeastPadding(m, v, dp);
    }
    // Stage 3 stores every weight split, the frozen ones too (FSDP shards a
    // LoRA base or a frozen embedding like any parameter); a frozen weight is
    // gathered for its uses and never updated.
    if (stage == 3) {
      std::unordered_set<const Value *> updated;
      for (const auto &op : m.ops)
        if (isOptimizerUpdate(op->kind)) updated.insert(op->operands.begin(), op->operands.end());
      std::unordered_set<const Value *> read;
      for (const auto &op : m.ops)
        if (phaseOf(*op) != Phase::Optimizer) read.insert(op->operands.begin(), op->operands.end());
      for (Value *p : m.params)
        if (p->frozen && isFloat(p->type.dtype) && p->type.rank() > 0 && !updated.count(p) && read.count(p))
          splitAlongLeastPadding(m, p, dp);
    }
    return llvm::Error::success();
  }

private:
  /// Splits `v` over dp along the dim that pads least (ir/LocalBlocks.h: a
  /// dim that does not divide is cut into ceil-sized blocks, the last padded
  /// with zeros); at equal padding, a dim no other axis splits, then the
  /// first. A dim split by other axes takes dp minor-most. Scalars stay whole.
  static void splitAlongLeastPadding(const Module &m, Value *v, int64_t dp) {
    TensorType &t = v->type;
    t.sharding.dims.resize(t.rank());
    for (const auto &axes : t.sharding.dims)
      if (llvm::is_contained(axes, MeshAxis::DP)) return;
    std::optional<std::tuple<int64_t, bool, size_t>> best; // (padding elements, split by others, dim)
    for (size_t d = 0; d < t.rank(); ++d) {
      const auto &axes = t.sharding.dims[d];
      int64_t n = 1;
      for (MeshAxis a : axes) n *= m.mesh[unsigned(a)];
      if (t.shape[d] == 0 || t.shape[d] % n != 0) continue;
      int64_t part = t.shape[d] / n, rows = (part + dp - 1) / dp * dp;
      int64_t padding = (rows - part) * n * (t.numel() / t.shape[d]);
      std::tuple<int64_t, bool, size_t> key{padding, !axes.empty(), d};
      if (!best || key < *best) best = key;
    }
    if (best) t.sharding.dims[std::get<2>(*best)].push_back(MeshAxis::DP);
  }

  int stage;
};

} // namespace

std::unique_ptr<Pass> planc::createZeroShardingPass(const PartitionOptions &options) {
  return std::make_unique<ZeroShardingPass>(options);
}
