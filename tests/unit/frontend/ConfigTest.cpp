//===- tests/unit/frontend/ConfigTest.cpp - train, cluster and parallel settings ---===//
//
// Plans are parsed from text, so the tests read like the language; each test
// checks the interpreted values or the exact diagnostics, rendered one a line
// as `line:col: severity: message` (the buffer name is printed for --set
// options, whose positions are in their own buffers).
//
//===----------------------------------------------------------------------===//

#include "frontend/Config.h"
#include "frontend/Parser.h"
#include "support/Units.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

using namespace planc;

namespace {

class Collector : public DiagnosticConsumer {
public:
  void handle(const Diagnostic &d) override { diags.push_back(d); }
  std::vector<Diagnostic> diags;
};

class ConfigTest : public ::testing::Test {
protected:
  ConfigTest() : engine(sm) {
    auto c = std::make_unique<Collector>();
    collector = c.get();
    engine.setConsumer(std::move(c));
  }

  /// Parses `text` as test.plan, applies the --set options and interprets.
  PlanConfig interpret(llvm::StringRef text, std::vector<std::string> sets = {}, bool check = true) {
    unsigned id = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "test.plan"), llvm::SMLoc());
    file = parseFile(sm, id, engine);
    if (!file) {
      ADD_FAILURE() << "does not parse:\n" << text.str() << "\n" << messages();
      return PlanConfig();
    }
    const ast::ConfigBlock *blocks[3] = {nullptr, nullptr, nullptr};
    for (const auto &b : file->blocks) blocks[unsigned(b->kind)] = b.get();
    std::vector<SetOverride *> raw;
    for (const std::string &s : sets) {
      auto o = parseSetOverride(s, sm, engine);
      if (!o) {
        ADD_FAILURE() << "bad --set " << s << "\n" << messages();
        continue;
      }
      raw.push_back(o.get());
      overrides.push_back(std::move(o));
    }
    PlanConfig config = interpretConfig(blocks[0], blocks[1], blocks[2], raw, engine);
    if (check) checkConfig(config, engine);
    return config;
  }

  std::string position(llvm::SMLoc loc) {
    if (!loc.isValid()) return "";
    unsigned id = sm.FindBufferContainingLoc(loc);
    if (!id) return "?:";
    auto [line, col] = sm.getLineAndColumn(loc, id);
    llvm::StringRef name = sm.getMemoryBuffer(id)->getBufferIdentifier();
    std::string prefix = name == "test.plan" ? "" : name.str() + ":";
    return prefix + std::to_string(line) + ":" + std::to_string(col) + ": ";
  }

  void render(const Diagnostic &d, std::string &out) {
    out += position(d.loc) + severityName(d.severity) + ": " + d.message;
    for (const FixIt &f : d.fixits) out += " [fix-it: '" + f.replacement + "']";
    out += "\n";
  }

  /// Every diagnostic so far, notes included, one a line.
  std::string messages() {
    std::string out;
    for (const Diagnostic &d : collector->diags) {
      render(d, out);
      for (const Diagnostic &n : d.notes) render(n, out);
    }
    return out;
  }

  /// The source text a range covers.
  static std::string text(llvm::SMRange r) {
    if (!r.isValid()) return "<default>";
    return std::string(r.Start.getPointer(), r.End.getPointer());
  }

  llvm::SourceMgr sm;
  DiagnosticEngine engine;
  Collector *collector = nullptr;
  std::unique_ptr<ast::SourceFile> file;
  std::vector<std::unique_ptr<SetOverride>> overrides;
};

constexpr double kGiB = 1073741824.0;

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

//===----------------------------------------------------------------------===//
// cluster
//===----------------------------------------------------------------------===//

