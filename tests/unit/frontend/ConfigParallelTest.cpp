//===- tests/unit/frontend/ConfigParallelTest.cpp - cluster and parallel settings ---===//
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

/// Its own suite name: a suite is one fixture class, and each test file has
/// its own copy of ConfigTestFixture.h's.
class ConfigParallelTest : public ConfigTest {};

//===----------------------------------------------------------------------===//
// cluster
//===----------------------------------------------------------------------===//

TEST_F(ConfigParallelTest, PresetsHaveTheirDatasheetNumbers) {
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

TEST_F(ConfigParallelTest, UnknownDeviceSuggestsAPreset) {
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

TEST_F(ConfigParallelTest, PresetWithOverriddenNumbers) {
  PlanConfig c = interpret("cluster { device a100_80gb { memory = 70 GiB } }\n");
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.cluster.device.name, "a100_80gb");
  EXPECT_FALSE(c.cluster.device.isPreset);
  EXPECT_EQ(c.cluster.device.memoryBytes, uint64_t(70 * kGiB));
  EXPECT_DOUBLE_EQ(c.cluster.device.peakFlops.at("bf16"), 312e12);
  EXPECT_EQ(c.cluster.intraNode.kind, "nvlink"); // still the A100's link
  EXPECT_EQ(text(c.cluster.deviceSource.range), "device a100_80gb { memory = 70 GiB }");
}

TEST_F(ConfigParallelTest, CustomDevice) {
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

TEST_F(ConfigParallelTest, DeviceQuantitiesNeedTheirDimension) {
  PlanConfig c = interpret("cluster {\n  device { memory = 300 GB/s, bf16 = 80 GiB, bandwidth = 2 }\n}\n"
                           "parallel { bucket = 25 }\n");
  EXPECT_EQ(messages(),
            "2:21: error: 'memory' needs a size such as 80 GiB, got '300 GB/s'\n"
            "2:58: error: 'bandwidth' needs a bandwidth such as 300 GB/s, got '2'\n"
            "2:38: error: 'bf16' needs a FLOP rate such as 312 TFLOPS, got '80 GiB'\n"
            "4:21: error: 'bucket' needs a size such as 80 GiB, got '25'\n");
  EXPECT_EQ(c.cluster.device.name, "cpu");
}

TEST_F(ConfigParallelTest, Links) {
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

TEST_F(ConfigParallelTest, ZeroStageOutOfRange) {
  PlanConfig c = interpret("parallel { zero = 4 }\n");
  interpret("parallel { zero = -1 }\n");
  EXPECT_EQ(messages(), "1:19: error: ZeRO stage must be 0, 1, 2 or 3, got 4\n"
                        "1:19: error: 'zero' must be an integer from 0 to 3, got -1\n");
  EXPECT_EQ(c.parallel.zeroStage, 0);
}

TEST_F(ConfigParallelTest, MeshAxesAreNamed) {
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

TEST_F(ConfigParallelTest, MeshSizeMustMatchTheCluster) {
  interpret("cluster {\n  nodes = 1\n  gpus_per_node = 8\n}\n"
            "parallel {\n  mesh(dp = 2, tp = 2)\n}\n");
  EXPECT_EQ(messages(),
            "6:3: error: mesh has 4 devices (dp = 2 x tp = 2) but the cluster has 8 (1 node x 8 GPUs)\n"
            "2:3: note: nodes = 1 set here\n"
            "3:3: note: gpus_per_node = 8 set here\n");
}

TEST_F(ConfigParallelTest, AMeshTheCallerReplacesNeedNotCoverTheCluster) {
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

TEST_F(ConfigParallelTest, DpFillsTheCluster) {
  PlanConfig c = interpret("train { global_batch = 16 }\ncluster { nodes = 2, gpus_per_node = 8 }\n"
                           "parallel { mesh(tp = 4, pp = 2) }\n");
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.parallel.size(MeshAxis::DP), 2);
  EXPECT_EQ(c.parallel.axisOrder, (std::vector<MeshAxis>{MeshAxis::TP, MeshAxis::PP}));
  c = interpret("cluster { nodes = 4, gpus_per_node = 8 }\n");
  EXPECT_EQ(c.parallel.size(MeshAxis::DP), 32);
}

TEST_F(ConfigParallelTest, ClusterSizeFollowsTheMeshWhenNotWritten) {
  PlanConfig c = interpret("cluster { device rtx4090_24gb }\nparallel { mesh(dp = 2, tp = 2) }\n");
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.cluster.nodes, 1);
  EXPECT_EQ(c.cluster.gpusPerNode, 4);
  // Nor a global batch: one micro-batch per data-parallel rank.
  EXPECT_EQ(c.train.globalBatch, 2);
  EXPECT_EQ(c.parallel.microBatches, 1);
}

TEST_F(ConfigParallelTest, InvalidMeshIsReportedOnce) {
  interpret("cluster { gpus_per_node = 8 }\nparallel { mesh(dp = 0, tp = 8) }\n");
  EXPECT_EQ(messages(), "2:22: error: 'dp' must be a positive integer, got 0\n");
}

TEST_F(ConfigParallelTest, GlobalBatchDivisibility) {
  interpret("train {\n  global_batch = 100\n  micro_batch = 8\n}\n"
            "cluster { gpus_per_node = 2 }\n");
  EXPECT_EQ(messages(), "2:3: error: global_batch 100 is not divisible by micro_batch x dp = 8 x 2\n"
                        "3:3: note: micro_batch = 8 set here\n");
}

TEST_F(ConfigParallelTest, DefaultScheduleIsOneFOneBWithComputedMicroBatches) {
  PlanConfig c = interpret("train { global_batch = 64, micro_batch = 4 }\n"
                           "cluster { gpus_per_node = 8 }\nparallel { mesh(dp = 2, pp = 4) }\n");
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.parallel.schedule, ScheduleStyle::OneFOneB);
  EXPECT_EQ(c.parallel.microBatches, 8);
  EXPECT_TRUE(c.parallel.scheduleSource.isDefault());
}

TEST_F(ConfigParallelTest, PipelineNoneTakesTheWrittenScheduleAway) {
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

TEST_F(ConfigParallelTest, MicroBatchesMustMatchTheBatch) {
  interpret("train { global_batch = 64, micro_batch = 4 }\n"
            "cluster { gpus_per_node = 4 }\nparallel {\n  mesh(dp = 2, pp = 2)\n  pipeline gpipe(micro_batches = 4)\n}\n");
  EXPECT_EQ(messages(),
            "5:3: error: pipeline micro_batches 4 does not match global_batch / (micro_batch x dp) = 8\n"
            "1:9: note: global_batch = 64 set here\n"
            "1:28: note: micro_batch = 4 set here\n"
            "4:8: note: dp = 2 set here\n");
}

TEST_F(ConfigParallelTest, InterleavedNeedsMicroBatchesMultipleOfPp) {
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

TEST_F(ConfigParallelTest, ScheduleWithoutPipelineStages) {
  interpret("parallel {\n  pipeline zero_bubble\n}\n");
  interpret("parallel {\n  pipeline 1f1b\n}\n");
  EXPECT_EQ(messages(), "2:3: error: pipeline schedule 'zero_bubble' needs pp > 1\n"
                        "2:3: warning: 'pipeline' has no effect with pp = 1\n");
}

TEST_F(ConfigParallelTest, FewMicroBatchesWarnsWithTheBubble) {
  interpret("train { global_batch = 2 }\ncluster { gpus_per_node = 4 }\n"
            "parallel {\n  mesh(pp = 4)\n  pipeline 1f1b\n}\n");
  EXPECT_EQ(messages(),
            "5:3: warning: pipeline of 4 stages with 2 micro-batches; the bubble takes 60% of the step\n");
}

TEST_F(ConfigParallelTest, TensorParallelAcrossNodesWarns) {
  interpret("cluster { nodes = 2, gpus_per_node = 4 }\nparallel { mesh(tp = 8) }\n");
  EXPECT_EQ(messages(), "2:17: warning: tensor parallel size 8 is larger than a node's 4 GPUs; "
                        "tensor-parallel collectives will cross nodes\n");
}

TEST_F(ConfigParallelTest, SettingsWithoutEffectWarn) {
  interpret("parallel {\n  zero = 2\n  sequence_parallel = true\n}\n");
  EXPECT_EQ(messages(), "3:3: warning: 'sequence_parallel' has no effect with tp = 1\n"
                        "2:3: warning: 'zero' has no effect with dp = 1\n");
}

TEST_F(ConfigParallelTest, OverlapForms) {
  PlanConfig c = interpret("parallel { overlap = false }\n");
  EXPECT_FALSE(c.parallel.overlapGradReduce || c.parallel.overlapParamGather);
  c = interpret("parallel { overlap { param_gather = false } }\n");
  EXPECT_TRUE(c.parallel.overlapGradReduce);
  EXPECT_FALSE(c.parallel.overlapParamGather);
  EXPECT_EQ(messages(), "");
}

// Settings that no pass reads yet are errors at their line, not silently accepted.
TEST_F(ConfigParallelTest, SettingsNotSupportedYet) {
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

TEST_F(ConfigParallelTest, StageBalanceIsLayersUnlessWritten) {
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

TEST_F(ConfigParallelTest, SetReplacesASettingAndBecomesItsSource) {
  PlanConfig c = interpret("cluster { gpus_per_node = 2 }\nparallel { zero = 1 }\n", {"parallel.zero=2"});
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.parallel.zeroStage, 2);
  EXPECT_EQ(text(c.parallel.zeroSource.range), "parallel.zero=2");
}

TEST_F(ConfigParallelTest, SetWithUnknownKeyPointsIntoTheOption) {
  interpret("cluster { gpus_per_node = 2 }\nparallel { zero = 1 }\n", {"parallel.zeroo=2"});
  EXPECT_EQ(messages(), "<--set parallel.zeroo=2>:1:10: error: unknown setting 'zeroo' in the 'parallel' block\n"
                        "<--set parallel.zeroo=2>:1:10: note: did you mean 'zero'? [fix-it: 'zero']\n");
}

TEST_F(ConfigParallelTest, SetValueErrorsPointIntoTheOption) {
  interpret("model m { }\n", {"parallel.zero=7", "train.steps.x=1"});
  EXPECT_EQ(messages(), "<--set train.steps.x=1>:1:13: error: 'steps' has no parameter named 'x'\n"
                        "<--set parallel.zero=7>:1:15: error: ZeRO stage must be 0, 1, 2 or 3, got 7\n");
}

TEST_F(ConfigParallelTest, SetOneArgumentOfACall) {
  PlanConfig c = interpret("train { optimizer adamw(lr = 6e-4, betas = (0.9, 0.95)) }\n",
                           {"train.optimizer.lr=1e-4"});
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.train.optimizer.kind, OptimizerKind::AdamW);
  EXPECT_DOUBLE_EQ(c.train.optimizer.lr, 1e-4);
  EXPECT_DOUBLE_EQ(c.train.optimizer.beta2, 0.95);
  EXPECT_EQ(text(c.train.optimizer.source.range), "train.optimizer.lr=1e-4");
}

TEST_F(ConfigParallelTest, SetArgumentWithoutTheSettingInTheFile) {
  PlanConfig c = interpret("model m { }\n", {"train.optimizer.lr=1e-4", "parallel.recompute=full"});
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.train.optimizer.kind, OptimizerKind::AdamW);
  EXPECT_DOUBLE_EQ(c.train.optimizer.lr, 1e-4);
  EXPECT_EQ(c.parallel.recompute, RecomputePolicy::Full);
}

TEST_F(ConfigParallelTest, SetAWholeCall) {
  PlanConfig c = interpret("train { optimizer adamw(lr = 6e-4) }\n",
                           {"train.optimizer=sgd(lr = 0.1, momentum = 0.9)"});
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.train.optimizer.kind, OptimizerKind::SGD);
  EXPECT_DOUBLE_EQ(c.train.optimizer.lr, 0.1);
}

TEST_F(ConfigParallelTest, SetUnknownArgument) {
  interpret("train { optimizer adamw }\nparallel { mesh(dp = 1) }\n",
            {"train.optimizer.lrr=1", "parallel.mesh.tq=4"});
  EXPECT_EQ(messages(),
            "<--set train.optimizer.lrr=1>:1:17: error: 'adamw' has no parameter named 'lrr'\n"
            "<--set train.optimizer.lrr=1>:1:17: note: did you mean 'lr'? [fix-it: 'lr']\n"
            "note: valid choices: lr, betas, eps, weight_decay, weight_decay_params, warmup, decay, min_lr\n"
            "<--set parallel.mesh.tq=4>:1:15: error: unknown mesh axis 'tq'; the axes are dp, tp, pp, cp and ep\n"
            "<--set parallel.mesh.tq=4>:1:15: note: did you mean 'tp'? [fix-it: 'tp']\n");
}

TEST_F(ConfigParallelTest, SetOneMeshAxis) {
  PlanConfig c = interpret("cluster { gpus_per_node = 8 }\nparallel { mesh(dp = 4, tp = 2) }\n",
                           {"parallel.mesh.tp=4", "parallel.mesh.dp=2"});
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.parallel.size(MeshAxis::DP), 2);
  EXPECT_EQ(c.parallel.size(MeshAxis::TP), 4);
  EXPECT_EQ(text(c.parallel.axisSource[unsigned(MeshAxis::TP)].range), "parallel.mesh.tp=4");
  EXPECT_EQ(c.parallel.axisOrder, (std::vector<MeshAxis>{MeshAxis::DP, MeshAxis::TP}));
}

TEST_F(ConfigParallelTest, SetMeshSizeMismatchPointsAtTheOption) {
  interpret("cluster { gpus_per_node = 8 }\nparallel { mesh(dp = 4, tp = 2) }\n", {"parallel.mesh.tp=4"});
  EXPECT_EQ(messages(), "<--set parallel.mesh.tp=4>:1:1: error: mesh has 16 devices (dp = 4 x tp = 4) "
                        "but the cluster has 8 (1 node x 8 GPUs)\n"
                        "1:11: note: gpus_per_node = 8 set here\n");
}

TEST_F(ConfigParallelTest, SetTheWholeMesh) {
  PlanConfig c = interpret("train { global_batch = 8 }\ncluster { gpus_per_node = 8 }\n"
                           "parallel { mesh(dp = 4, tp = 2) }\n",
                           {"parallel.mesh=mesh(pp = 2, tp = 4)"});
  EXPECT_EQ(messages(), "");
  EXPECT_EQ(c.parallel.size(MeshAxis::DP), 1);
  EXPECT_EQ(c.parallel.size(MeshAxis::PP), 2);
  EXPECT_EQ(c.parallel.size(MeshAxis::TP), 4);
}

TEST_F(ConfigParallelTest, SetDeviceAndDeviceMemory) {
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

TEST_F(ConfigParallelTest, LaterOptionsWin) {
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

TEST_F(ConfigParallelTest, SettingWithoutValueDoesNotCrash) {
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
