//===- tests/unit/passes/FoldIntoMatMulTest.cpp - the fold-into-matmul pass -===//
//
// tiny-gpt's and tiny-llama's training steps in f64 with and without
// folding: the folded step has fewer transposes (tiny-gpt's tied head has
// none of its [1, 0] transposes left) and the interpreter gives the same
// loss, gradients and updates.
//
//===----------------------------------------------------------------------===//

#include "StepTestHelpers.h"

#include "ir/TransposeFacts.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace planc;
using namespace planc::ir;
using namespace planc::testing;

namespace {

std::unique_ptr<Module> step(const std::string &file, const std::string &fusion) {
  std::unique_ptr<Module> m = lower(sourceDir() + "/examples/" + file, true);
  if (!m) return nullptr;
  Settings s{{"optimizer", "adamw"}, {"fusion", fusion}};
  if (llvm::Error e = runPasses(*m, "canonicalize,autodiff,optimizer,fold-into-matmul,canonicalize", s)) {
    ADD_FAILURE() << llvm::toString(std::move(e));
    return nullptr;
  }
  return m;
}

size_t lastTwoSwaps(const Module &m) {
  size_t n = 0;
  for (const auto &op : m.ops) n += swapsLastTwoDims(*op);
  return n;
}

class FoldIntoMatMul : public ::testing::TestWithParam<const char *> {};

TEST_P(FoldIntoMatMul, FoldedStepEqualsTheUnfoldedOne) {
  auto plain = step(GetParam(), "none");
  auto folded = step(GetParam(), "aggressive");
  ASSERT_TRUE(plain && folded);
  EXPECT_GT(lastTwoSwaps(*plain), 0u);
  EXPECT_LT(lastTwoSwaps(*folded), lastTwoSwaps(*plain));
  expectSameStep(*plain, *folded, 256, 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Models, FoldIntoMatMul, ::testing::Values("tiny-gpt.plan", "tiny-llama.plan"));

} // namespace
