//===- passes/FuseElementwise.h - which elementwise chains fuse, and why not -*- C++ -*-===//
//
// The `fuse-elementwise` pass (passes/Passes.h) joins chains of elementwise
// ops into one fused_elementwise op (ir/ops/FusedElementwise.cpp) whose
// formula is theirs composed: bias + GeLU, the scale and add of a LoRA
// branch, the chains of gradients in backward. It runs last in the
// partition pipeline, on the step whose layouts, stages and recomputation
// are settled, so a fused op never straddles a stage, a phase or a layout.
//
// An edge producer -> consumer fuses when the producer's result is read by
// the consumer alone, is no output of the step, has the consumer's result
// type (shape, dtype, layout: nothing broadcasts inside the kernel) and both
// ops carry the same annotations (phase, stage, recompute), and the group
// stays within kMaxFusedOps ops (a kernel's formula is one expression: a
// chain of thousands would make one unbounded expression). The rest are
// refused with the reason; findElementwiseFusions says which, for
// `planc emit --emit=fusion`.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_PASSES_FUSEELEMENTWISE_H
#define PLANC_PASSES_FUSEELEMENTWISE_H

#include "ir/IR.h"

#include <string>
#include <vector>

namespace planc {

/// The most ops one fused_elementwise op holds.
constexpr size_t kMaxFusedOps = 64;

struct ElementwiseFusion {
  /// The ops of one group in step order; the last is the root, whose value
  /// the fused op keeps.
  std::vector<const ir::Op *> ops;
  /// The values of the group that are no longer written: every member's
  /// result but the root's, in bytes (global, as the IR types say).
  double intermediateBytes = 0;
};

/// An edge between elementwise ops that does not fuse, and why.
struct RefusedElementwiseEdge {
  const ir::Op *producer = nullptr, *consumer = nullptr;
  std::string reason;
};

struct ElementwiseFusionAnalysis {
  std::vector<ElementwiseFusion> groups; // of two ops or more
  std::vector<RefusedElementwiseEdge> refused;
};

/// The groups fuse-elementwise would make of `m`, and the refused edges.
ElementwiseFusionAnalysis findElementwiseFusions(const ir::Module &m);

} // namespace planc

#endif
