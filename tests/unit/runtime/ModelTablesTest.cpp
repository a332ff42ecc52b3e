//===- tests/unit/runtime/ModelTablesTest.cpp - a rank class from its tables -===//
//
// The generated program's constant tables (runtime/ModelTables.h) read
// into the ExecProgram the executable runs: each Param's shape, global
// shape and every rank's block offset from the integers its row indexes, a
// scalar, inputs and outputs, an empty table, and a row past the integers
// (a generator fault) stopping the program with a message.
//
//===----------------------------------------------------------------------===//

#include "runtime/ModelTables.h"

#include <gtest/gtest.h>

using namespace planc::runtime;

namespace {

void noStep(uint8_t *, uint64_t, StepProfile *) {}

// Two ranks; a [4, 6] parameter split on dim 1 ([4, 3] blocks at column 0
// and 3), its Adam state, a scalar, then the tokens' [2, 8].
const int64_t kInts[] = {
    4, 3, 4, 6, 0, 0, 0, 3, // w
    4, 3, 4, 6, 0, 0, 0, 3, // w.adam_m
    2, 8,                   // tokens 0
};
const int64_t kRanks[] = {0, 1};
const ParamRow kParams[] = {
    {"w", 0, ElementType::F32, 2, 0, "{shard(1, tp)}", ParamInit::Normal, 0.02, true},
    {"w.adam_m", 48, ElementType::F32, 2, 8, "{shard(1, tp)}", ParamInit::Zeros, 0.02, false},
    {"scale", 96, ElementType::BF16, 0, 16, "", ParamInit::Ones, 0.02, true},
};
const InputRow kInputs[] = {
    {ExecInput::Kind::Tokens, 0, 128, ElementType::I32, 2, 16},
    {ExecInput::Kind::Step, 0, 192, ElementType::I64, 0, 18},
};
const OutputRow kOutputs[] = {
    {"loss", 200, ElementType::F32, 4, -1},
    {"new.w", 256, ElementType::F32, 48, 0},
};
const ProgramTables kTables = {1,          "pipeline stage 1 (ranks 0, 1)",
                               kRanks,     2,
                               512,        520,
                               kParams,    3,
                               kInputs,    2,
                               kOutputs,   2,
                               kInts,      sizeof kInts / sizeof kInts[0],
                               noStep};

TEST(ModelTablesTest, EveryParamHasItsShapesAndEachRanksBlockOffset) {
  ExecProgram p = readProgramTables(kTables);
  EXPECT_EQ(p.stage, 1);
  EXPECT_EQ(p.rankClass, "pipeline stage 1 (ranks 0, 1)");
  EXPECT_EQ(p.ranks, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(p.arenaBytes, 512u);
  EXPECT_EQ(p.ledgerBytes, 520u);
  EXPECT_EQ(p.step, &noStep);
  ASSERT_EQ(p.params.size(), 3u);
  const ExecParam &w = p.params[0];
  EXPECT_EQ(w.name, "w");
  EXPECT_EQ(w.initKey, "w"); // the checkpoint name keys the initial values
  EXPECT_EQ(w.shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(w.globalShape, (std::vector<int64_t>{4, 6}));
  ASSERT_EQ(w.blockOffsets.size(), 2u);
  EXPECT_EQ(w.blockOffsets[0], (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(w.blockOffsets[1], (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(w.sharding, "{shard(1, tp)}");
  EXPECT_EQ(w.init, ParamInit::Normal);
  EXPECT_DOUBLE_EQ(w.stddev, 0.02);
  EXPECT_TRUE(w.modelParam);
  EXPECT_EQ(p.params[1].offset, 48u);
  EXPECT_FALSE(p.params[1].modelParam);
  EXPECT_EQ(p.params[1].blockOffsets[1], (std::vector<int64_t>{0, 3}));
  // A scalar: no dims, an empty offset per rank.
  const ExecParam &scale = p.params[2];
  EXPECT_EQ(scale.type, ElementType::BF16);
  EXPECT_TRUE(scale.shape.empty());
  EXPECT_TRUE(scale.globalShape.empty());
  ASSERT_EQ(scale.blockOffsets.size(), 2u);
  EXPECT_TRUE(scale.blockOffsets[1].empty());
}

TEST(ModelTablesTest, InputsAndOutputsAreTheirRows) {
  ExecProgram p = readProgramTables(kTables);
  ASSERT_EQ(p.inputs.size(), 2u);
  EXPECT_EQ(p.inputs[0].kind, ExecInput::Kind::Tokens);
  EXPECT_EQ(p.inputs[0].offset, 128u);
  EXPECT_EQ(p.inputs[0].shape, (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(p.inputs[1].kind, ExecInput::Kind::Step);
  EXPECT_TRUE(p.inputs[1].shape.empty());
  ASSERT_EQ(p.outputs.size(), 2u);
  EXPECT_EQ(p.outputs[0].name, "loss");
  EXPECT_EQ(p.outputs[0].copyToParam, -1);
  EXPECT_EQ(p.outputs[1].name, "new.w");
  EXPECT_EQ(p.outputs[1].bytes, 48u);
  EXPECT_EQ(p.outputs[1].copyToParam, 0);
}

TEST(ModelTablesTest, AnEmptyTableIsANullPointerAndNoRows) {
  const ProgramTables empty = {0, "pipeline stage 0 (rank 0)", kRanks, 1, 64, 64, nullptr, 0, nullptr, 0,
                               nullptr, 0, nullptr, 0, noStep};
  ExecProgram p = readProgramTables(empty);
  EXPECT_TRUE(p.params.empty());
  EXPECT_TRUE(p.inputs.empty());
  EXPECT_TRUE(p.outputs.empty());
  EXPECT_EQ(p.ranks, (std::vector<int64_t>{0}));
}

TEST(ModelTablesTest, ARowPastTheIntegersStopsTheProgramNamingIt) {
  const ParamRow bad[] = {{"w", 0, ElementType::F32, 2, 17, "", ParamInit::Zeros, 0, true}};
  ProgramTables t = kTables;
  t.params = bad;
  t.numParams = 1;
  EXPECT_EXIT(readProgramTables(t), testing::ExitedWithCode(70),
              "internal error: the tables of pipeline stage 1 \\(ranks 0, 1\\) give w 2 integers from index 17 of 18");
}

TEST(ModelTablesTest, InferenceParamsAreTheirRows) {
  const InferenceParamRow rows[] = {{"w", 0, ElementType::F32, 24}, {"b", 96, ElementType::BF16, 6}};
  std::vector<ExecInference::Param> params = readInferenceParams(rows, 2);
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[1].name, "b");
  EXPECT_EQ(params[1].offset, 96u);
  EXPECT_EQ(params[1].type, ElementType::BF16);
  EXPECT_EQ(params[1].elements, 6);
  EXPECT_TRUE(readInferenceParams(nullptr, 0).empty());
}

} // namespace
