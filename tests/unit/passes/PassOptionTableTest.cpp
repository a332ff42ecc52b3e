//===- tests/unit/passes/PassOptionTableTest.cpp - pass options from text --------===//
//
// The --pass-option tables: every key reads back what it shows, unknown keys
// and bad values are errors that say why, the frontend's defaults equal the
// passes', and the pipeline settings name one schedule.
//
//===----------------------------------------------------------------------===//

#include "compiler/TrainOptions.h"
#include "passes/PassOptionTable.h"

#include <gtest/gtest.h>

#include <set>

using namespace planc;

namespace {

std::vector<std::string> allKeys() {
  std::vector<std::string> keys;
  for (const auto &row : trainingOptionTable()) keys.push_back(row.key);
  for (const auto &row : partitionOptionTable()) keys.push_back(row.key);
  return keys;
}

std::string errorOf(llvm::Error e) { return e ? llvm::toString(std::move(e)) : ""; }

TEST(PassOptionTableTest, KeysAreUniqueAndHaveHelp) {
  std::set<std::string> seen;
  for (const std::string &k : allKeys()) EXPECT_TRUE(seen.insert(k).second) << k;
  for (const auto &row : trainingOptionTable()) EXPECT_FALSE(row.help.empty()) << row.key;
  for (const auto &row : partitionOptionTable()) EXPECT_FALSE(row.help.empty()) << row.key;
}

TEST(PassOptionTableTest, EveryKeyReadsBackWhatItShows) {
  PassPipelineOptions o;
  for (const std::string &k : allKeys()) {
    std::string shown = passOptionValue(o, k);
    EXPECT_EQ(errorOf(setPassOption(o, k, shown)), "") << k;
    EXPECT_EQ(passOptionValue(o, k), shown) << k;
  }
}

TEST(PassOptionTableTest, ValuesAreTyped) {
  PassPipelineOptions o;
  for (auto [key, value] : std::vector<std::pair<const char *, const char *>>{
           {"optimizer", "sgd"}, {"lr", "0.5"}, {"nesterov", "true"}, {"decay", "cosine"}, {"total_steps", "7"},
           {"weight_decay_params", "all"},
           {"compute_dtype", "bf16"}, {"grad_dtype", "f32"}, {"loss_scaling", "dynamic"}, {"lora_rank", "4"},
           {"lora_alpha", "8"}, {"zero_stage", "2"}, {"sequence_parallel", "1"}, {"recompute", "full"},
           {"bucket_bytes", "1024"}, {"overlap_grad_reduce", "false"}, {"pipeline_schedule", "interleaved"},
           {"micro_batches", "8"}, {"virtual_stages", "2"}, {"stage_balance", "flops"}})
    ASSERT_EQ(errorOf(setPassOption(o, key, value)), "") << key;
  EXPECT_EQ(o.training.optimizer.kind, OptimizerKind::SGD);
  EXPECT_EQ(o.training.optimizer.lr, 0.5);
  EXPECT_TRUE(o.training.optimizer.nesterov);
  EXPECT_EQ(o.training.optimizer.decay, DecayKind::Cosine);
  EXPECT_EQ(o.training.optimizer.totalSteps, 7);
  EXPECT_EQ(o.training.optimizer.weightDecayParams, WeightDecayParams::All);
  EXPECT_EQ(o.training.precision.compute, ir::DType::BF16);
  EXPECT_EQ(o.training.precision.grads, ir::DType::F32);
  EXPECT_EQ(o.training.precision.lossScaling, LossScaling::Dynamic);
  EXPECT_EQ(o.training.lora.rank, 4);
  EXPECT_EQ(o.training.lora.alpha, 8.0);
  EXPECT_EQ(o.partition.zeroStage, 2);
  EXPECT_TRUE(o.partition.sequenceParallel);
  EXPECT_EQ(o.partition.recompute, RecomputePolicy::Full);
  EXPECT_EQ(o.partition.bucketBytes, 1024u);
  EXPECT_FALSE(o.partition.overlapGradReduce);
  EXPECT_EQ(o.partition.pipeline.style, ScheduleStyle::Interleaved);
  EXPECT_EQ(o.partition.pipeline.microBatches, 8);
  EXPECT_EQ(o.partition.pipeline.virtualStages, 2);
  EXPECT_EQ(o.partition.pipeline.balance, StageBalance::Flops);
}

TEST(PassOptionTableTest, AnUnknownKeyListsTheKeys) {
  PassPipelineOptions o;
  std::string e = errorOf(setPassOption(o, "zero", "1"));
  EXPECT_NE(e.find("unknown pass option 'zero'"), std::string::npos) << e;
  for (const std::string &k : allKeys()) EXPECT_NE(e.find(k), std::string::npos) << k;
  EXPECT_EQ(errorOf(checkPassOptionKey("zero")), e);
  EXPECT_EQ(errorOf(checkPassOptionKey("zero_stage")), "");
}

TEST(PassOptionTableTest, ABadValueSaysWhatItMustBe) {
  PassPipelineOptions o;
  auto bad = [&](const char *key, const char *value) { return errorOf(setPassOption(o, key, value)); };
  EXPECT_NE(bad("pipeline_schedule", "chimera").find("'pipeline_schedule' must be one of gpipe, 1f1b, interleaved, "
                                                     "zero_bubble, got 'chimera'"),
            std::string::npos);
  EXPECT_NE(bad("micro_batches", "0").find("'micro_batches' must be an integer >= 1"), std::string::npos);
  EXPECT_NE(bad("overlap_param_gather", "yes").find("must be true or false"), std::string::npos);
  EXPECT_NE(bad("loss_scaling", "x").find("must be none, static or dynamic"), std::string::npos);
  EXPECT_NE(bad("grad_dtype", "i32").find("'grad_dtype'"), std::string::npos);
  EXPECT_NE(bad("compute_dtype", "fp8_e4m3").find("must be f64, f32, bf16 or f16"), std::string::npos);
  // A bad value changes nothing.
  EXPECT_EQ(o.partition.pipeline.microBatches, 1);
}

TEST(PassOptionTableTest, TheHelpListsEveryKeyWithItsDefault) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printPassOptionHelp(os);
  os.flush();
  for (const std::string &k : allKeys()) EXPECT_NE(text.find("  " + k + " "), std::string::npos) << k;
  EXPECT_NE(text.find("(default adamw)"), std::string::npos);
  EXPECT_NE(text.find("(default 26214400)"), std::string::npos);
}