TEST_F(ConfigTest, PresetsHaveTheirDatasheetNumbers) {
  for (const char *name : {"a100_40gb", "a100_80gb", "h100_sxm_80gb", "h200_141gb", "rtx4060ti_16gb",
                           "rtx4090_24gb", "cpu"}) {
    const DeviceSpec *d = findDevicePreset(name);
    ASSERT_NE(d, nullptr) << name;
    EXPECT_TRUE(d->isPreset);
    EXPECT_GT(d->memoryBytes, 0u);
    EXPECT_GT(d->memoryBandwidth, 0);
    EXPECT_GT(d->peakFlops.at("f32"), 0);
    EXPECT_GE(d->peakFlops.at("bf16"), d->peakFlops.at("f32")) << name;
  }
  EXPECT_EQ(devicePresets().size(), 7u);
  EXPECT_EQ(findDevicePreset("tpu_v5"), nullptr);
  const DeviceSpec *h100 = findDevicePreset("h100_sxm_80gb");
  EXPECT_EQ(formatBytes(h100->memoryBytes), "80.0 GiB");
  EXPECT_EQ(formatFlops(h100->peakFlops.at("bf16")), "989.4 TFLOPS");
  EXPECT_EQ(h100->peakFlops.count("fp8_e4m3"), 1u);
  EXPECT_EQ(h100->peakFlops.count("fp8_e5m2"), 1u);
  EXPECT_EQ(findDevicePreset("a100_80gb")->peakFlops.count("fp8_e4m3"), 0u); // no fp8 on Ampere
  EXPECT_EQ(formatBandwidth(findDevicePreset("h200_141gb")->memoryBandwidth), "4.8 TB/s");
}

TEST_F(ConfigTest, UnknownDeviceSuggestsAPreset) {
  interpret("cluster { device a100_80g }\n");
  interpret("cluster { device H100 }\n");
  interpret("cluster { device tpu_v5 }\n");
  const char *presets = "note: valid choices: a100_40gb, a100_80gb, h100_sxm_80gb, h200_141gb, "
                        "rtx4090_24gb, rtx4060ti_16gb, cpu\n";
  EXPECT_EQ(messages(), std::string("1:18: error: unknown device 'a100_80g'\n"
                                    "1:18: note: did you mean 'a100_80gb'? [fix-it: 'a100_80gb']\n") +
                            presets +
                            "1:18: error: unknown device 'H100'\n"
                            "1:18: note: did you mean 'h100_sxm_80gb'? [fix-it: 'h100_sxm_80gb']\n" +
                            presets + "1:18: error: unknown device 'tpu_v5'\n" + presets);
}

TEST_F(ConfigTest, PresetWithOverriddenNumbers) {
  PlanConfig c = interpret("cluster { device a100_80gb { memory = 70 GiB } }\n");
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.cluster.device.name, "a100_80gb");
  EXPECT_FALSE(c.cluster.device.isPreset);
  EXPECT_EQ(c.cluster.device.memoryBytes, uint64_t(70 * kGiB));
  EXPECT_DOUBLE_EQ(c.cluster.device.peakFlops.at("bf16"), 312e12);
  EXPECT_EQ(c.cluster.intraNode.kind, "nvlink"); // still the A100's link
  EXPECT_EQ(text(c.cluster.deviceSource.range), "device a100_80gb { memory = 70 GiB }");
}

TEST_F(ConfigTest, CustomDevice) {
  PlanConfig c = interpret(
      "cluster { device { memory = 80 GiB, bf16 = 312 TFLOPS, f32 = 19.5 TFLOPS, fp8 = 1 PFLOPS, bandwidth = 2.0 TB/s } }\n");
  EXPECT_EQ(messages(), "");
  const DeviceSpec &d = c.cluster.device;
  EXPECT_EQ(d.name, "custom");
  EXPECT_FALSE(d.isPreset);
  EXPECT_EQ(d.memoryBytes, uint64_t(80 * kGiB));
  EXPECT_DOUBLE_EQ(d.peakFlops.at("bf16"), 312e12);
  EXPECT_DOUBLE_EQ(d.peakFlops.at("f32"), 19.5e12);
  EXPECT_DOUBLE_EQ(d.peakFlops.at("fp8_e5m2"), 1e15);
  EXPECT_DOUBLE_EQ(d.memoryBandwidth, 2e12);
  EXPECT_EQ(d.peakFlops.count("f64"), 0u);
  EXPECT_EQ(c.cluster.intraNode.kind, "pcie");
}

TEST_F(ConfigTest, DeviceQuantitiesNeedTheirDimension) {
  PlanConfig c = interpret("cluster {\n  device { memory = 300 GB/s, bf16 = 80 GiB, bandwidth = 2 }\n}\n"
                           "parallel { bucket = 25 }\n");
  EXPECT_EQ(messages(),
            "2:21: error: 'memory' needs a size such as 80 GiB, got '300 GB/s'\n"
            "2:58: error: 'bandwidth' needs a bandwidth such as 300 GB/s, got '2'\n"
            "2:38: error: 'bf16' needs a FLOP rate such as 312 TFLOPS, got '80 GiB'\n"
            "4:21: error: 'bucket' needs a size such as 80 GiB, got '25'\n");
  EXPECT_EQ(c.cluster.device.name, "cpu");
}

