//===- passes/StageBalance.h - how the pipeline pass cuts the layers -*- C++ -*-===//
//
// The chunk of every repeated layer under the balances of ir/StageBalance.h:
// layers are cut into S contiguous chunks (S = p x v virtual stages).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_PASSES_STAGEBALANCE_H
#define PLANC_PASSES_STAGEBALANCE_H

#include "ir/IR.h"

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace planc {

/// The chunk of every layer by count, as Megatron splits: L / S layers in
/// each of the S chunks, and the first L mod S chunks one more. The
/// remainder goes to the front because the last chunk also runs the head and
/// loss (a vocabulary-wide matmul), the first only the embedding (a lookup).
std::vector<int> balanceByLayers(size_t L, int S);

/// The chunk of every layer of `m` (`layers` in order, `layerIndex` their
/// positions): contiguous runs of layers, at least one per chunk, that
/// minimise the largest chunk's forward FLOPs, counting the ops before the
/// first layer (embedding) in chunk 0 and `tailOps` (head, loss) in the last
/// chunk. Equal layers and light ends give equal chunks.
std::vector<int> balanceByFlops(const ir::Module &m, const std::vector<std::string> &layers,
                                const std::unordered_map<std::string, size_t> &layerIndex,
                                const std::unordered_set<const ir::Op *> &tailOps, int S);

} // namespace planc

#endif
