//===- ir/ops/DimRule.h - building an op's dim labels -----------*- C++ -*-===//
//
// Private to ir/ops/: the pieces the families' sharding rules
// (OpDef::dimLabels) are written with: fresh labels, operands aligned to a
// result by NumPy broadcasting, and the rule every elementwise op shares.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_OPS_DIMRULE_H
#define PLANC_IR_OPS_DIMRULE_H

#include "ir/DimLabels.h"
#include "ir/ops/OpSupport.h"

#include <optional>

namespace planc::ir {

class DimRule {
public:
  explicit DimRule(const Op &op) : op(op) {
    L.operands.resize(op.operands.size());
    L.results.resize(op.results.size());
    L.linearIn.assign(op.operands.size(), false);
  }
  int fresh(bool whole = false, bool summed = false) {
    L.whole.push_back(whole);
    L.summed.push_back(summed);
    return L.numLabels++;
  }
  std::vector<int> freshDims(size_t rank) {
    std::vector<int> dims;
    for (size_t d = 0; d < rank; ++d) dims.push_back(fresh());
    return dims;
  }
  size_t rankOf(size_t operand) const { return op.operands[operand]->type.rank(); }
  /// The rank of the first operand, 0 for an op without operands.
  size_t rank0() const { return op.operands.empty() ? 0 : rankOf(0); }
  int64_t dimSize(size_t operand, size_t d) const { return op.operands[operand]->type.shape[d]; }
  /// Operand `i` aligned to `target` from the right (NumPy broadcasting).
  std::vector<int> aligned(size_t i, const std::vector<int> &target, const Shape &targetShape) {
    std::vector<int> dims(rankOf(i), DimLabels::kNone);
    size_t offset = target.size() - rankOf(i);
    for (size_t d = 0; d < dims.size(); ++d)
      dims[d] = dimSize(i, d) == 1 && targetShape[d + offset] != 1 ? DimLabels::kNone : target[d + offset];
    return dims;
  }
  void makeWhole(int label) {
    if (label >= 0) L.whole[size_t(label)] = true;
  }

  /// Every operand has the result's shape (or broadcasts to it).
  DimLabels elementwise() {
    const Shape &shape = op.results[0]->type.shape;
    std::vector<int> res = freshDims(shape.size());
    for (size_t i = 0; i < op.operands.size(); ++i) L.operands[i] = aligned(i, res, shape);
    for (auto &r : L.results) r = res;
    return L;
  }

  const Op &op;
  DimLabels L;
};

/// The attribute `name` as a dim of a rank-`rank` operand, made non-negative.
inline std::optional<int64_t> dimAttr(const Op &op, const char *name, size_t rank) {
  return normalizeDim(op.getInt(name), rank);
}

/// The rule of ops that are elementwise and nothing more (each dim one label,
/// linear in no operand alone).
inline std::optional<DimLabels> elementwiseLabels(const Op &op) { return DimRule(op).elementwise(); }

} // namespace planc::ir

#endif
