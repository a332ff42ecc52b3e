//===- tests/unit/runtime/BlockCopyTest.cpp - the overlap of two blocks ---===//

#include "runtime/BlockCopy.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace planc::runtime;

namespace {

/// The global tensor's values: element (i, j) of a [rows, cols] tensor is i * 100 + j.
std::vector<int32_t> block(const Block &b, const std::vector<int64_t> &global) {
  std::vector<int32_t> v(size_t(b.shape[0] * b.shape[1]), -1);
  for (int64_t i = 0; i < b.shape[0]; ++i)
    for (int64_t j = 0; j < b.shape[1]; ++j) {
      int64_t gi = b.offset[0] + i, gj = b.offset[1] + j;
      v[size_t(i * b.shape[1] + j)] = gi < global[0] && gj < global[1] ? int32_t(gi * 100 + gj) : 0;
    }
  return v;
}

TEST(BlockCopyTest, CopiesWhereTwoBlocksOverlapAndNothingElse) {
  const std::vector<int64_t> global = {5, 7};
  const Block from{{2, 3}, {3, 4}}, to{{1, 4}, {3, 3}};
  std::vector<int32_t> src = block(from, global), dst(9, -7);
  EXPECT_EQ(copyOverlap(reinterpret_cast<const uint8_t *>(src.data()), from, reinterpret_cast<uint8_t *>(dst.data()), to,
                        global, 4),
            6); // rows 2..3, cols 4..6
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      int64_t gi = 1 + i, gj = 4 + j;
      bool inside = gi >= 2 && gi < 4 && gj >= 4 && gj < 7;
      EXPECT_EQ(dst[size_t(i * 3 + j)], inside ? int32_t(gi * 100 + gj) : -7) << i << ", " << j;
    }
}

TEST(BlockCopyTest, NeverCopiesThePaddingOfAnUnevenSplit) {
  // [5] split in two blocks of 3: the second's last element is padding.
  const std::vector<int64_t> global = {5};
  const Block whole{{0}, {5}}, second{{3}, {3}};
  std::vector<int32_t> src = {10, 11, 12, 13, 14}, dst = {0, 0, 0};
  EXPECT_EQ(copyOverlap(reinterpret_cast<const uint8_t *>(src.data()), whole, reinterpret_cast<uint8_t *>(dst.data()),
                        second, global, 4),
            2);
  EXPECT_EQ(dst, (std::vector<int32_t>{13, 14, 0}));
  EXPECT_EQ(elementsInside(second, global), 2);
}

TEST(BlockCopyTest, ReassemblesATensorFromItsBlocks) {
  // Four blocks of a [4, 6] tensor (2 x 2) into one of 3 x 4 at (1, 1).
  const std::vector<int64_t> global = {4, 6};
  const Block to{{1, 1}, {3, 4}};
  std::vector<int32_t> dst(12, -1);
  int64_t copied = 0;
  for (int64_t bi = 0; bi < 2; ++bi)
    for (int64_t bj = 0; bj < 2; ++bj) {
      Block from{{bi * 2, bj * 3}, {2, 3}};
      std::vector<int32_t> src = block(from, global);
      copied += copyOverlap(reinterpret_cast<const uint8_t *>(src.data()), from, reinterpret_cast<uint8_t *>(dst.data()),
                            to, global, 4);
    }
  EXPECT_EQ(copied, 12);
  EXPECT_EQ(dst, block(to, global));
}

TEST(BlockCopyTest, Scalars) {
  const std::vector<int64_t> global;
  float a = 3.5f, b = 0;
  EXPECT_EQ(copyOverlap(reinterpret_cast<const uint8_t *>(&a), Block{}, reinterpret_cast<uint8_t *>(&b), Block{}, global,
                        4),
            1);
  EXPECT_EQ(b, 3.5f);
}

} // namespace
