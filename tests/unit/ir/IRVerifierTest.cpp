//===- tests/unit/ir/IRVerifierTest.cpp - the IR verifier --------------------===//
//
// Each rule of the verifier (docs/ir.md) on a module that breaks it: the
// message names the offending values and op and starts with the op's .plan
// location when it has one.
//
//===----------------------------------------------------------------------===//

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

using namespace planc;
using namespace planc::ir;

namespace {

std::unique_ptr<Module> parse(llvm::StringRef text) {
  auto m = parseIR(text, "t.ir");
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return std::make_unique<Module>();
  }
  return std::move(*m);
}

/// Every problem, rendered, one per line; "" when the module verifies.
std::string problems(const Module &m) {
  std::string out;
  for (const VerifierProblem &p : findProblems(m)) out += (out.empty() ? "" : "\n") + p.render();
  return out;
}

std::string problems(llvm::StringRef text) { return problems(*parse(text)); }

TEST(IRVerifierTest, AWellFormedModuleVerifies) {
  auto m = parse(R"(module @m mesh(dp = 2, tp = 4) {
  param %w : f32[8, 4]{shard(1, tp)} init normal(0.02)
  input %x : f32[2, 8]{shard(0, dp)}
  %y = matmul(%x, %w) {transpose_a = false, transpose_b = false} : f32[2, 4]{shard(0, dp), shard(1, tp)}
  %z = neg(%y) : f32[2, 4]{partial(dp+tp)}
  return %z as "z"
})");
  EXPECT_EQ(problems(*m), "");
  EXPECT_FALSE(bool(verify(*m)));
}

TEST(IRVerifierTest, ResultTypesMustBeWhatTheOpGives) {
  EXPECT_EQ(problems(R"(module @m {
  input %a : f32[2, 3]
  input %b : f32[3, 5]
  %c = matmul(%a, %b) {transpose_a = false, transpose_b = false} : f32[2, 4] loc("m.plan":7:9)
  return %c as "c"
})"),
            "m.plan:7:9: error: result %c of 'matmul' defining %c is declared f32[2, 4] but the op gives f32[2, 5]");
  EXPECT_EQ(problems(R"(module @m {
  input %a : f32[2]
  %c = neg(%a) : bf16[2]
  return
})"),
            "error: result %c of 'neg' defining %c is declared bf16[2] but the op gives f32[2]");
  // The op's own type rule speaks when the operands do not fit together.
  EXPECT_EQ(problems(R"(module @m {
  input %a : f32[2, 3]
  input %b : f32[4, 5]
  %c = matmul(%a, %b) {transpose_a = false, transpose_b = false} : f32[2, 5] loc("m.plan":3:1)
  return
})"),
            "m.plan:3:1: error: 'matmul' defining %c: contracted dims differ: 3 of [2, 3] and 4 of [4, 5]");
}

TEST(IRVerifierTest, OperandAndResultCountsFollowOpsDef) {
  EXPECT_EQ(problems(R"(module @m {
  input %a : f32[2]
  %c = add(%a) : f32[2] loc("m.plan":2:4)
  return
})"),
            "m.plan:2:4: error: 'add' defining %c has 1 operand; it takes 2");
  EXPECT_EQ(problems(R"(module @m {
  input %a : f32[2]
  %c, %d = neg(%a) : f32[2], f32[2]
  return
})"),
            "error: 'neg' defining %c, %d has 2 results; it gives 1");
}

TEST(IRVerifierTest, OperandsMustBeDefinedBeforeUse) {
  auto m = parse(R"(module @m {
  input %a : f32[2]
  %b = neg(%a) : f32[2] loc("m.plan":1:1)
  %c = exp(%b) : f32[2] loc("m.plan":2:1)
  return %c as "c"
})");
  std::swap(m->ops[0], m->ops[1]);
  EXPECT_EQ(problems(*m), "m.plan:2:1: error: %b is used by 'exp' defining %c before it is defined");
}

TEST(IRVerifierTest, ValuesAreDefinedOnceAndPointBackAtTheirOp) {
  auto m = parse(R"(module @m {
  input %a : f32[2]
  %b = neg(%a) : f32[2]
  %c = exp(%b) : f32[2]
  return %c as "c"
})");
  m->ops[1]->results[0] = m->ops[0]->results[0];
  EXPECT_EQ(problems(*m), "error: result %b of 'exp' defining %b does not point back at its op as result 0\n"
                          "error: %b is defined twice\n"
                          "error: output 'c' is %c, which is not defined");

  auto n = parse("module @m {\n  input %a : f32[2]\n  input %b : f32[2]\n  return\n}");
  n->inputs[1]->name = "a"; // behind the module's back: the name table disagrees
  EXPECT_EQ(problems(*n), "error: two values are named %a");
}