TEST_F(ConfigTest, Links) {
  PlanConfig c = interpret("cluster {\n  device h100_sxm_80gb\n  intra_node = nvlink\n"
                           "  inter_node = ethernet(latency = 30 us)\n}\n");
  EXPECT_EQ(messages(), "");
  EXPECT_DOUBLE_EQ(c.cluster.intraNode.bandwidth, 450e9); // the H100's NVLink 4, not the default
  EXPECT_DOUBLE_EQ(c.cluster.interNode.bandwidth, 12.5e9);
  EXPECT_DOUBLE_EQ(c.cluster.interNode.latency, 30e-6);
  interpret("cluster {\n  intra_node = custom\n  inter_node = infiniband(200 Gb/s, latency = 5 GB)\n}\n");
  EXPECT_EQ(messages(), "2:16: error: missing argument 'bandwidth' in call to 'custom'\n"
                        "3:47: error: 'latency' needs a time such as 5 us, got '5 GB'\n");
}

//===----------------------------------------------------------------------===//
// parallel
//===----------------------------------------------------------------------===//

TEST_F(ConfigTest, ZeroStageOutOfRange) {
  PlanConfig c = interpret("parallel { zero = 4 }\n");
  interpret("parallel { zero = -1 }\n");
  EXPECT_EQ(messages(), "1:19: error: ZeRO stage must be 0, 1, 2 or 3, got 4\n"
                        "1:19: error: 'zero' must be an integer from 0 to 3, got -1\n");
  EXPECT_EQ(c.parallel.zeroStage, 0);
}

TEST_F(ConfigTest, MeshAxesAreNamed) {
  interpret("parallel { mesh(dp = 2, tq = 4) }\n");
  interpret("parallel { mesh(2, 4) }\n");
  interpret("parallel { mesh(dp = 2, dp = 4) }\n");
  EXPECT_EQ(messages(),
            "1:25: error: unknown mesh axis 'tq'; the axes are dp, tp, pp, cp and ep\n"
            "1:25: note: did you mean 'tp'? [fix-it: 'tp']\n"
            "1:17: error: arguments of 'mesh' are named, as in 'mesh(dp = 2, pp = 2, tp = 4)'\n"
            "1:25: error: argument 'dp' given twice\n"
            "1:17: note: previous definition is here\n");
}

TEST_F(ConfigTest, MeshSizeMustMatchTheCluster) {
  interpret("cluster {\n  nodes = 1\n  gpus_per_node = 8\n}\n"
            "parallel {\n  mesh(dp = 2, tp = 2)\n}\n");
  EXPECT_EQ(messages(),
            "6:3: error: mesh has 4 devices (dp = 2 x tp = 2) but the cluster has 8 (1 node x 8 GPUs)\n"
            "2:3: note: nodes = 1 set here\n"
            "3:3: note: gpus_per_node = 8 set here\n");
}

TEST_F(ConfigTest, AMeshTheCallerReplacesNeedNotCoverTheCluster) {
  // planc auto searches the cluster's meshes: the plan's mesh of 8 devices
  // on a cluster of 1 is no error there, nor is the batch checked against it.
  PlanConfig c = interpret("train { global_batch = 6 }\ncluster {\n  gpus_per_node = 1\n}\n"
                           "parallel {\n  mesh(dp = 4, tp = 2)\n  pipeline 1f1b(micro_batches = 3)\n}\n",
                           {}, /*check=*/false);
  checkConfig(c, engine, /*meshReplaced=*/true);
  EXPECT_EQ(messages(), "");
  // A mesh that covers the cluster is checked as ever.
  PlanConfig covering = interpret("train { global_batch = 6 }\ncluster { gpus_per_node = 4 }\n"
                                  "parallel { mesh(dp = 4) }\n",
                                  {}, /*check=*/false);
  checkConfig(covering, engine, /*meshReplaced=*/true);
  EXPECT_NE(messages().find("global_batch 6 is not divisible"), std::string::npos) << messages();
}

