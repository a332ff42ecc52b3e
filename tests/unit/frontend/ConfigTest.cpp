//===- tests/unit/frontend/ConfigTest.cpp - the train settings -------------===//
//
// Plans are parsed from text, so the tests read like the language; each test
// checks the interpreted values or the exact diagnostics, rendered one a line
// as `line:col: severity: message` (the buffer name is printed for --set
// options, whose positions are in their own buffers).
//
//===----------------------------------------------------------------------===//

#include "ConfigTestFixture.h"

using namespace planc;

namespace {

//===----------------------------------------------------------------------===//
// Defaults and the example plan
//===----------------------------------------------------------------------===//

TEST_F(ConfigTest, DefaultsWithoutBlocks) {
  PlanConfig c = interpret("model m { }\n");
  EXPECT_EQ(messages(), "");
  EXPECT_FALSE(c.hasTrain || c.hasCluster || c.hasParallel);
  EXPECT_EQ(c.train.globalBatch, 1);
  EXPECT_EQ(c.train.microBatch, 1);
  EXPECT_EQ(c.cluster.device.name, "cpu");
  EXPECT_TRUE(c.cluster.device.isPreset);
  EXPECT_EQ(c.cluster.worldSize(), 1);
  EXPECT_EQ(c.parallel.size(MeshAxis::DP), 1);
  EXPECT_EQ(c.parallel.meshSize(), 1);
  EXPECT_EQ(c.parallel.schedule, std::nullopt);
  EXPECT_EQ(c.parallel.microBatches, 1);
  EXPECT_TRUE(c.train.globalBatchSource.isDefault());
  EXPECT_EQ(c.cluster.intraNode.kind, "shm");
}

TEST_F(ConfigTest, TheSpecExampleReadsWithoutDiagnostics) {
  PlanConfig c = interpret(R"(
train {
  global_batch = 512, micro_batch = 8, steps = 5000, seed = 1234
  optimizer adamw(lr = 6e-4, betas = (0.9, 0.95), eps = 1e-8, weight_decay = 0.1,
                  warmup = 700, decay = cosine, min_lr = 6e-5)
  clip_grad_norm = 1.0
  precision bf16(master = f32)
  data tokens("data/train.bin", u16)
  checkpoint(every = 0, dir = "ckpt/", keep = 3)
}
cluster {
  nodes = 2, gpus_per_node = 8
  device a100_80gb
  intra_node = nvlink(300 GB/s, latency = 2 us)
  inter_node = infiniband(8 * 200 Gb/s, latency = 5 us)
}
parallel {
  mesh(dp = 2, pp = 2, tp = 4)
  zero = 1
  sequence_parallel = true
  pipeline 1f1b(micro_batches = 32)
  recompute selective
  bucket = 25 MiB
  overlap(grad_reduce = true, param_gather = false)
}
)");
  EXPECT_EQ(messages(), "");
  EXPECT_TRUE(c.hasTrain && c.hasCluster && c.hasParallel);
  const TrainConfig &t = c.train;
  EXPECT_EQ(t.globalBatch, 512);
  EXPECT_EQ(t.microBatch, 8);
  EXPECT_EQ(t.steps, 5000);
  EXPECT_EQ(t.seed, 1234);
  EXPECT_EQ(text(t.globalBatchSource.range), "global_batch = 512");
  EXPECT_EQ(t.optimizer.kind, OptimizerKind::AdamW);
  EXPECT_DOUBLE_EQ(t.optimizer.lr, 6e-4);
  EXPECT_DOUBLE_EQ(t.optimizer.beta1, 0.9);
  EXPECT_DOUBLE_EQ(t.optimizer.beta2, 0.95);
  EXPECT_DOUBLE_EQ(t.optimizer.weightDecay, 0.1);
  EXPECT_EQ(t.optimizer.warmup, 700);
  EXPECT_EQ(t.optimizer.decay, DecayKind::Cosine);
  EXPECT_DOUBLE_EQ(t.optimizer.minLr, 6e-5);
  EXPECT_DOUBLE_EQ(t.clipGradNorm, 1.0);
  EXPECT_EQ(t.precision.compute, "bf16");
  EXPECT_EQ(t.precision.master, "f32");
  EXPECT_EQ(t.precision.lossScaling, LossScaling::None);
  EXPECT_EQ(t.data.kind, DataKind::Tokens);
  EXPECT_EQ(t.data.path, "data/train.bin");
  EXPECT_EQ(t.data.tokenDtype, "u16");
  EXPECT_EQ(t.checkpoint.every, 0);
  EXPECT_EQ(t.checkpoint.dir, "ckpt/");
  EXPECT_EQ(t.checkpoint.keep, 3);

  const ClusterConfig &k = c.cluster;
  EXPECT_EQ(k.worldSize(), 16);
  EXPECT_EQ(k.device.name, "a100_80gb");
  EXPECT_EQ(k.device.memoryBytes, uint64_t(80 * kGiB));
  EXPECT_EQ(k.intraNode.kind, "nvlink");
  EXPECT_DOUBLE_EQ(k.intraNode.bandwidth, 300e9);
  EXPECT_DOUBLE_EQ(k.intraNode.latency, 2e-6);
  // Written as the node's total of eight 200 Gb/s NICs; kept per GPU.
  EXPECT_EQ(k.interNode.kind, "infiniband");
  EXPECT_DOUBLE_EQ(k.interNode.bandwidth, 25e9);
  EXPECT_DOUBLE_EQ(k.interNode.latency, 5e-6);

  const ParallelConfig &p = c.parallel;
  EXPECT_EQ(p.size(MeshAxis::DP), 2);
  EXPECT_EQ(p.size(MeshAxis::PP), 2);
  EXPECT_EQ(p.size(MeshAxis::TP), 4);
  EXPECT_EQ(p.size(MeshAxis::CP), 1);
  EXPECT_EQ(p.axisOrder, (std::vector<MeshAxis>{MeshAxis::DP, MeshAxis::PP, MeshAxis::TP}));
  EXPECT_EQ(text(p.axisSource[unsigned(MeshAxis::TP)].range), "tp = 4");
  EXPECT_EQ(p.zeroStage, 1);
  EXPECT_TRUE(p.sequenceParallel);
  EXPECT_EQ(p.schedule, ScheduleStyle::OneFOneB);
  EXPECT_EQ(p.microBatches, 32);
  EXPECT_EQ(p.recompute, RecomputePolicy::Selective);
  EXPECT_EQ(p.bucketBytes, 25ull << 20);
  EXPECT_TRUE(p.overlapGradReduce);
  EXPECT_FALSE(p.overlapParamGather);
}

TEST_F(ConfigTest, AssignAndWordFormsMeanTheSame) {
  PlanConfig a = interpret("train { optimizer = sgd(lr = 0.1, momentum = 0.9)\n steps 10 }\n"
                           "cluster { gpus_per_node = 2 }\nparallel { zero 2\n recompute = full }\n");
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(a.train.optimizer.kind, OptimizerKind::SGD);
  EXPECT_DOUBLE_EQ(a.train.optimizer.momentum, 0.9);
  EXPECT_EQ(a.train.steps, 10);
  EXPECT_EQ(a.parallel.zeroStage, 2);
  EXPECT_EQ(a.parallel.recompute, RecomputePolicy::Full);
}

TEST_F(ConfigTest, ConstantArithmeticInValues) {
  PlanConfig c = interpret("train { global_batch = 64 * 8, micro_batch = 16 / 2, steps = 1e4 }\n");
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.train.globalBatch, 512);
  EXPECT_EQ(c.train.microBatch, 8);
  EXPECT_EQ(c.train.steps, 10000);
}

