//===- passes/ShardingRules.h - how each op's dims correspond ---*- C++ -*-===//
//
// Sharding propagation needs, per op, which dims of its operands and results
// are "the same" dim (so a split of one is a split of the other), which must
// stay whole on every rank, which are summed away (so a split of them makes
// the result a partial sum), and in which operands the op is linear (so a
// partial-sum operand may stay partial). This is an einsum view of the op:
// every dim is a label. The rules are data, one function per op family; the
// propagation pass (passes/ShardingPropagation.cpp) is generic over them.
//
// Ops whose sharding is not a matter of dims alone are not described here and
// the pass handles them itself: reshape (dims merge and split), the loss
// (vocab-parallel cross-entropy), global_norm (sums over every shard) and the
// optimizer updates (laid out as their states).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_PASSES_SHARDINGRULES_H
#define PLANC_PASSES_SHARDINGRULES_H

#include "ir/IR.h"

#include <optional>
#include <vector>

namespace planc {

struct DimLabels {
  static constexpr int kNone = -1; // a size-1 dim that broadcasts: never split
  int numLabels = 0;
  std::vector<std::vector<int>> operands; // per operand, per dim: its label
  std::vector<std::vector<int>> results;  // per result, per dim
  std::vector<bool> whole;   // per label: must stay unsplit (softmax'd, normalised, sliced dims)
  std::vector<bool> summed;  // per label: may be split where a result lacks it, making that result partial
  std::vector<bool> linearIn; // per operand: linear in it alone (the others fixed)
  bool jointlyLinear = false; // linear in all operands together (add, sub, concat)
};

/// The rule of `op`, or nullopt for the ops the pass handles itself.
std::optional<DimLabels> dimLabelsOf(const ir::Op &op);

} // namespace planc

#endif
