//===- tests/unit/compiler/MemoryCheckTest.cpp - planc check's memory verdict and fixes ---===//
//
// The ranking of fixes (pure: made-up fixes in, order out), the candidates a
// plan gets (from plan text), --budget parsing, and the communication price:
// the per-step bytes counted on the placed step of one micro-batch must equal
// those of every micro-batch in the order each rank runs them
// (analysis/StageSequence.h).
//
//===----------------------------------------------------------------------===//

#include "compiler/AutoPlan.h"
#include "compiler/MemoryCheck.h"
#include "compiler/Pipeline.h"
#include "ir/MeshLayout.h"
#include "analysis/CommSummary.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace planc;

namespace {

MemoryFix fix(std::string change, bool fits, uint64_t peak, double comm = 0, double flops = 0, double bubble = 0) {
  MemoryFix f;
  f.change = std::move(change);
  f.fits = fits;
  f.peakArena = peak;
  f.extra.commBytes = comm;
  f.extra.recomputeFlops = flops;
  f.extra.bubble = bubble;
  return f;
}

std::vector<std::string> order(std::vector<MemoryFix> fixes) {
  rankMemoryFixes(fixes);
  std::vector<std::string> out;
  for (const MemoryFix &f : fixes) out.push_back(f.change);
  return out;
}

TEST(MemoryFixRanking, FittingFixesComeFirstCheapestCommunicationFirst) {
  EXPECT_EQ(order({fix("over-small", false, 10), fix("fits-chatty", true, 50, 1e9), fix("fits-quiet", true, 70, -5)}),
            (std::vector<std::string>{"fits-quiet", "fits-chatty", "over-small"}));
}

TEST(MemoryFixRanking, TiesOnBytesGoToFewerFlopsThenSmallerBubbleThenSmallerPeak) {
  EXPECT_EQ(order({fix("recompute", true, 10, 0, 1e12), fix("pp", true, 30, 0, 0, 0.2), fix("mb", true, 20, 0, 0, 0),
                   fix("mb-smaller", true, 15, 0, 0, 0)}),
            (std::vector<std::string>{"mb-smaller", "mb", "pp", "recompute"}));
}

TEST(MemoryFixRanking, FittingFixesGoByPredictedStepTimeBeforeBytes) {
  MemoryFix slowQuiet = fix("slow-quiet", true, 10, 0), fastChatty = fix("fast-chatty", true, 10, 1e12);
  slowQuiet.stepSeconds = 2.0;
  fastChatty.stepSeconds = 1.5;
  EXPECT_EQ(order({slowQuiet, fastChatty}), (std::vector<std::string>{"fast-chatty", "slow-quiet"}));
}

TEST(MemoryFixRanking, ExactFixesBeforeOtherNumericsBeforeOtherTraining) {
  MemoryFix exact = fix("zero", true, 10), adam8 = fix("adam8bit", true, 10), lora = fix("lora", true, 10);
  exact.stepSeconds = 3.0;
  adam8.stepSeconds = 2.0;
  adam8.changesNumerics = true;
  lora.stepSeconds = 1.0;
  lora.changesTraining = true;
  EXPECT_EQ(order({lora, adam8, exact}), (std::vector<std::string>{"zero", "adam8bit", "lora"}));
}

TEST(MemoryFixRanking, FixesThatDoNotFitGoBySmallestPeakWhateverTheyCost) {
  EXPECT_EQ(order({fix("a", false, 30, 0), fix("b", false, 10, 1e12, 1e15, 0.5), fix("c", false, 20)}),
            (std::vector<std::string>{"b", "c", "a"}));
}

TEST(MemoryFixRanking, EqualFixesKeepTheirProposedOrder) {
  // Sums of doubles that should tie (a byte apart in the last place) do.
  EXPECT_EQ(order({fix("first", true, 5, 100.0000001), fix("second", true, 5, 100.0), fix("third", true, 5, 99.9999999)}),
            (std::vector<std::string>{"first", "second", "third"}));
}

TEST(MemoryFixRanking, ChangesOfWhatIsTrainedComeAfterTheOthersThatFit) {
  MemoryFix lora = fix("lora", true, 10, 0); // free, and the smallest peak
  lora.changesTraining = true;
  MemoryFix loraOver = fix("lora-over", false, 5);
  loraOver.changesTraining = true;
  EXPECT_EQ(order({lora, fix("zero3", true, 40, 1e9), fix("over", false, 20), loraOver}),
            (std::vector<std::string>{"zero3", "lora", "lora-over", "over"}));
}

MemoryFix withSets(std::string change, uint64_t peak, std::vector<std::string> sets) {
  MemoryFix f = fix(std::move(change), false, peak);
  f.sets = std::move(sets);
  return f;
}

TEST(MemoryFixCombinations, BestChangeOfEachSettingTakenTwoAtATime) {
  std::vector<MemoryFix> singles = {
      withSets("tp2", 50, {"parallel.mesh=mesh(dp = 2, tp = 2)"}),
      withSets("tp4", 40, {"parallel.mesh=mesh(dp = 1, tp = 4)"}), // the best mesh
      withSets("zero2", 70, {"parallel.zero=2"}),
      withSets("zero3", 60, {"parallel.zero=3"}),                  // the best ZeRO
      withSets("full", 65, {"parallel.recompute=full"}),
      withSets("mb1", 90, {"train.micro_batch=1", "train.global_batch=8"}),
  };
  std::vector<MemoryFix> pairs = combineMemoryFixes(singles, 3, 2);
  std::vector<std::string> names;
  for (const MemoryFix &f : pairs) names.push_back(f.change);
  // The three closest settings (mesh 40, zero 60, recompute 65); mb1 is the
  // fourth and left out; never two meshes or two ZeRO stages.
  EXPECT_EQ(names, (std::vector<std::string>{"tp4 and zero3", "tp4 and full", "zero3 and full"}));
  // Overrides of both parts; the peak to beat is the better part's.
  EXPECT_EQ(pairs[0].sets, (std::vector<std::string>{"parallel.mesh=mesh(dp = 1, tp = 4)", "parallel.zero=3"}));
  EXPECT_EQ(pairs[0].peakArena, 40u);
  EXPECT_EQ(pairs[2].peakArena, 60u);
  // Three at a time from four settings: four triples.
  EXPECT_EQ(combineMemoryFixes(singles, 4, 3).size(), 4u);
  EXPECT_TRUE(combineMemoryFixes(singles, 4, 1).empty());
}

TEST(MemoryBudget, ParsesSizesAndNamesBadValues) {
  auto ok = parseBudget("70GiB");
  ASSERT_TRUE(bool(ok));
  EXPECT_EQ(*ok, 70ull << 30);
  auto spaced = parseBudget("80 GB");
  ASSERT_TRUE(bool(spaced));
  EXPECT_EQ(*spaced, 80000000000ull);
  for (const char *bad : {"70", "abc", "0GiB", "-1GiB", "300 GB/s", "", "1e30 GiB"}) {
    auto r = parseBudget(bad);
    ASSERT_FALSE(bool(r)) << bad;
    EXPECT_NE(llvm::toString(r.takeError()).find(std::string("got '") + bad + "'"), std::string::npos);
  }
}

const char *kPlan = R"(
import std.gpt
model m {
  let vocab = 64, seq = 8, hidden = 16, heads = 2, layers = 4
  input tokens : i32[batch, seq]
  input targets : i32[batch, seq]
  x = embedding(tokens, vocab, hidden) as wte
  repeat layers {
    x = x + attention(layernorm(x), heads, causal = true)
    x = x + mlp(layernorm(x), ffn = 4 * hidden)
  }
  loss = lm_loss(layernorm(x) as ln_f, wte.weight, targets)
}
train {
  global_batch = 32, micro_batch = 4
  optimizer adamw(lr = 1e-3)
}
cluster {
  nodes = 1, gpus_per_node = 4
  device cpu
}
parallel {
  mesh(dp = 4)
  zero = 1
}
)";

