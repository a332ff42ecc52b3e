//===- frontend/Config.h - the train, cluster and parallel settings -*- C++ -*-===//
//
// The interpreted form of a plan's `train`, `cluster` and `parallel` blocks
// (after --set overrides). Every setting keeps the source range it came from,
// so later analyses (the memory ledger, the partitioner) can point their
// diagnostics at the line that decides them.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_CONFIG_H
#define PLANC_FRONTEND_CONFIG_H

#include "frontend/AST.h"
#include "support/Diagnostics.h"
#include "ir/Mesh.h"
#include "ir/PartitionDefaults.h"
#include "ir/TrainingKinds.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace planc {

/// Where a setting came from: its range in the file (or in a --set buffer).
/// An invalid range means the default was used.
struct SettingSource {
  llvm::SMRange range;
  bool isDefault() const { return !range.isValid(); }
};

//===----------------------------------------------------------------------===//
// train { }
//===----------------------------------------------------------------------===//

// OptimizerKind, DecayKind, WeightDecayParams and LossScaling are the passes' own (ir/TrainingKinds.h).
enum class DataKind { Synthetic, Text, Tokens };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::AdamW;
  double lr = 3e-4;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.0;
  WeightDecayParams weightDecayParams = WeightDecayParams::Matrices; // which parameters weightDecay applies to
  double momentum = 0.0;  // sgd
  bool nesterov = false;  // sgd
  int64_t warmup = 0;     // steps of linear warm-up
  DecayKind decay = DecayKind::Constant;
  double minLr = 0.0;     // floor of the decay
  int64_t blockSize = 2048; // adam8bit: block-wise quantisation of the moments
  SettingSource source;
};

struct PrecisionConfig {
  std::string compute = "f32"; // f32, bf16, f16, fp8_e4m3
  std::string master = "f32";  // dtype of the optimizer's copy of the weights
  std::string grads;           // dtype of the gradients the optimizer reads; empty: the compute dtype
  LossScaling lossScaling = LossScaling::None;
  double initialScale = 65536.0; // fp16 dynamic scaling
  int64_t growthInterval = 2000;
  SettingSource source;
};

struct DataConfig {
  DataKind kind = DataKind::Synthetic;
  std::string path;          // text / tokens
  std::string tokenDtype;    // tokens: u16 or u32
  SettingSource source;
};

struct CheckpointConfig {
  int64_t every = 0;         // 0: no checkpoints
  std::string dir = "ckpt";
  int64_t keep = 0;          // 0: keep all
  SettingSource source;
};

/// `adapters lora(rank = 8, alpha = 16)`: every weight of the model frozen and
/// each linear weight given a trainable low-rank update (passes/LoraAdapters.cpp).
enum class AdapterKind { None, LoRA };

struct AdapterConfig {
  AdapterKind kind = AdapterKind::None;
  int64_t rank = 8;
  double alpha = 16.0;       // 2 x rank unless written
  bool alphaWritten = false; // a rank written later moves an unwritten alpha with it
  SettingSource source;
};

struct TrainConfig {
  int64_t globalBatch = 1;  SettingSource globalBatchSource;
  int64_t microBatch = 1;   SettingSource microBatchSource;
  int64_t steps = 1;        SettingSource stepsSource;
  int64_t seed = 0;         SettingSource seedSource;
  double clipGradNorm = 0;  SettingSource clipSource; // 0: no clipping
  OptimizerConfig optimizer;
  PrecisionConfig precision;
  AdapterConfig adapters;
  DataConfig data;
  CheckpointConfig checkpoint;
  /// Which ops become one kernel (passes/FuseAttention.h).
  FusionPolicy fusion = kDefaultFusion; SettingSource fusionSource;
  /// The name map --init-from and `planc convert --to` follow (a `names`
  /// declaration, frontend/NameMaps.h); empty: the plan's own names only.
  std::string names; SettingSource namesSource; llvm::SMRange namesRange;
};

//===----------------------------------------------------------------------===//
// cluster { }
//===----------------------------------------------------------------------===//

/// A device: a preset or a custom one. FLOP/s are dense peaks per dtype.
struct DeviceSpec {
  std::string name;
  uint64_t memoryBytes = 0;
  std::map<std::string, double> peakFlops; // dtype name -> FLOP/s
  double memoryBandwidth = 0;              // bytes/s
  bool isPreset = false;
};

