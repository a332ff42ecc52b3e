//===- analysis/SavedActivations.h - what the backward pass keeps -*- C++ -*-===//
//
// Queries about saved activations, for the recompute pass and for the
// analyses that size memory and communication after it (passes/Recompute.cpp
// has the pass's rules).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_ANALYSIS_SAVEDACTIVATIONS_H
#define PLANC_ANALYSIS_SAVEDACTIVATIONS_H

#include "ir/IR.h"

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace planc {


/// True for ops of the forward section: those whose `phase` attribute is
/// neither "backward" nor "optimizer".
bool isForwardOp(const ir::Op &op);

/// The forward values that backward ops read: results of forward ops used as
/// an operand by at least one op with `phase = "backward"`, each once, in
/// forward op order. Parameters and inputs are not activations and are not
/// listed. After the recompute pass these are the activations actually kept
/// from forward to backward.
std::vector<const ir::Value *> savedActivations(const ir::Module &m);

/// The repeated-layer instance an op path belongs to: the path up to and
/// including its first all-digit component, which `repeat` creates
/// ("blocks.3.attention" -> "blocks.3", "encoder.layers.0" ->
/// "encoder.layers.0"); "" for a path outside any repeat ("ln_f", "").
std::string repeatedLayerOf(llvm::StringRef path);

} // namespace planc

#endif