//===----------------------------------------------------------------------===//
// Keys
//===----------------------------------------------------------------------===//

TEST_F(ConfigTest, UnknownSettingSuggestsTheClosestKey) {
  PlanConfig c = interpret("train {\n  global_bach = 8\n}\n");
  EXPECT_EQ(messages(),
            "2:3: error: unknown setting 'global_bach' in the 'train' block\n"
            "2:3: note: did you mean 'global_batch'? [fix-it: 'global_batch']\n");
  EXPECT_EQ(c.train.globalBatch, 1);
}

TEST_F(ConfigTest, UnknownSettingWithoutCloseKey) {
  interpret("cluster { frobnicate = 1 }\n");
  EXPECT_EQ(messages(), "1:11: error: unknown setting 'frobnicate' in the 'cluster' block\n");
}

TEST_F(ConfigTest, DuplicateSettingPointsAtThePreviousOne) {
  PlanConfig c = interpret("train {\n  steps = 10\n  steps 20\n}\n");
  EXPECT_EQ(messages(), "3:3: error: 'steps' is set twice\n"
                        "2:3: note: previous definition is here\n");
  EXPECT_EQ(c.train.steps, 10);
}

TEST_F(ConfigTest, WrongFormIsReported) {
  interpret("train { steps(10) }\nparallel { mesh = 4 }\n");
  EXPECT_EQ(messages(), "1:9: error: 'steps' is written 'steps = 5000'\n"
                        "2:12: error: 'mesh' is written 'mesh(dp = 2, pp = 2, tp = 4)'\n");
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

TEST_F(ConfigTest, WrongValueKindsAndRanges) {
  PlanConfig c = interpret("train {\n"
                           "  steps = \"many\"\n"
                           "  micro_batch = 0\n"
                           "  clip_grad_norm = -1\n"
                           "}\n"
                           "cluster { nodes = -2 }\n"
                           "parallel { sequence_parallel = 1 }\n");
  EXPECT_EQ(messages(),
            "3:17: error: 'micro_batch' must be a positive integer, got 0\n"
            "2:11: error: 'steps' must be a positive integer, got '\"many\"'\n"
            "4:20: error: 'clip_grad_norm' must be a non-negative number, got -1\n"
            "6:19: error: 'nodes' must be a positive integer, got -2\n"
            "7:32: error: 'sequence_parallel' must be true or false, got 1\n");
  EXPECT_EQ(c.train.microBatch, 1);
  EXPECT_EQ(c.cluster.nodes, 1);
}

TEST_F(ConfigTest, IntegerOverflowIsReported) {
  interpret("train { global_batch = 9223372036854775807 * 2 }\n");
  EXPECT_EQ(messages(), "1:24: error: integer overflow in 'global_batch'\n");
}

TEST_F(ConfigTest, NegativeLearningRate) {
  PlanConfig c = interpret("train { optimizer adamw(lr = -1e-3) }\n");
  EXPECT_EQ(messages(), "1:30: error: 'lr' must be a non-negative number, got -1e-3\n");
  EXPECT_DOUBLE_EQ(c.train.optimizer.lr, 3e-4);
}

TEST_F(ConfigTest, UnknownChoicesListTheValidOnes) {
  interpret("train {\n"
            "  optimizer adamww(lr = 1e-3)\n"
            "  precision fp16\n"
            "  data token(\"a.bin\")\n"
            "}\n"
            "parallel {\n"
            "  pipeline gpipee\n"
            "  recompute ful\n"
            "}\n");
  EXPECT_EQ(messages(),
            "2:13: error: unknown optimizer 'adamww'\n"
            "2:13: note: did you mean 'adamw'? [fix-it: 'adamw']\n"
            "note: valid choices: sgd, adam, adamw, adam8bit\n"
            "3:13: error: unknown compute dtype 'fp16'\n"
            "3:13: note: did you mean 'f16'? [fix-it: 'f16']\n"
            "note: valid choices: f32, bf16, f16, fp8_e4m3\n"
            "4:8: error: unknown data kind 'token'\n"
            "4:8: note: did you mean 'tokens'? [fix-it: 'tokens']\n"
            "note: valid choices: synthetic, text, tokens\n"
            "7:12: error: unknown pipeline schedule 'gpipee'\n"
            "7:12: note: did you mean 'gpipe'? [fix-it: 'gpipe']\n"
            "note: valid choices: gpipe, 1f1b, interleaved, zero_bubble\n"
            "8:13: error: unknown recompute policy 'ful'\n"
            "8:13: note: did you mean 'full'? [fix-it: 'full']\n"
            "note: valid choices: none, selective, full\n");
}

TEST_F(ConfigTest, OptimizerArguments) {
  interpret("train {\n"
            "  optimizer adamw(lr = 1e-3, lr = 2e-3, weight_decy = 0.1, betas = 0.9)\n"
            "}\n");
  EXPECT_EQ(messages(),
            "2:30: error: argument 'lr' given twice\n"
            "2:19: note: previous definition is here\n"
            "2:41: error: 'adamw' has no parameter named 'weight_decy'\n"
            "2:41: note: did you mean 'weight_decay'? [fix-it: 'weight_decay']\n"
            "note: valid choices: lr, betas, eps, weight_decay, weight_decay_params, warmup, decay, min_lr\n"
            "2:68: error: 'betas' must be a pair such as (0.9, 0.95), got 0.9\n");
}

TEST_F(ConfigTest, OptimizerPositionalArgumentsAndWarnings) {
  PlanConfig c = interpret("train { optimizer sgd(0.1, 0.9, true, min_lr = 0.01) }\n");
  EXPECT_EQ(messages(), "1:39: warning: 'min_lr' has no effect with decay = constant\n");
  EXPECT_EQ(c.train.optimizer.kind, OptimizerKind::SGD);
  EXPECT_DOUBLE_EQ(c.train.optimizer.lr, 0.1);
  EXPECT_DOUBLE_EQ(c.train.optimizer.momentum, 0.9);
  EXPECT_TRUE(c.train.optimizer.nesterov);
}

TEST_F(ConfigTest, WeightDecayParams) {
  // The default decays the parameters of 2+ dims; `all` every one, for every optimizer.
  EXPECT_EQ(interpret("train { optimizer adamw(weight_decay = 0.1) }\n").train.optimizer.weightDecayParams,
            WeightDecayParams::Matrices);
  for (const char *kind : {"sgd", "adam", "adamw", "adam8bit"}) {
    PlanConfig c = interpret(std::string("train { optimizer ") + kind + "(weight_decay = 0.1, weight_decay_params = all) }\n");
    EXPECT_EQ(messages(), "") << kind;
    EXPECT_EQ(c.train.optimizer.weightDecayParams, WeightDecayParams::All) << kind;
  }
  // --set adjusts it alone, keeping the file's other arguments.
  PlanConfig c = interpret("train { optimizer adamw(weight_decay = 0.1) }\n", {"train.optimizer.weight_decay_params=all"});
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.train.optimizer.weightDecayParams, WeightDecayParams::All);
  EXPECT_DOUBLE_EQ(c.train.optimizer.weightDecay, 0.1);
  // Without a weight decay it does nothing: a warning.
  c = interpret("train { optimizer adamw(weight_decay_params = matrices) }\n");
  EXPECT_EQ(messages(), "1:25: warning: 'weight_decay_params' has no effect with weight_decay = 0\n");
}

