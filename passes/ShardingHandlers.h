//===- passes/ShardingHandlers.h - SPMD expansions of single ops -*- C++ -*-===//
//
// Private to the sharding propagation pass. Most ops are partitioned by
// their dim labels alone (passes/ShardingRules.h); the ops here need more
// than a layout: reshape (a split moves with the major dim of a merged or
// split group), cross-entropy over vocab-split logits (Megatron's
// vocab-parallel loss), global_norm (sums of squares per layout,
// all-reduced over their axes) and the optimizer updates (laid out as their
// states). Kept apart from the generic propagation, as XLA keeps its dot
// handler apart from the SPMD partitioner.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_PASSES_SHARDINGHANDLERS_H
#define PLANC_PASSES_SHARDINGHANDLERS_H

#include "passes/Reshard.h"
#include "passes/ShardingRules.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace planc::spmd {

inline ir::Sharding withoutAxis(ir::Sharding s, MeshAxis axis) {
  for (auto &axes : s.dims) axes.erase(std::remove(axes.begin(), axes.end(), axis), axes.end());
  s.partial.erase(std::remove(s.partial.begin(), s.partial.end(), axis), s.partial.end());
  return s;
}

inline ir::Sharding wholeOf(const ir::Sharding &s, size_t rank) {
  ir::Sharding r = normalized(s, rank);
  r.partial.clear();
  return r;
}

/// The layout an op takes: the axes of each label, the operands' and the
/// results' shardings.
struct Decision {
  std::vector<std::vector<MeshAxis>> assign;
  std::vector<ir::Sharding> operands, results;
};

/// The expansions, over the propagation's pieces (the derived class).
class Handlers {
public:
  virtual ~Handlers() = default;

  /// Partitions `op` if it is one of the ops above: nullopt for any other,
  /// else whether the op stays (false: replaced by others, results mapped).
  std::optional<bool> expand(ir::Op &op);

protected:
  /// Chooses the op's layout from its labels; `unlock`: a label made
  /// splittable although the rule has it whole.
  virtual Decision decide(const ir::Op &op, DimLabels L, int unlock = -1) = 0;
  /// Moves the operands to the decided layout and lays out the results.
  virtual void apply(ir::Op &op, const Decision &dec) = 0;
  virtual ir::Value *move(ir::Value *v, const ir::Sharding &target, const OpStamp &stamp) = 0;
  /// Everything whole.
  virtual void replicate(ir::Op &op) = 0;
  virtual Resharder &resharder() = 0;
  virtual int64_t devices(const std::vector<MeshAxis> &axes) const = 0;
  /// Later readers of `from` read `to`.
  virtual void replace(ir::Value *from, ir::Value *to) = 0;
  /// The layout the update wants `v` in (a gradient), or null.
  virtual const ir::Sharding *hintOf(const ir::Value *v) const = 0;
  virtual int zeroStageOf() const = 0;

private:
  void reshape(ir::Op &op);
  bool crossEntropy(ir::Op &op);
  bool crossEntropyGrad(ir::Op &op);
  void setDenominator(ir::Op &op, const Decision &dec, const DimLabels &L);
  void globalNorm(ir::Op &op);
  void update(ir::Op &op);

  std::unordered_map<const ir::Value *, std::pair<ir::Value *, ir::Value *>> vocabStats; // logits -> (row max, sum of exp)
};

/// The operand an update's layout follows: its first state shaped as the
/// parameter, else (block-quantised states) the parameter.
const ir::Value *updateLayoutOperand(const ir::Op &op);

} // namespace planc::spmd

#endif
