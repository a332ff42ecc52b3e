//===- passes/ParamPrefetch.cpp - ZeRO-3 gathers issued one use ahead -----===//
//
// Under ZeRO-3 sharding propagation gathers each parameter over dp right
// before its use, once in forward and once in backward (passes/Reshard.h keys
// them by phase), so the memory planner can release the whole parameter after
// its last use in that phase. A gather right before its use cannot overlap
// anything; DeepSpeed prefetches the next parameters while the current ones
// compute. This pass does the same with a prefetch depth of one: within each
// phase, the gathers are taken in the order of their first use (the prefetch
// order), and gather k moves up to just before the first use of gather k-1,
// so it runs while the layer before it computes (a gather already there, a
// bias read by the same op as its weight, stays and is not marked `prefetch`).
// A gather reads only its
// parameter, so moving it up keeps every value defined before its use.
//
// Needs: sharding propagation. Reads option "overlap_param_gather" (default
// true; false leaves the gathers where they are).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "ir/Placement.h"

#include <unordered_map>

using namespace planc;
using namespace planc::ir;

namespace {

class ParamPrefetchPass : public Pass {
public:
  explicit ParamPrefetchPass(const PartitionOptions &o) : enabled(o.overlapParamGather) {}

  llvm::Error run(Module &m) override {
    if (!enabled || m.mesh[unsigned(MeshAxis::DP)] == 1) return llvm::Error::success();
    std::unordered_map<const Op *, double> pos;
    std::unordered_map<const Value *, size_t> firstUse;
    for (size_t i = 0; i < m.ops.size(); ++i) {
      pos[m.ops[i].get()] = double(i);
      for (const Value *v : m.ops[i]->operands) firstUse.emplace(v, i);
    }
    bool moved = false;
    for (Phase phase : {Phase::Forward, Phase::Backward}) {
      std::vector<Op *> gathers;
      for (const auto &op : m.ops)
        if (op->kind == OpKind::AllGather && op->getString("axis") == "dp" &&
            op->operands[0]->kind == Value::Kind::Param && phaseOf(*op) == phase &&
            firstUse.count(op->results[0]))
          gathers.push_back(op.get());
      std::stable_sort(gathers.begin(), gathers.end(), [&](const Op *a, const Op *b) {
        return firstUse.at(a->results[0]) < firstUse.at(b->results[0]);
      });
      for (size_t k = 1; k < gathers.size(); ++k) {
        double before = double(firstUse.at(gathers[k - 1]->results[0])) - 1e-3 * double(gathers.size() - k);
        if (before < pos[gathers[k]]) {
          pos[gathers[k]] = before;
          gathers[k]->attrs["prefetch"] = true;
          moved = true;
        }
      }
    }
    if (moved)
      std::stable_sort(m.ops.begin(), m.ops.end(),
                       [&](const std::unique_ptr<Op> &a, const std::unique_ptr<Op> &b) { return pos[a.get()] < pos[b.get()]; });
    return llvm::Error::success();
  }

private:
  bool enabled;
};

} // namespace

std::unique_ptr<Pass> planc::createParamPrefetchPass(const PartitionOptions &options) {
  return std::make_unique<ParamPrefetchPass>(options);
}
