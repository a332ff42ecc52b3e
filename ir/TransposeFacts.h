//===- ir/TransposeFacts.h - transposes a matmul can take as a flag -*- C++ -*-===//
//
// A transpose that swaps the last two dims and keeps the others is what a
// matmul's transpose_a / transpose_b flags say; the passes that fold such
// transposes (fuse-attention's k^T, fold-into-matmul) ask this one
// predicate.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_TRANSPOSEFACTS_H
#define PLANC_IR_TRANSPOSEFACTS_H

#include "ir/IR.h"

namespace planc::ir {

/// True for a transpose whose perm is [0, 1, ..., n-1, n-2].
inline bool swapsLastTwoDims(const Op &op) {
  if (op.kind != OpKind::Transpose) return false;
  std::vector<int64_t> perm = op.getInts("perm");
  size_t n = perm.size();
  if (n < 2) return false;
  for (size_t i = 0; i + 2 < n; ++i)
    if (perm[i] != int64_t(i)) return false;
  return perm[n - 2] == int64_t(n - 1) && perm[n - 1] == int64_t(n - 2);
}

} // namespace planc::ir

#endif
