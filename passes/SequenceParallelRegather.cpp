//===- passes/SequenceParallelRegather.cpp - gather again in backward -----===//
//
// Under sequence parallelism the input of each column-parallel matmul (the
// layernorm's output, split along the sequence over tp) is all-gathered
// before the matmul, and backward reads it again for the weight gradient.
// Keeping the gathered [b, s, h] copy until backward would hold t times the
// sequence shard; Megatron-LM keeps the shard and gathers it again in
// backward (Korthikanti et al. 2022, section 4.2.2), which is what makes
// sequence parallelism's activations s·b·h·34/t. This pass does the same:
// every forward `all_gather` over tp of an activation (a value computed from
// the inputs, not from parameters alone) that a backward op reads is cloned
// into backward, right before the first backward op that reads it, and
// backward reads the clone. The forward gather is then released after its
// last forward use; the shard stays saved instead.
//
// The clone is the original's kind, operand, attributes, result type,
// location and path, plus `phase = "backward"`; its result is named
// %<original>.regather. It computes the same value, so every output is
// bit-identical. Parameter gathers (ZeRO-3) are repeated per phase by
// sharding propagation already and are left alone.
//
// Needs: sharding propagation. Reads option "sequence_parallel" (only
// "true" changes anything).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "ir/Placement.h"

#include <map>
#include <unordered_map>
#include <unordered_set>

using namespace planc;
using namespace planc::ir;

namespace {

bool isBackward(const Op &op) { return phaseOf(op) == Phase::Backward; }
bool isForward(const Op &op) { return phaseOf(op) == Phase::Forward; }

class SequenceParallelRegatherPass : public Pass {
public:
  explicit SequenceParallelRegatherPass(const PartitionOptions &o) : enabled(o.sequenceParallel) {}

  llvm::Error run(Module &m) override {
    if (!enabled) return llvm::Error::success();
    // Activations: values of forward ops with an input or an activation
    // among their operands.
    std::unordered_set<const Value *> activation(m.inputs.begin(), m.inputs.end());
    for (const auto &op : m.ops) {
      if (!isForward(*op)) continue;
      bool fromInputs = false;
      for (const Value *v : op->operands) fromInputs |= activation.count(v) > 0;
      if (fromInputs)
        for (const Value *r : op->results) activation.insert(r);
    }
    for (const Value *in : m.inputs) activation.erase(in);

    std::unordered_set<const Value *> regather;
    for (const auto &op : m.ops)
      if (op->kind == OpKind::AllGather && isForward(*op) && op->getString("axis") == "tp" &&
          activation.count(op->operands[0]))
        regather.insert(op->results[0]);
    if (regather.empty()) return llvm::Error::success();

    // The first backward reader of each gathered value gets the clone.
    std::unordered_map<const Value *, Value *> cloneOf;
    std::map<size_t, std::vector<std::unique_ptr<Op>>> clonesBefore;
    for (size_t i = 0; i < m.ops.size(); ++i) {
      Op &op = *m.ops[i];
      if (!isBackward(op)) continue;
      for (Value *&v : op.operands) {
        if (!regather.count(v)) continue;
        auto it = cloneOf.find(v);
        if (it == cloneOf.end()) {
          const Op &orig = *v->def;
          AttrMap attrs = orig.attrs;
          setPhase(attrs, Phase::Backward);
          Op *clone = m.append(orig.kind, orig.operands, {v->type}, std::move(attrs));
          clone->loc = orig.loc;
          clone->path = orig.path;
          m.rename(clone->results[0], m.uniqueName(v->name + ".regather"));
          it = cloneOf.emplace(v, clone->results[0]).first;
          clonesBefore[i].push_back(std::move(m.ops.back()));
          m.ops.pop_back();
        }
        v = it->second;
      }
    }
    m.insertBefore(std::move(clonesBefore));
    return llvm::Error::success();
  }

private:
  bool enabled;
};

} // namespace

std::unique_ptr<Pass> planc::createSequenceParallelRegatherPass(const PartitionOptions &options) {
  return std::make_unique<SequenceParallelRegatherPass>(options);
}