TEST_F(ConfigTest, Adam8bitBlockSizeAndMinLrAboveLr) {
  PlanConfig c = interpret("train { optimizer adam8bit(lr = 1e-4, block_size = 256, decay = linear, min_lr = 1e-3) }\n");
  EXPECT_EQ(messages(), "1:82: error: 'min_lr' must be at most lr = 0.0001, got 1e-3\n");
  EXPECT_EQ(c.train.optimizer.kind, OptimizerKind::Adam8bit);
  EXPECT_EQ(c.train.optimizer.blockSize, 256);
  EXPECT_EQ(c.train.optimizer.decay, DecayKind::Linear);
}

TEST_F(ConfigTest, PrecisionAndLossScaling) {
  PlanConfig c = interpret("train { precision f16 }\n");
  EXPECT_EQ(c.train.precision.compute, "f16");
  EXPECT_EQ(c.train.precision.lossScaling, LossScaling::Dynamic); // fp16 needs one
  c = interpret("train { precision f16(master = f32, loss_scale = static(1024)) }\n");
  EXPECT_EQ(c.train.precision.lossScaling, LossScaling::Static);
  EXPECT_DOUBLE_EQ(c.train.precision.initialScale, 1024);
  c = interpret("train { precision f16(loss_scale = dynamic(scale = 256, growth_interval = 100)) }\n");
  EXPECT_EQ(c.train.precision.lossScaling, LossScaling::Dynamic);
  EXPECT_DOUBLE_EQ(c.train.precision.initialScale, 256);
  EXPECT_EQ(c.train.precision.growthInterval, 100);
  EXPECT_EQ(messages(), "");
}