class MemoryCheckPlan : public ::testing::Test {
protected:
  class Silent : public DiagnosticConsumer {
    void handle(const Diagnostic &) override {}
  };
  std::unique_ptr<Compilation> compile(std::vector<std::string> sets = {}) {
    FrontendOptions o;
    o.setOverrides = std::move(sets);
    auto c = std::make_unique<Compilation>(o);
    c->setDiagnosticConsumer(std::make_unique<Silent>());
    EXPECT_TRUE(c->loadString("t.plan", kPlan) && c->check());
    return c;
  }
};

TEST_F(MemoryCheckPlan, ProposesEveryKindOfChangeKeepingTheRankCount) {
  auto c = compile();
  std::vector<std::string> changes;
  for (const MemoryFix &f : proposeMemoryFixes(*c)) changes.push_back(f.change);
  // Each family's strongest change first.
  EXPECT_EQ(changes, (std::vector<std::string>{"zero = 3", "zero = 2", "recompute full", "recompute selective",
                                               "mesh(dp = 1, tp = 4)", "mesh(dp = 2, tp = 2)",
                                               "mesh(dp = 1, pp = 4)", "mesh(dp = 2, pp = 2)", "micro_batch = 1",
                                               "micro_batch = 2", "optimizer adam8bit",
                                               "adapters lora(rank = 8)"}));
}