TEST_F(ConfigTest, DpFillsTheCluster) {
  PlanConfig c = interpret("train { global_batch = 16 }\ncluster { nodes = 2, gpus_per_node = 8 }\n"
                           "parallel { mesh(tp = 4, pp = 2) }\n");
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.parallel.size(MeshAxis::DP), 2);
  EXPECT_EQ(c.parallel.axisOrder, (std::vector<MeshAxis>{MeshAxis::TP, MeshAxis::PP}));
  c = interpret("cluster { nodes = 4, gpus_per_node = 8 }\n");
  EXPECT_EQ(c.parallel.size(MeshAxis::DP), 32);
}

TEST_F(ConfigTest, ClusterSizeFollowsTheMeshWhenNotWritten) {
  PlanConfig c = interpret("cluster { device rtx4090_24gb }\nparallel { mesh(dp = 2, tp = 2) }\n");
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.cluster.nodes, 1);
  EXPECT_EQ(c.cluster.gpusPerNode, 4);
  // Nor a global batch: one micro-batch per data-parallel rank.
  EXPECT_EQ(c.train.globalBatch, 2);
  EXPECT_EQ(c.parallel.microBatches, 1);
}

TEST_F(ConfigTest, InvalidMeshIsReportedOnce) {
  interpret("cluster { gpus_per_node = 8 }\nparallel { mesh(dp = 0, tp = 8) }\n");
  EXPECT_EQ(messages(), "2:22: error: 'dp' must be a positive integer, got 0\n");
}

TEST_F(ConfigTest, GlobalBatchDivisibility) {
  interpret("train {\n  global_batch = 100\n  micro_batch = 8\n}\n"
            "cluster { gpus_per_node = 2 }\n");
  EXPECT_EQ(messages(), "2:3: error: global_batch 100 is not divisible by micro_batch x dp = 8 x 2\n"
                        "3:3: note: micro_batch = 8 set here\n");
}

TEST_F(ConfigTest, DefaultScheduleIsOneFOneBWithComputedMicroBatches) {
  PlanConfig c = interpret("train { global_batch = 64, micro_batch = 4 }\n"
                           "cluster { gpus_per_node = 8 }\nparallel { mesh(dp = 2, pp = 4) }\n");
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.parallel.schedule, ScheduleStyle::OneFOneB);
  EXPECT_EQ(c.parallel.microBatches, 8);
  EXPECT_TRUE(c.parallel.scheduleSource.isDefault());
}

TEST_F(ConfigTest, PipelineNoneTakesTheWrittenScheduleAway) {
  // --set parallel.pipeline=none: the plan as if it wrote no pipeline, so a
  // mesh without pp has nothing to warn about, and with pp the schedule is
  // the default one with the batch's micro-batch count.
  const char *plan = "train { global_batch = 16 }\ncluster { gpus_per_node = 2 }\n"
                     "parallel {\n  mesh(dp = 2)\n  pipeline gpipe(micro_batches = 8)\n}\n";
  PlanConfig flat = interpret(plan, {"parallel.pipeline=none"});
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(flat.parallel.schedule, std::nullopt);
  EXPECT_TRUE(flat.parallel.scheduleSource.isDefault());
  EXPECT_EQ(flat.parallel.microBatches, 8);
  PlanConfig piped = interpret(plan, {"parallel.mesh=mesh(pp = 2)", "parallel.pipeline=none"});
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(piped.parallel.schedule, ScheduleStyle::OneFOneB);
  EXPECT_EQ(piped.parallel.microBatches, 16);
}

TEST_F(ConfigTest, MicroBatchesMustMatchTheBatch) {
  interpret("train { global_batch = 64, micro_batch = 4 }\n"
            "cluster { gpus_per_node = 4 }\nparallel {\n  mesh(dp = 2, pp = 2)\n  pipeline gpipe(micro_batches = 4)\n}\n");
  EXPECT_EQ(messages(),
            "5:3: error: pipeline micro_batches 4 does not match global_batch / (micro_batch x dp) = 8\n"
            "1:9: note: global_batch = 64 set here\n"
            "1:28: note: micro_batch = 4 set here\n"
            "4:8: note: dp = 2 set here\n");
}

