//===- passes/ShardingRules.h - how each op's dims correspond ---*- C++ -*-===//
//
// Sharding propagation reads each op's dims as einsum labels (ir/DimLabels.h):
// which dims are one, which stay whole, which are summed away, in which
// operands the op is linear. Each op family states its rule beside its shape
// rule, in the op table (OpDef::dimLabels, ir/ops/*.cpp); the propagation
// pass (passes/ShardingPropagation.cpp) is generic over them.
//
// Ops whose sharding is not a matter of dims alone have no rule and the pass
// handles them itself (passes/ShardingHandlers.cpp): reshape (dims merge and
// split), the loss (vocab-parallel cross-entropy), global_norm (sums over
// every shard) and the optimizer updates (laid out as their states).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_PASSES_SHARDINGRULES_H
#define PLANC_PASSES_SHARDINGRULES_H

#include "ir/DimLabels.h"
#include "ir/IR.h"

#include <optional>

namespace planc {

using ir::DimLabels;

/// The rule of `op` from the op table, or nullopt for the ops the pass
/// handles itself (or keeps whole).
std::optional<DimLabels> dimLabelsOf(const ir::Op &op);

} // namespace planc

#endif
