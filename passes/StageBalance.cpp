//===- passes/StageBalance.cpp - how the pipeline pass cuts the layers -----===//
//
// The two chunk balances of ir/StageBalance.h, for passes/PipelinePartition.cpp.
//
//===----------------------------------------------------------------------===//

#include "passes/StageBalance.h"

#include "analysis/SavedActivations.h"
#include "ir/OpDef.h"
#include "ir/Placement.h"

#include <algorithm>

using namespace planc;
using namespace planc::ir;

std::vector<int> planc::balanceByLayers(size_t L, int S) {
  const size_t base = L / size_t(S), extra = L % size_t(S);
  std::vector<int> chunkOf(L, 0);
  size_t l = 0;
  for (size_t k = 0; k < size_t(S); ++k)
    for (size_t n = 0; n < base + (k < extra); ++n) chunkOf[l++] = int(k);
  return chunkOf;
}

std::vector<int> planc::balanceByFlops(const Module &m, const std::vector<std::string> &layers,
                                       const std::unordered_map<std::string, size_t> &layerIndex,
                                       const std::unordered_set<const Op *> &tailOps, int S) {
  const size_t L = layers.size();
  std::vector<double> flops(L, 0);
  double head = 0, tail = 0;
  for (size_t i = 0; i < m.ops.size(); ++i) {
    const Op &op = *m.ops[i];
    if (workOf(op) != Work::Forward || !opDef(op.kind).flops) continue;
    double f = opDef(op.kind).flops(op);
    std::string layer = repeatedLayerOf(op.path);
    if (!layer.empty()) flops[layerIndex.at(layer)] += f;
    else if (!tailOps.count(&op)) head += f;
    else tail += f;
  }
  // best[k][j]: the least largest chunk for layers [0, j) in k chunks.
  std::vector<double> prefix(L + 1, 0);
  for (size_t j = 0; j < L; ++j) prefix[j + 1] = prefix[j] + flops[j];
  auto cost = [&](size_t from, size_t to, int chunk) {
    double c = prefix[to] - prefix[from];
    if (chunk == 0) c += head;
    if (chunk == S - 1) c += tail;
    return c;
  };
  const double inf = 1e300;
  std::vector<std::vector<double>> best(size_t(S) + 1, std::vector<double>(L + 1, inf));
  std::vector<std::vector<size_t>> cut(size_t(S) + 1, std::vector<size_t>(L + 1, 0));
  best[0][0] = 0;
  for (int k = 1; k <= S; ++k)
    for (size_t j = size_t(k); j <= L; ++j)
      for (size_t i = size_t(k - 1); i < j; ++i) {
        double c = std::max(best[size_t(k - 1)][i], cost(i, j, k - 1));
        // Ties go to the more even split (the later cut), so uniform
        // layers split equally.
        if (c < best[size_t(k)][j] * (1 - 1e-12) ||
            (c <= best[size_t(k)][j] * (1 + 1e-12) && i > cut[size_t(k)][j] && j * size_t(k - 1) >= i * size_t(k))) {
          best[size_t(k)][j] = c;
          cut[size_t(k)][j] = i;
        }
      }
  std::vector<int> chunkOf(L, 0);
  size_t j = L;
  for (int k = S; k >= 1; --k) {
    size_t i = cut[size_t(k)][j];
    for (size_t l = i; l < j; ++l) chunkOf[l] = k - 1;
    j = i;
  }
  return chunkOf;
}
