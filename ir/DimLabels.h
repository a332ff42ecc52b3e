//===- ir/DimLabels.h - an op's dims as einsum labels -----------*- C++ -*-===//
//
// Sharding propagation needs, per op, which dims of its operands and results
// are "the same" dim (so a split of one is a split of the other), which must
// stay whole on every rank, which are summed away (so a split of them makes
// the result a partial sum), and in which operands the op is linear (so a
// partial-sum operand may stay partial). This is an einsum view of the op:
// every dim is a label. Each op family states its rule beside its shape rule
// (OpDef::dimLabels in ir/ops/*.cpp); the partitioner is generic over them.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_DIMLABELS_H
#define PLANC_IR_DIMLABELS_H

#include <vector>

namespace planc::ir {

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

} // namespace planc::ir

#endif
