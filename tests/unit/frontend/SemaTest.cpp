//===- tests/unit/frontend/SemaTest.cpp - dims arithmetic and elaboration ---------===//
//
// Small plans given as strings through the library API (planc::Compilation),
// checking the values Sema folds and the errors it reports.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "frontend/Verify.h"

#include <gtest/gtest.h>

using namespace planc;

namespace {

struct Result {
  bool ok;
  std::vector<Diagnostic> diagnostics;
  ModelInfo model;
  std::string firstError() const {
    for (const Diagnostic &d : diagnostics)
      if (d.severity == Severity::Error) return d.message;
    return "";
  }
};

Result check(const std::string &text, std::vector<std::string> sets = {}) {
  FrontendOptions options;
  options.setOverrides = std::move(sets);
  Compilation c(options);
  auto consumer = std::make_unique<CollectingConsumer>();
  CollectingConsumer *raw = consumer.get();
  c.setDiagnosticConsumer(std::move(consumer));
  bool ok = c.loadString("t.plan", text) && c.check();
  return {ok, raw->diagnostics, c.getModel()};
}

/// A model whose only parameter has shape [dim], so the folded value is visible.
Result dim(const std::string &expr, const std::string &lets = "") {
  return check("model m {\n" + lets + "\n param w : [" + expr + "]\n input t : i32[batch]\n"
               " loss = cross_entropy(reshape(w, [1, -1]), reshape(t, [1]))\n}\n");
}

int64_t folded(const Result &r) {
  return r.model.params.empty() ? -1 : r.model.params[0].shape[0];
}

TEST(SemaTest, DimsFoldWithPrecedenceAndParentheses) {
  EXPECT_EQ(folded(dim("2 + 3 * 4")), 14);
  EXPECT_EQ(folded(dim("(2 + 3) * 4")), 20);
  EXPECT_EQ(folded(dim("100 - 10 - 1")), 89) << "left associative";
  EXPECT_EQ(folded(dim("64 / 4 / 2")), 8);
  EXPECT_EQ(folded(dim("17 % 5")), 2);
  EXPECT_EQ(folded(dim("min(3, 9) + max(3, 9)")), 12);
  EXPECT_EQ(folded(dim("h / heads", "let h = 768, heads = 12")), 64);
  EXPECT_EQ(folded(dim("1_024")), 1024) << "digit separators";
}

TEST(SemaTest, IntegerDivisionMustBeExact) {
  Result r = dim("h / heads", "let h = 768, heads = 10");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.firstError(), "'h' (768) is not divisible by 'heads' (10)");
}

TEST(SemaTest, OverflowIsAnErrorNotAWrap) {
  EXPECT_EQ(dim("9223372036854775807 + 1").firstError(), "integer overflow in addition");
  EXPECT_EQ(dim("4294967296 * 4294967296").firstError(), "integer overflow in multiplication");
  EXPECT_EQ(dim("-9223372036854775807 - 2").firstError(), "integer overflow in subtraction");
  EXPECT_EQ(dim("5 / 0").firstError(), "division by zero");
  EXPECT_EQ(dim("5 % 0").firstError(), "division by zero");
  // Each dim fits, but the tensor would not: its element count is checked too.
  EXPECT_EQ(dim("4000000000, 4000000000").firstError(),
            "tensor of shape [4000000000, 4000000000] has more than 2^62 elements");
}

TEST(SemaTest, DimsMustBePositiveIntegers) {
  EXPECT_EQ(dim("0").firstError(), "dimension must be a positive integer, got the integer 0");
  EXPECT_EQ(dim("2 - 5").firstError(), "dimension must be a positive integer, got the integer -3");
  EXPECT_FALSE(dim("1.5").ok);
}

TEST(SemaTest, BatchIsTheMicroBatch) {
  Result r = check("model m {\n input t : i32[batch, 7]\n param w : [3, 5]\n"
                   " loss = cross_entropy(gather(w, t), t)\n}\n"
                   "train { global_batch = 12, micro_batch = 3 }\n");
  ASSERT_TRUE(r.ok) << r.firstError();
  ASSERT_EQ(r.model.inputs.size(), 1u);
  EXPECT_EQ(r.model.inputs[0].shape, (Shape{3, 7}));
}

TEST(SemaTest, RepeatUnrollsWithIndexedPaths) {
  Result r = check("layer lin(x: [b, h]) {\n param w : [h, h]\n return x @ w\n}\n"
                   "model m {\n input t : i32[batch]\n param e : [10, 4]\n x = gather(e, t)\n"
                   " repeat 3 { x = lin(x) }\n loss = cross_entropy(x, t)\n}\n");
  ASSERT_TRUE(r.ok) << r.firstError();
  std::vector<std::string> paths;
  for (const ParamInfo &p : r.model.params) paths.push_back(p.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"e", "blocks.0.lin.w", "blocks.1.lin.w", "blocks.2.lin.w"}));
  EXPECT_EQ(r.model.numLayers, 3);
  EXPECT_EQ(r.model.totalParams(), 40u + 3 * 16u);
}

TEST(SemaTest, ScaledNormalDividesByTheDepth) {
  Result r = check("model m {\n input t : i32[batch]\n param e : [10, 4]\n x = gather(e, t)\n"
                   " repeat 8 { param w : [4, 4] = scaled_normal(0.02)\n x = x @ w }\n"
                   " loss = cross_entropy(x, t)\n}\n");
  ASSERT_TRUE(r.ok) << r.firstError();
  ASSERT_EQ(r.model.params.size(), 9u);
  EXPECT_EQ(r.model.params[1].init, InitKind::ScaledNormal);
  EXPECT_NEAR(r.model.params[1].initStd, 0.02 / 4.0, 1e-15) << "std / sqrt(2 * 8)";
}

TEST(SemaTest, OverridesReachSema) {
  // tp = 3 does not divide the 8 columns of w.
  std::string plan = "model m {\n input t : i32[batch]\n param e : [10, 8] @shard(tp, 1)\n"
                     " loss = cross_entropy(gather(e, t), t)\n}\n"
                     "cluster { nodes = 1, gpus_per_node = 3 }\nparallel { mesh(tp = 3) }\n";
  Result r = check(plan);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.firstError(), "dimension 1 of parameter 'e' of size 8 is not divisible by tp = 3");
  Result fixed = check(plan, {"parallel.mesh.tp=1", "parallel.mesh.dp=3"});
  EXPECT_TRUE(fixed.ok) << fixed.firstError();
}

} // namespace