TEST_F(MemoryCheckPlan, UnderABudgetTheStrongestOfEveryFamilyIsTakenFirst) {
  auto c = compile();
  auto names = [](const std::vector<MemoryFix> &fixes) {
    std::vector<std::string> out;
    for (const MemoryFix &f : fixes) out.push_back(f.change);
    return out;
  };
  // One candidate allowed: still one of each family (7 here).
  EXPECT_EQ(names(selectMemoryFixes(proposeMemoryFixes(*c), 1)),
            (std::vector<std::string>{"zero = 3", "recompute full", "mesh(dp = 1, tp = 4)", "mesh(dp = 1, pp = 4)",
                                      "micro_batch = 1", "optimizer adam8bit", "adapters lora(rank = 8)"}));
  // Nine: then the second of the first families, in the order proposed.
  EXPECT_EQ(names(selectMemoryFixes(proposeMemoryFixes(*c), 9)),
            (std::vector<std::string>{"zero = 3", "zero = 2", "recompute full", "recompute selective",
                                      "mesh(dp = 1, tp = 4)", "mesh(dp = 1, pp = 4)", "micro_batch = 1",
                                      "optimizer adam8bit", "adapters lora(rank = 8)"}));
  EXPECT_EQ(selectMemoryFixes(proposeMemoryFixes(*c), 100).size(), 12u);
}

TEST_F(MemoryCheckPlan, FusionTurnedDownIsAFamilyOfChanges) {
  auto fusionChanges = [&](std::vector<std::string> sets) {
    auto c = compile(std::move(sets));
    std::vector<std::string> out;
    for (const MemoryFix &f : proposeMemoryFixes(*c))
      if (f.family == "fusion") out.push_back(f.change + " " + f.sets.front());
    return out;
  };
  EXPECT_EQ(fusionChanges({"train.fusion=none"}),
            (std::vector<std::string>{"fusion = aggressive train.fusion=aggressive",
                                      "fusion = elementwise train.fusion=elementwise"}));
  EXPECT_EQ(fusionChanges({"train.fusion=elementwise"}),
            (std::vector<std::string>{"fusion = aggressive train.fusion=aggressive"}));
  EXPECT_TRUE(fusionChanges({}).empty()) << "the default fuses everything";
}

/// planc check's first fix that fits is planc auto's best plan: the same
/// peak, step and settings, whether the plan is over budget by its ZeRO
/// stage and micro-batch (kPlan under 60% of its peak) or by turning
/// fusion off.
TEST_F(MemoryCheckPlan, TheFirstFixThatFitsIsTheSearchsBest) {
  for (const std::vector<std::string> &sets :
       {std::vector<std::string>{}, std::vector<std::string>{"train.fusion=none"}}) {
    SCOPED_TRACE(sets.empty() ? "as written" : sets.front());
    auto c = compile(sets);
    // The fixes and the search are the subject: each plan's IR is verified
    // after its passes, not after each (as planc auto's search does).
    auto plain = analyzePlan(*c, /*verifyEach=*/false);
    ASSERT_TRUE(bool(plain)) << llvm::toString(plain.takeError());
    MemoryCheckOptions mo;
    mo.verifyEach = false;
    mo.budgetBytes = uint64_t(0.6 * double(plain->peakArena()));
    auto checked = checkMemory(*c, mo);
    ASSERT_TRUE(bool(checked)) << llvm::toString(checked.takeError());
    ASSERT_EQ(checked->verdict, MemoryVerdict::OverBudget);
    auto fit = std::find_if(checked->fixes.begin(), checked->fixes.end(), [](const MemoryFix &f) { return f.fits; });
    ASSERT_NE(fit, checked->fixes.end());
    AutoOptions ao;
    ao.budgetBytes = mo.budgetBytes;
    auto searched = searchPlans(*c, ao);
    ASSERT_TRUE(bool(searched)) << llvm::toString(searched.takeError());
    const AutoCandidate *best = searched->best();
    ASSERT_NE(best, nullptr);
    EXPECT_EQ(fit->peakArena, best->peakArena) << fit->change << " vs " << best->plan.describe();
    EXPECT_DOUBLE_EQ(fit->stepSeconds, best->stepSeconds) << fit->change << " vs " << best->plan.describe();
    // Its overrides make the best plan from the plan as written.
    auto fixed = compile([&] {
      std::vector<std::string> all = sets;
      all.insert(all.end(), fit->sets.begin(), fit->sets.end());
      return all;
    }());
    EXPECT_EQ(currentPlanChoice(*fixed).describe(), best->plan.describe());
  }
}