TEST(IRVerifierTest, ShardingsMustFitTheMesh) {
  EXPECT_EQ(problems(R"(module @m mesh(dp = 2, tp = 4) {
  input %a : f32[6, 8]{shard(0, tp)} loc("m.plan":5:3)
  return
})"),
            "m.plan:5:3: error: %a : f32[6, 8]{shard(0, tp)}: dimension 0 (6) does not divide evenly over tp (4 devices)");
  EXPECT_EQ(problems(R"(module @m mesh(dp = 2, tp = 4) {
  input %a : f32[8, 8]{shard(0, dp+tp)}
  input %b : f32[12, 8]{shard(0, dp+tp)}
  return
})"),
            "error: %b : f32[12, 8]{shard(0, dp+tp)}: dimension 0 (12) does not divide evenly over dp+tp (8 devices)");
  EXPECT_EQ(problems(R"(module @m mesh(tp = 2) {
  input %a : f32[8, 8]{shard(0, tp), shard(1, tp)}
  input %b : f32[8]{shard(0, tp), partial(tp)}
  return
})"),
            "error: %a : f32[8, 8]{shard(0, tp), shard(1, tp)} uses mesh axis 'tp' twice\n"
            "error: %b : f32[8]{shard(0, tp), partial(tp)} uses mesh axis 'tp' twice");
  EXPECT_EQ(problems(R"(module @m mesh(tp = 2) {
  input %a : f32[8]{shard(0, dp)}
  input %b : f32[8]{partial(pp)}
  return
})"),
            "error: %a : f32[8]{shard(0, dp)} is split over 'dp', which has size 1 in the mesh\n"
            "error: %b : f32[8]{partial(pp)} is split over 'pp', which has size 1 in the mesh");
}

TEST(IRVerifierTest, OnlyAMinorMostDpSplitMayPad) {
  // ZeRO's storage: a dp split minor-most need not divide (padded blocks,
  // ir/LocalBlocks.h); the axes outside it, and every other axis, must.
  EXPECT_EQ(problems(R"(module @m mesh(dp = 3, tp = 2) {
  param %a : f32[7, 8]{shard(0, dp)} init zeros
  param %b : f32[10]{shard(0, tp+dp)} init zeros
  return
})"),
            "");
  EXPECT_EQ(problems(R"(module @m mesh(dp = 3, tp = 2) {
  param %a : f32[9]{shard(0, tp+dp)} init zeros
  param %b : f32[9]{shard(0, dp+tp)} init zeros
  return
})"),
            "error: %a : f32[9]{shard(0, tp+dp)}: dimension 0 (9) does not divide evenly over tp+dp (6 devices)\n"
            "error: %b : f32[9]{shard(0, dp+tp)}: dimension 0 (9) does not divide evenly over dp+tp (6 devices)");
}

TEST(IRVerifierTest, ResultShardingsAreCheckedToo) {
  EXPECT_EQ(problems(R"(module @m mesh(tp = 4) {
  input %a : f32[6]
  %b = neg(%a) : f32[6]{shard(0, tp)} loc("m.plan":9:2)
  return
})"),
            "m.plan:9:2: error: %b : f32[6]{shard(0, tp)}: dimension 0 (6) does not divide evenly over tp (4 devices)");
}

TEST(IRVerifierTest, CollectivesChangeShardingsAsTheirRuleSays) {
  EXPECT_EQ(problems(R"(module @m mesh(dp = 2, pp = 2, tp = 2) {
  input %p : f32[4, 6]{partial(dp+tp)}
  %r = all_reduce(%p) {axis = "tp"} : f32[4, 6]{partial(dp)}
  %s = reduce_scatter(%r) {axis = "dp", dim = 0} : f32[4, 6]{shard(0, dp)}
  %g = all_gather(%s) {axis = "dp", dim = -2} : f32[4, 6]
  %t = all_to_all(%s) {axis = "dp", concat_dim = 0, split_dim = 1} : f32[4, 6]{shard(1, dp)}
  %b = broadcast(%t) {axis = "tp", root = 0} : f32[4, 6]{shard(1, dp)}
  send(%b) {axis = "pp", peer_offset = 1, tag = 0}
  %v = recv() {axis = "pp", dtype = "f32", peer_offset = -1, shape = [4, 6], tag = 0} : f32[4, 6]
  return %g as "g", %v as "v"
})"),
            "");
  EXPECT_EQ(problems(R"(module @m mesh(tp = 2) {
  input %p : f32[4]{partial(tp)}
  %r = all_reduce(%p) {axis = "tp"} : f32[4]{partial(tp)} loc("m.plan":3:1)
  return
})"),
            "m.plan:3:1: error: result %r of 'all_reduce' defining %r is declared f32[4]{partial(tp)} but the op gives "
            "f32[4]");
  EXPECT_EQ(problems(R"(module @m mesh(tp = 2) {
  input %x : f32[4]
  %r = all_reduce(%x) {axis = "tp"} : f32[4]
  %g = all_gather(%x) {axis = "tp", dim = 0} : f32[4]
  return
})"),
            "error: 'all_reduce' defining %r: operand %x : f32[4] is not a partial sum over 'tp'\n"
            "error: 'all_gather' defining %g: operand %x : f32[4] is not split over 'tp' along dimension 0 (dim)");
  EXPECT_EQ(problems(R"(module @m mesh(tp = 2) {
  input %x : f32[4]
  %r = broadcast(%x) {axis = "dp", root = 0} : f32[4]
  %s = broadcast(%x) {axis = "xp", root = 0} : f32[4]
  return
})"),
            "error: 'broadcast' defining %r communicates over 'dp', which has size 1 in the mesh\n"
            "error: 'broadcast' defining %s: attribute 'axis' names no mesh axis: 'xp'");
}

