//===- tests/unit/support/PluralTest.cpp - counts with their nouns --------===//

#include "support/Plural.h"
#include "runtime/Plural.h"

#include <gtest/gtest.h>

using namespace planc;

TEST(Plural, OneIsSingular) {
  EXPECT_EQ(counted(1, "device"), "1 device");
  EXPECT_EQ(counted(1, "micro-batch"), "1 micro-batch");
  EXPECT_EQ(counted(-1, "step"), "-1 step");
}

TEST(Plural, OthersAreRegularPlurals) {
  EXPECT_EQ(counted(0, "rank"), "0 ranks");
  EXPECT_EQ(counted(8, "device"), "8 devices");
  EXPECT_EQ(counted(4, "micro-batch"), "4 micro-batches");
  EXPECT_EQ(counted(2, "bus"), "2 buses");
  EXPECT_EQ(counted(3, "box"), "3 boxes");
  EXPECT_EQ(counted(2, "mesh"), "2 meshes");
  EXPECT_EQ(counted(2, "entry"), "2 entries");
  EXPECT_EQ(counted(2, "day"), "2 days"); // a vowel's y stays
  EXPECT_EQ(counted(2, "GPU"), "2 GPUs");
}

TEST(Plural, IrregularPluralsAreGiven) {
  EXPECT_EQ(counted(2, "index", "indices"), "2 indices");
  EXPECT_EQ(counted(1, "index", "indices"), "1 index");
  EXPECT_EQ(pluralOf(3, "structural violation"), "structural violations");
}

TEST(Plural, TheRuntimeCopyAgrees) {
  for (int64_t n : {0, 1, 2, 7})
    for (const char *noun : {"rank", "micro-batch", "entry", "step", "tensor"})
      EXPECT_EQ(runtime::counted(n, noun), counted(n, noun)) << n << " " << noun;
}