TEST_F(ConfigTest, InterleavedNeedsMicroBatchesMultipleOfPp) {
  PlanConfig c = interpret("train { global_batch = 60, micro_batch = 1 }\n"
                           "cluster { gpus_per_node = 8 }\nparallel {\n  mesh(dp = 1, pp = 8)\n"
                           "  pipeline interleaved(v = 3)\n}\n");
  EXPECT_EQ(messages(),
            "5:3: error: interleaved schedule needs micro_batches (60) to be a multiple of pp (8)\n"
            "4:16: note: pp = 8 set here\n");
  EXPECT_EQ(c.parallel.virtualStages, 3);
  interpret("parallel { pipeline interleaved(v = 1) }\n");
  EXPECT_NE(messages().find("1:37: error: 'v' must be an integer of at least 2, got 1\n"), std::string::npos)
      << messages();
}

TEST_F(ConfigTest, ScheduleWithoutPipelineStages) {
  interpret("parallel {\n  pipeline zero_bubble\n}\n");
  interpret("parallel {\n  pipeline 1f1b\n}\n");
  EXPECT_EQ(messages(), "2:3: error: pipeline schedule 'zero_bubble' needs pp > 1\n"
                        "2:3: warning: 'pipeline' has no effect with pp = 1\n");
}

TEST_F(ConfigTest, FewMicroBatchesWarnsWithTheBubble) {
  interpret("train { global_batch = 2 }\ncluster { gpus_per_node = 4 }\n"
            "parallel {\n  mesh(pp = 4)\n  pipeline 1f1b\n}\n");
  EXPECT_EQ(messages(),
            "5:3: warning: pipeline of 4 stages with 2 micro-batches; the bubble takes 60% of the step\n");
}

TEST_F(ConfigTest, TensorParallelAcrossNodesWarns) {
  interpret("cluster { nodes = 2, gpus_per_node = 4 }\nparallel { mesh(tp = 8) }\n");
  EXPECT_EQ(messages(), "2:17: warning: tensor parallel size 8 is larger than a node's 4 GPUs; "
                        "tensor-parallel collectives will cross nodes\n");
}

TEST_F(ConfigTest, SettingsWithoutEffectWarn) {
  interpret("parallel {\n  zero = 2\n  sequence_parallel = true\n}\n");
  EXPECT_EQ(messages(), "3:3: warning: 'sequence_parallel' has no effect with tp = 1\n"
                        "2:3: warning: 'zero' has no effect with dp = 1\n");
}

TEST_F(ConfigTest, OverlapForms) {
  PlanConfig c = interpret("parallel { overlap = false }\n");
  EXPECT_FALSE(c.parallel.overlapGradReduce || c.parallel.overlapParamGather);
  c = interpret("parallel { overlap { param_gather = false } }\n");
  EXPECT_TRUE(c.parallel.overlapGradReduce);
  EXPECT_FALSE(c.parallel.overlapParamGather);
  EXPECT_EQ(messages(), "");
}

// Settings that no pass reads yet are errors at their line, not silently accepted.
TEST_F(ConfigTest, SettingsNotSupportedYet) {
  interpret("parallel { overlap(p2p = false) }\n");
  EXPECT_EQ(messages(), "1:20: error: 'overlap(p2p)' is not supported yet; pipeline send and receive are not "
                        "overlapped with compute; remove 'p2p'\n");
  collector->diags.clear();
  interpret("parallel { recompute auto }\n");
  EXPECT_EQ(messages(), "1:22: error: recompute policy 'auto' is not supported yet; use selective or full\n");
  collector->diags.clear();
  PlanConfig c = interpret("parallel { mesh(dp = 4, cp = 2) }\n");
  EXPECT_EQ(messages(), "1:25: error: mesh axis 'cp' = 2 is not supported yet; the mesh splits the work over dp, "
                        "tp and pp only\n");
  EXPECT_EQ(c.parallel.size(MeshAxis::CP), 1);
  // Compiled executables write checkpoints (runtime/Checkpoint.h): accepted.
  collector->diags.clear();
  c = interpret("train { checkpoint(every = 10, dir = \"out\", keep = 2) }\n");
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.train.checkpoint.every, 10);
  EXPECT_EQ(c.train.checkpoint.dir, "out");
  EXPECT_EQ(c.train.checkpoint.keep, 2);
}