TEST(IRVerifierTest, OutputsMustBeDefinedAndNamedOnce) {
  auto m = parse("module @m {\n  input %a : f32[2]\n  %b = neg(%a) : f32[2]\n  return %b as \"x\", %a as \"x\"\n}");
  EXPECT_EQ(problems(*m), "error: two outputs are named 'x'");
  Module other;
  Value *stray = other.addInput("stray", TensorType({2}, DType::F32));
  m->outputs = {{"y", stray}, {"", m->inputs[0]}};
  EXPECT_EQ(problems(*m), "error: output 'y' is %stray, which is not defined\nerror: an output has an empty name");
}

TEST(IRVerifierTest, ParamsNeedASensibleInit) {
  auto m = parse("module @m {\n  param %w : f32[2] init normal(0.5) loc(\"m.plan\":1:1)\n  return\n}");
  m->params[0]->initStd = -1;
  EXPECT_EQ(problems(*m), "m.plan:1:1: error: param %w has init std -1.0; it must be finite and not negative");
}

TEST(IRVerifierTest, VerifyJoinsEveryProblemIntoOneError) {
  auto m = parse(R"(module @m mesh(tp = 4) {
  input %a : f32[6]{shard(0, tp)}
  %c = add(%a) : f32[6] loc("m.plan":2:4)
  return
})");
  llvm::Error e = verify(*m);
  ASSERT_TRUE(bool(e));
  EXPECT_EQ(llvm::toString(std::move(e)),
            "error: %a : f32[6]{shard(0, tp)}: dimension 0 (6) does not divide evenly over tp (4 devices)\n"
            "m.plan:2:4: error: 'add' defining %c has 1 operand; it takes 2");
}

TEST(IRVerifierTest, PrinterNeverFailsOnABrokenModule) {
  auto m = parse("module @m {\n  input %a : f32[2]\n  %b = neg(%a) : f32[2]\n  return %b as \"b\"\n}");
  m->ops[0]->operands.push_back(nullptr);
  m->ops[0]->results.push_back(nullptr);
  m->outputs.push_back({"null", nullptr});
  EXPECT_EQ(toText(*m), "module @m {\n  input %a : f32[2]\n  %b, %<null> = neg(%a, %<null>) : f32[2], <null>\n"
                        "  return %b as \"b\", %<null> as \"null\"\n}\n");
  EXPECT_NE(problems(*m), "");
}

/// `{ATTRS}` on one op of a two-rank pipeline module.
std::string placementProblems(llvm::StringRef attrs) {
  return problems(("module @m mesh(pp = 2) {\n  input %a : f32[2]\n  %b = neg(%a) {" + attrs +
                   "} : f32[2]\n  return %b as \"b\"\n}")
                      .str());
}

TEST(IRVerifierTest, PlacementIsSpelledAsDocumented) {
  EXPECT_EQ(placementProblems("phase = \"backward\", pipeline_stage = 1, work = \"weight_grad\", micro_batch = 3"), "");
  EXPECT_EQ(placementProblems("phase = \"optimizer\""), "");
  EXPECT_EQ(placementProblems("phase = \"backwards\""),
            "error: 'neg' defining %b: phase must be \"forward\", \"backward\" or \"optimizer\"");
  EXPECT_EQ(placementProblems("phase = 1"),
            "error: 'neg' defining %b: phase must be \"forward\", \"backward\" or \"optimizer\"");
  EXPECT_EQ(placementProblems("work = \"optimizer\""),
            "error: 'neg' defining %b: work must be \"forward\", \"backward\" or \"weight_grad\"");
  EXPECT_EQ(placementProblems("micro_batch = -1"), "error: 'neg' defining %b: micro_batch -1 is negative");
  EXPECT_EQ(placementProblems("micro_batch = \"0\""), "error: 'neg' defining %b: micro_batch must be an integer");
}

TEST(IRVerifierTest, PlacementStaysInsideThePpMesh) {
  EXPECT_EQ(placementProblems("pipeline_stage = 2"),
            "error: 'neg' defining %b: pipeline_stage 2 is outside the pp mesh of size 2");
  EXPECT_EQ(placementProblems("pipeline_stage = -1"),
            "error: 'neg' defining %b: pipeline_stage -1 is outside the pp mesh of size 2");
  // Interleaved: virtual stage v runs on rank v mod pp.
  EXPECT_EQ(placementProblems("pipeline_stage = 1, virtual_stage = 3"), "");
  EXPECT_EQ(placementProblems("pipeline_stage = 1, virtual_stage = 2"),
            "error: 'neg' defining %b: virtual_stage 2 does not run on pipeline_stage 1 (a virtual stage v runs on "
            "rank v mod 2)");
  EXPECT_EQ(placementProblems("virtual_stage = 0"), "error: 'neg' defining %b: virtual_stage without a pipeline_stage");
}

} // namespace
