//===- runtime/BlockCopy.h - moving the overlap of two blocks of one tensor -*- C++ -*-===//
//
// A rank holds a block of each sharded tensor: `shape` elements starting at
// global index `offset` in every dim (ExecParam::blockOffsets). A block may
// reach past the global shape -- the zero padding of an uneven split -- and
// what lies there is never copied. Checkpoints written under one plan load
// under another (resharding) by copying, for every block a file holds, the
// part that overlaps the block the loading rank needs; --init-from takes a
// rank's block out of a whole tensor the same way.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_BLOCKCOPY_H
#define PLANC_RUNTIME_BLOCKCOPY_H

#include <cstdint>
#include <vector>

namespace planc::runtime {

/// A block of a tensor of `global` shape: `shape` elements from `offset`.
struct Block {
  std::vector<int64_t> offset, shape;
};

/// Copies the elements that lie in both blocks and inside `global` from
/// `src` (laid out as block `from`) to `dst` (laid out as block `to`), each
/// `elementBytes` wide; the number of elements copied. Ranks must agree.
int64_t copyOverlap(const uint8_t *src, const Block &from, uint8_t *dst, const Block &to,
                    const std::vector<int64_t> &global, unsigned elementBytes);

/// Elements of `to` inside `global` (what a load must cover).
int64_t elementsInside(const Block &to, const std::vector<int64_t> &global);

} // namespace planc::runtime

#endif
