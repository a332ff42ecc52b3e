//===- passes/FuseAttention.h - which attentions fuse, and why not -*- C++ -*-===//
//
// The `fuse-attention` pass (passes/Passes.h) rewrites each attention of the
// forward graph — matmul(q, k^T), an optional scale and causal mask, softmax
// over the keys, an optional dropout, matmul with v — into one
// flash_attention op (ir/ops/FlashAttention.cpp). It runs before autodiff,
// so backward is flash_attention_grad and no s x t value is ever kept: the
// memory planner plans the fused step, and the ledger is its allocation.
//
// findAttentionFusions is the pass's matcher on its own, for
// `planc emit --emit=fusion`: every group it would fuse, with its ops and
// the memory traffic saved, and every softmax it leaves alone with the
// reason.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_PASSES_FUSEATTENTION_H
#define PLANC_PASSES_FUSEATTENTION_H

#include "ir/IR.h"

#include <string>
#include <vector>

namespace planc {

struct AttentionFusion {
  /// The chain in order: matmul, scale, causal_mask, softmax, dropout,
  /// matmul (those present). For a refused one: the softmax alone.
  std::vector<const ir::Op *> ops;
  /// Why it is not fused; empty for a group that fuses.
  std::string refused;
  /// q, k, v (k as the scores' matmul reads it before its transpose).
  const ir::Value *q = nullptr, *k = nullptr, *v = nullptr;
  double scale = 1, dropout = 0;
  bool causal = false;
  /// The s x t intermediates the fused op never writes (scores, scaled,
  /// masked, probabilities, dropped), in bytes, summed.
  double intermediateBytes = 0;
  /// Memory traffic saved per execution: each intermediate written once and
  /// read once in forward, and its gradient likewise in backward.
  double trafficSavedBytes() const { return 4 * intermediateBytes; }
};

/// Every attention of `m`'s forward graph, fusable or not, in op order.
std::vector<AttentionFusion> findAttentionFusions(const ir::Module &m);

} // namespace planc

#endif