TEST_F(MemoryCheckPlan, EditsOnlySettingsTheFileWrites) {
  auto c = compile({"parallel.zero=1"});
  for (const MemoryFix &f : proposeMemoryFixes(*c)) {
    if (f.change == "zero = 2") EXPECT_TRUE(f.edits.empty()) << "zero comes from --set";
    if (f.change == "micro_batch = 2") {
      ASSERT_EQ(f.edits.size(), 1u);
      EXPECT_EQ(f.edits[0].replacement, "micro_batch = 2");
    }
    if (f.change == "recompute full") {
      EXPECT_TRUE(f.edits.empty()) << "the plan does not write recompute";
      EXPECT_TRUE(f.decides.isValid()) << "at the parallel block's header";
    }
  }
}

TEST_F(MemoryCheckPlan, SequenceParallelOnlyWithTensorParallelism) {
  auto c = compile({"parallel.mesh=mesh(dp = 2, tp = 2)"});
  auto fixes = proposeMemoryFixes(*c);
  EXPECT_TRUE(std::any_of(fixes.begin(), fixes.end(), [](const MemoryFix &f) {
    return f.change == "sequence_parallel = true" && f.sets == std::vector<std::string>{"parallel.sequence_parallel=true"};
  }));
}

TEST_F(MemoryCheckPlan, CommunicationPerStepMatchesTheUnrolledStep) {
  // Several micro-batches per step: tensor-parallel collectives and pipeline
  // messages run per micro-batch, the bucketed gradient sync and the
  // optimizer's collectives once.
  const std::vector<std::vector<std::string>> plans = {
      {"parallel.mesh=mesh(dp = 2, tp = 2)", "train.global_batch=16"},
      {"parallel.mesh=mesh(dp = 2, pp = 2)", "train.global_batch=16", "parallel.zero=3"},
      {"parallel.mesh=mesh(dp = 1, pp = 2, tp = 2)", "train.global_batch=16"}};
  for (const auto &sets : plans) {
    auto c = compile(sets);
    auto analysis = analyzePlan(*c);
    ASSERT_TRUE(bool(analysis)) << llvm::toString(analysis.takeError());
    CompileOptions scheduled;
    scheduled.stopAfter = CompileStage::Scheduled;
    auto placed = planc::compile(*c, scheduled);
    ASSERT_TRUE(bool(placed)) << llvm::toString(placed.takeError());
    const ir::Module &m = *placed->module;
    sequence::StageSequencer sequencer(m, *placed->schedule);
    double most = 0;
    for (const RankCommList &list : summarizeStepComm(m, MeshLayout(m.mesh), sequencer).lists) {
      double sent = 0;
      for (const CommOp &op : list.ops) sent += op.sentBytes;
      most = std::max(most, sent);
    }
    EXPECT_GT(most, 0) << sets[0];
    EXPECT_NEAR(analysis->cost.commBytes, most, 1e-6 * most) << sets[0];
  }
}

TEST_F(MemoryCheckPlan, RecomputeCostsFlopsAndPipelinesCostBubble) {
  auto plain = analyzePlan(*compile());
  auto full = analyzePlan(*compile({"parallel.recompute=full"}));
  auto piped = analyzePlan(*compile({"parallel.mesh=mesh(dp = 2, pp = 2)"}));
  ASSERT_TRUE(plain && full && piped);
  EXPECT_EQ(plain->cost.recomputeFlops, 0);
  EXPECT_GT(full->cost.recomputeFlops, 0);
  EXPECT_EQ(plain->cost.bubble, 0);
  EXPECT_GT(piped->cost.bubble, 0);
}

} // namespace