// The frontend writes the passes' defaults again for a plan that sets
// nothing; they must agree, except where a plan's setting means more than
// the pass's (steps, the LoRA alpha that is 2 x rank, the gradient dtype
// that follows the compute dtype).
TEST(PassOptionTableTest, APlanThatSetsNothingHasThePassDefaults) {
  PassPipelineOptions fromPlan = passOptionsFromConfig(PlanConfig{}), defaults;
  const std::set<std::string> differ = {"total_steps", "lora_alpha", "grad_dtype"};
  for (const std::string &k : allKeys())
    if (!differ.count(k)) EXPECT_EQ(passOptionValue(fromPlan, k), passOptionValue(defaults, k)) << k;
}

TEST(PassOptionTableTest, TheSpecNamesOneSchedule) {
  PipelineScheduleSpec spec;
  spec.style = ScheduleStyle::Interleaved;
  spec.microBatches = 0;
  spec.virtualStages = 2;
  pipeline::ScheduleOptions so = scheduleOptionsOf(spec, 4);
  EXPECT_EQ(so.style, ScheduleStyle::Interleaved);
  EXPECT_EQ(so.stages, 4);
  EXPECT_EQ(so.microBatches, 1);
  EXPECT_EQ(so.virtualStages, 2);
  // One stage cannot interleave.
  EXPECT_EQ(scheduleOptionsOf(spec, 1).style, ScheduleStyle::OneFOneB);
  spec.style = ScheduleStyle::GPipe;
  EXPECT_EQ(scheduleOptionsOf(spec, 4).virtualStages, 1);
}

} // namespace