struct LinkSpec {
  std::string kind;      // nvlink, pcie, infiniband, ethernet, shm, custom
  double bandwidth = 0;  // bytes/s, per GPU, one direction
  double latency = 0;    // seconds
  SettingSource source;
};

struct ClusterConfig {
  int64_t nodes = 1;        SettingSource nodesSource;
  int64_t gpusPerNode = 1;  SettingSource gpusSource;
  DeviceSpec device;        SettingSource deviceSource;
  LinkSpec intraNode;       // between GPUs of a node
  LinkSpec interNode;       // between nodes (written as the node's total, kept per GPU)
  int64_t worldSize() const { return nodes * gpusPerNode; }
};

/// The presets, for the docs and for "did you mean".
llvm::ArrayRef<DeviceSpec> devicePresets();
const DeviceSpec *findDevicePreset(llvm::StringRef name);

//===----------------------------------------------------------------------===//
// parallel { }
//===----------------------------------------------------------------------===//

// RecomputePolicy and StageBalance are the passes' own (ir/TrainingKinds.h).

struct ParallelConfig {
  /// Size per axis (1 when absent). The order the axes were written in is kept
  /// for printing; the rank layout is fixed (tp fastest, then cp, ep, pp, dp).
  std::array<int64_t, kNumMeshAxes> axisSize{1, 1, 1, 1, 1};
  std::array<SettingSource, kNumMeshAxes> axisSource{};
  std::vector<MeshAxis> axisOrder;     // the axes written, in the order written
  SettingSource meshSource;
  int64_t size(MeshAxis a) const { return axisSize[unsigned(a)]; }
  int64_t meshSize() const;

  // The defaults are the passes' too (ir/PartitionDefaults.h).
  int64_t zeroStage = defaults::kZeroStage;               SettingSource zeroSource;
  bool sequenceParallel = defaults::kSequenceParallel;    SettingSource sequenceParallelSource;
  std::optional<ScheduleStyle> schedule; // none: not written (defaults::kSchedule when pp > 1)
  int64_t virtualStages = defaults::kVirtualStages;       // interleaved(v)
  int64_t microBatches = 0;            // 0: global_batch / (micro_batch x dp)
  SettingSource scheduleSource;
  StageBalance balance = defaults::kBalance; SettingSource balanceSource; // how pipeline chunks are cut
  RecomputePolicy recompute = defaults::kRecompute; SettingSource recomputeSource;
  uint64_t bucketBytes = defaults::kBucketBytes;          SettingSource bucketSource;
  bool overlapGradReduce = defaults::kOverlapGradReduce;   // overlap DP gradient sync with backward
  bool overlapParamGather = defaults::kOverlapParamGather; // ZeRO-3 prefetch
};

struct PlanConfig {
  /// --dim name=value: integer `let`s of the model given another value.
  std::map<std::string, int64_t> dimOverrides;
  TrainConfig train;
  ClusterConfig cluster;
  ParallelConfig parallel;
  bool hasTrain = false, hasCluster = false, hasParallel = false;
  /// Settings reported as errors ("parallel.mesh"); they hold defaults, so
  /// checkConfig skips the cross-checks that would only repeat the error.
  std::vector<std::string> invalidSettings;
  bool isInvalid(llvm::StringRef setting) const;
};

/// A `--set block.key=value` option, parsed into a setting.
struct SetOverride {
  std::string text;                 // as given on the command line
  ast::ConfigBlock::Kind block;
  std::vector<std::string> path;    // key, and for nested overrides the argument: optimizer.lr
  ast::SettingPtr setting;          // the value, parsed from its own buffer
};

/// Interprets the config blocks (any of them may be null) with the overrides
/// applied, reporting every bad setting. Cross-checks that need the model
/// (layers vs stages, heads vs tp) live in Sema.
PlanConfig interpretConfig(const ast::ConfigBlock *train, const ast::ConfigBlock *cluster,
                           const ast::ConfigBlock *parallel,
                           llvm::ArrayRef<SetOverride *> overrides, DiagnosticEngine &diags);

/// Checks that only need the settings: mesh size against the cluster, batch
/// divisibility, schedule against micro-batches, warnings for suspicious plans.
/// meshReplaced: the mesh is the caller's to replace (FrontendOptions::
/// meshReplaced); one that does not cover the cluster is then no error, and
/// nothing is checked against it.
void checkConfig(const PlanConfig &config, DiagnosticEngine &diags, bool meshReplaced = false);

} // namespace planc

#endif