TEST_F(ConfigTest, MasterNarrowerThanComputeIsAnError) {
  PlanConfig c = interpret("train { precision f32(master = bf16) }\n");
  EXPECT_EQ(messages(),
            "1:32: error: 'master' must be a dtype at least as wide as the compute dtype f32, got 'bf16'\n");
  EXPECT_EQ(c.train.precision.master, "f32");
}

TEST_F(ConfigTest, DataKinds) {
  PlanConfig c = interpret("train { data tokens(\"x.bin\") }\n");
  EXPECT_EQ(c.train.data.tokenDtype, "u16");
  c = interpret("train { data text(path = \"corpus.txt\") }\n");
  EXPECT_EQ(c.train.data.kind, DataKind::Text);
  EXPECT_EQ(c.train.data.path, "corpus.txt");
  EXPECT_EQ(messages(), "");
  interpret("train { data text }\n");
  interpret("train { data tokens(\"x.bin\", u8, 3) }\n");
  EXPECT_EQ(messages(), "1:14: error: missing argument 'path' in call to 'text'\n"
                        "1:34: error: 'tokens' takes at most 2 arguments, 3 given\n"
                        "1:30: error: unknown token dtype 'u8'\n"
                        "note: valid choices: u16, u32\n");
}

TEST_F(ConfigTest, CheckpointNestedForm) {
  PlanConfig c = interpret("train { checkpoint { every = 0, dir = \"out\" } }\n");
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.train.checkpoint.every, 0);
  EXPECT_EQ(c.train.checkpoint.dir, "out");
  interpret("train { checkpoint(dir = \"out\") }\n");
  EXPECT_EQ(messages(), "1:9: warning: 'checkpoint' has no effect without 'every'\n");
}

} // namespace