TEST_F(ConfigTest, StageBalanceIsLayersUnlessWritten) {
  PlanConfig c = interpret("parallel { }\n");
  EXPECT_EQ(c.parallel.balance, StageBalance::Layers);
  EXPECT_TRUE(c.parallel.balanceSource.isDefault());
  c = interpret("parallel { balance = flops }\n");
  EXPECT_EQ(c.parallel.balance, StageBalance::Flops);
  EXPECT_EQ(text(c.parallel.balanceSource.range), "balance = flops");
  c = interpret("parallel { balance layers }\n", {"parallel.balance=flops"});
  EXPECT_EQ(c.parallel.balance, StageBalance::Flops);
  EXPECT_EQ(messages(), "");
  // An unknown policy keeps the default and says which are known.
  c = interpret("parallel { balance = even }\n");
  EXPECT_EQ(c.parallel.balance, StageBalance::Layers);
  EXPECT_NE(messages().find("unknown stage balance 'even'"), std::string::npos);
  EXPECT_NE(messages().find("valid choices: layers, flops"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// --set
//===----------------------------------------------------------------------===//

TEST_F(ConfigTest, SetReplacesASettingAndBecomesItsSource) {
  PlanConfig c = interpret("cluster { gpus_per_node = 2 }\nparallel { zero = 1 }\n", {"parallel.zero=2"});
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.parallel.zeroStage, 2);
  EXPECT_EQ(text(c.parallel.zeroSource.range), "parallel.zero=2");
}

TEST_F(ConfigTest, SetWithUnknownKeyPointsIntoTheOption) {
  interpret("cluster { gpus_per_node = 2 }\nparallel { zero = 1 }\n", {"parallel.zeroo=2"});
  EXPECT_EQ(messages(), "<--set parallel.zeroo=2>:1:10: error: unknown setting 'zeroo' in the 'parallel' block\n"
                        "<--set parallel.zeroo=2>:1:10: note: did you mean 'zero'? [fix-it: 'zero']\n");
}

TEST_F(ConfigTest, SetValueErrorsPointIntoTheOption) {
  interpret("model m { }\n", {"parallel.zero=7", "train.steps.x=1"});
  EXPECT_EQ(messages(), "<--set train.steps.x=1>:1:13: error: 'steps' has no parameter named 'x'\n"
                        "<--set parallel.zero=7>:1:15: error: ZeRO stage must be 0, 1, 2 or 3, got 7\n");
}

TEST_F(ConfigTest, SetOneArgumentOfACall) {
  PlanConfig c = interpret("train { optimizer adamw(lr = 6e-4, betas = (0.9, 0.95)) }\n",
                           {"train.optimizer.lr=1e-4"});
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.train.optimizer.kind, OptimizerKind::AdamW);
  EXPECT_DOUBLE_EQ(c.train.optimizer.lr, 1e-4);
  EXPECT_DOUBLE_EQ(c.train.optimizer.beta2, 0.95);
  EXPECT_EQ(text(c.train.optimizer.source.range), "train.optimizer.lr=1e-4");
}

TEST_F(ConfigTest, SetArgumentWithoutTheSettingInTheFile) {
  PlanConfig c = interpret("model m { }\n", {"train.optimizer.lr=1e-4", "parallel.recompute=full"});
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.train.optimizer.kind, OptimizerKind::AdamW);
  EXPECT_DOUBLE_EQ(c.train.optimizer.lr, 1e-4);
  EXPECT_EQ(c.parallel.recompute, RecomputePolicy::Full);
}

TEST_F(ConfigTest, SetAWholeCall) {
  PlanConfig c = interpret("train { optimizer adamw(lr = 6e-4) }\n",
                           {"train.optimizer=sgd(lr = 0.1, momentum = 0.9)"});
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.train.optimizer.kind, OptimizerKind::SGD);
  EXPECT_DOUBLE_EQ(c.train.optimizer.lr, 0.1);
}

TEST_F(ConfigTest, SetUnknownArgument) {
  interpret("train { optimizer adamw }\nparallel { mesh(dp = 1) }\n",
            {"train.optimizer.lrr=1", "parallel.mesh.tq=4"});
  EXPECT_EQ(messages(),
            "<--set train.optimizer.lrr=1>:1:17: error: 'adamw' has no parameter named 'lrr'\n"
            "<--set train.optimizer.lrr=1>:1:17: note: did you mean 'lr'? [fix-it: 'lr']\n"
            "note: valid choices: lr, betas, eps, weight_decay, weight_decay_params, warmup, decay, min_lr\n"
            "<--set parallel.mesh.tq=4>:1:15: error: unknown mesh axis 'tq'; the axes are dp, tp, pp, cp and ep\n"
            "<--set parallel.mesh.tq=4>:1:15: note: did you mean 'tp'? [fix-it: 'tp']\n");
}

