//===- passes/ShardingRules.cpp - how each op's dims correspond -----------===//

#include "passes/ShardingRules.h"

#include "ir/OpDef.h"

using namespace planc;
using namespace planc::ir;

std::optional<DimLabels> planc::dimLabelsOf(const Op &op) {
  auto rule = opDef(op.kind).dimLabels;
  if (!rule) return std::nullopt;
  return rule(op);
}