TEST_F(ConfigTest, SetOneMeshAxis) {
  PlanConfig c = interpret("cluster { gpus_per_node = 8 }\nparallel { mesh(dp = 4, tp = 2) }\n",
                           {"parallel.mesh.tp=4", "parallel.mesh.dp=2"});
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.parallel.size(MeshAxis::DP), 2);
  EXPECT_EQ(c.parallel.size(MeshAxis::TP), 4);
  EXPECT_EQ(text(c.parallel.axisSource[unsigned(MeshAxis::TP)].range), "parallel.mesh.tp=4");
  EXPECT_EQ(c.parallel.axisOrder, (std::vector<MeshAxis>{MeshAxis::DP, MeshAxis::TP}));
}

TEST_F(ConfigTest, SetMeshSizeMismatchPointsAtTheOption) {
  interpret("cluster { gpus_per_node = 8 }\nparallel { mesh(dp = 4, tp = 2) }\n", {"parallel.mesh.tp=4"});
  EXPECT_EQ(messages(), "<--set parallel.mesh.tp=4>:1:1: error: mesh has 16 devices (dp = 4 x tp = 4) "
                        "but the cluster has 8 (1 node x 8 GPUs)\n"
                        "1:11: note: gpus_per_node = 8 set here\n");
}

TEST_F(ConfigTest, SetTheWholeMesh) {
  PlanConfig c = interpret("train { global_batch = 8 }\ncluster { gpus_per_node = 8 }\n"
                           "parallel { mesh(dp = 4, tp = 2) }\n",
                           {"parallel.mesh=mesh(pp = 2, tp = 4)"});
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.parallel.size(MeshAxis::DP), 1);
  EXPECT_EQ(c.parallel.size(MeshAxis::PP), 2);
  EXPECT_EQ(c.parallel.size(MeshAxis::TP), 4);
}

TEST_F(ConfigTest, SetDeviceAndDeviceMemory) {
  PlanConfig c = interpret("cluster { device a100_80gb { memory = 70 GiB } }\n", {"cluster.device=h100_sxm_80gb"});
  EXPECT_EQ(c.cluster.device.name, "h100_sxm_80gb");
  EXPECT_TRUE(c.cluster.device.isPreset);
  EXPECT_EQ(c.cluster.device.memoryBytes, uint64_t(80 * kGiB));
  c = interpret("cluster { device a100_80gb }\n", {"cluster.device.memory=70GiB"});
  EXPECT_EQ(c.cluster.device.name, "a100_80gb");
  EXPECT_EQ(c.cluster.device.memoryBytes, uint64_t(70 * kGiB));
  EXPECT_EQ(text(c.cluster.deviceSource.range), "cluster.device.memory=70GiB");
  EXPECT_EQ(messages(), "");
}

TEST_F(ConfigTest, LaterOptionsWin) {
  PlanConfig c = interpret("train { optimizer adamw(lr = 1) }\n",
                           {"train.optimizer.lr=0.5", "train.optimizer=sgd", "train.optimizer.momentum=0.5"});
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.train.optimizer.kind, OptimizerKind::SGD);
  EXPECT_DOUBLE_EQ(c.train.optimizer.lr, 3e-4); // the earlier lr went with the adamw it adjusted
  EXPECT_DOUBLE_EQ(c.train.optimizer.momentum, 0.5);
}

//===----------------------------------------------------------------------===//
// Hand-built trees
//===----------------------------------------------------------------------===//

TEST_F(ConfigTest, SettingWithoutValueDoesNotCrash) {
  ast::ConfigBlock block;
  block.kind = ast::ConfigBlock::Kind::Train;
  auto s = std::make_unique<ast::Setting>();
  s->key = "steps";
  s->form = ast::Setting::Form::Word; // a builder that lost the value
  block.settings.push_back(std::move(s));
  auto n = std::make_unique<ast::Setting>();
  n->key = "optimizer";
  n->form = ast::Setting::Form::Nested;
  block.settings.push_back(std::move(n));
  PlanConfig c = interpretConfig(&block, nullptr, nullptr, {}, engine);
  EXPECT_EQ(messages(), "error: 'steps' is written 'steps = 5000'\n"
                        "error: 'optimizer' is written 'optimizer adamw(lr = 3e-4)'\n");
  EXPECT_EQ(c.train.steps, 1);
  EXPECT_TRUE(c.isInvalid("train.steps"));
}

} // namespace
