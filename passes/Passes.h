//===- passes/Passes.h - the factories of every pass ------------*- C++ -*-===//
#ifndef PLANC_PASSES_PASSES_H
#define PLANC_PASSES_PASSES_H

#include "passes/Pass.h"
#include "passes/PassPipelineOptions.h"

#include "llvm/Support/Error.h"

namespace planc {

/// Removes ops with no used results (and no side effects: sends and
/// collectives stay) and folds reshapes to the same shape and casts to the
/// same dtype. Needs: a verified module. Keeps: outputs and their values.
std::unique_ptr<Pass> createCanonicalizePass();

/// Appends the backward graph: an output "grad.<path>" per trainable
/// parameter. Needs: a scalar float output "loss". See Autodiff.cpp.
std::unique_ptr<Pass> createAutodiffPass();

/// Lowers the optimizer step (clipping, learning-rate schedule, SGD / Adam /
/// AdamW / 8-bit Adam) as IR: outputs "new.<path>" per updated parameter and
/// optimizer state, reading the gradients in `gradDType` if given. Needs:
/// autodiff's gradients. See OptimizerLowering.cpp.
std::unique_ptr<Pass> createOptimizerLoweringPass(const OptimizerOptions &options,
                                                  std::optional<ir::DType> gradDType = std::nullopt);

/// Activation recomputation: clones the forward ops of the values the
/// policy (options.recompute: none, selective, full; an op's `recompute`
/// attribute overrides it) does not save into the backward section and
/// rewires backward to read the clones. Needs: autodiff's backward ops. See
/// Recompute.cpp (rules) and analysis/SavedActivations.h (savedActivations).
std::unique_ptr<Pass> createRecomputePass(const PartitionOptions &options);

/// Forward graph in a narrow compute dtype (bf16, f16) with f32 master
/// parameters (one cast per parameter) and an f32 loss; `@precision` ops run
/// in their dtype. Needs: a forward module (before autodiff). Reads
/// options.compute. See MixedPrecision.cpp.
std::unique_ptr<Pass> createMixedPrecisionPass(const PrecisionOptions &options);

/// Fuses each attention of the forward graph into flash_attention when the
/// policy is `aggressive` (passes/FuseAttention.h); otherwise a no-op.
std::unique_ptr<Pass> createFuseAttentionPass(const FusionOptions &options);

/// Fuses chains of elementwise ops into fused_elementwise under the policies
/// `elementwise` and `aggressive` (passes/FuseElementwise.h); otherwise a no-op.
std::unique_ptr<Pass> createFuseElementwisePass(const FusionOptions &options);

/// Under `fusion = aggressive`, folds the batch sum of a weight gradient and
/// transposes of the last two dims into the matmuls beside them
/// (passes/FoldIntoMatMul.cpp).
std::unique_ptr<Pass> createFoldIntoMatMulPass(const FusionOptions &options);

/// LoRA on every linear layer of the model as written: freezes every
/// parameter and gives each linear weight P trainable adapters P.lora_a,
/// P.lora_b, its matmul x @ P becoming x @ P + (x @ P.lora_a) @ P.lora_b *
/// (alpha / rank). Needs: a forward module (before mixed-precision). A rank
/// of 0 changes nothing. See LoraAdapters.cpp.
std::unique_ptr<Pass> createLoraAdaptersPass(const LoraOptions &options);
/// The weights the lora pass adapts, in parameter order.
std::vector<ir::Value *> loraTargets(const ir::Module &m);
/// Why `rank` cannot be applied to `m` (no linear weight; a rank above some
/// weight's min(in, out)), as a PlanError for the plan's author; the driver
/// asks before running the pipeline, whose errors are internal ones.
llvm::Error checkLoraTargets(const ir::Module &m, int64_t rank);

/// Static or dynamic loss scaling (fp16): scales autodiff's seed, unscales the
/// gradients before the update, skips a step whose gradients overflowed, and
/// for "dynamic" carries the scale as state. Needs: autodiff (and the
/// optimizer, if any, already lowered). Reads options.lossScaling,
/// lossScaleInit, lossScaleWindow. See LossScaling.cpp.
std::unique_ptr<Pass> createLossScalingPass(const PrecisionOptions &options);

/// Splits the optimizer states (ZeRO-1, 2) and the parameters (ZeRO-3) of a
/// training step over dp. Reads options.zeroStage. See ZeroSharding.cpp.
std::unique_ptr<Pass> createZeroShardingPass(const PartitionOptions &options);

/// SPMD partitioning: a sharding for every value and the collectives between
/// layouts. Reads sequenceParallel, zeroStage. See ShardingPropagation.cpp.
std::unique_ptr<Pass> createShardingPropagationPass(const PartitionOptions &options);

/// Sequence parallel: a tp-gathered activation that backward reads is
/// gathered again in backward, so the shard is what stays saved (Megatron).
/// Reads sequenceParallel. See SequenceParallelRegather.cpp.
std::unique_ptr<Pass> createSequenceParallelRegatherPass(const PartitionOptions &options);

/// ZeRO-3: each parameter gather issued one use ahead of its use (prefetch).
/// Reads overlapParamGather. See ParamPrefetch.cpp.
std::unique_ptr<Pass> createParamPrefetchPass(const PartitionOptions &options);

/// Data-parallel gradient reductions in buckets, each issued right after its
/// last gradient is made. Reads bucketBytes, overlapGradReduce, zeroStage.
/// See GradientBuckets.cpp.
std::unique_ptr<Pass> createGradientBucketsPass(const PartitionOptions &options);

/// Pipeline stages, the schedule instruction of every op and the send/recv
/// between stages, for one micro-batch, as `spec` says (the stage count is
/// the mesh's pp). See PipelinePartition.cpp.
std::unique_ptr<Pass> createPipelinePartitionPass(const PipelineScheduleSpec &spec);

/// Proves that every pair of communicating ranks issues its messages and
/// collectives in a matching order (no deadlock), on a placed module with
/// the schedule `spec` names (or one whose ops carry their micro-batch, in
/// module order). See DeadlockCheck.cpp.
std::unique_ptr<Pass> createDeadlockCheckPass(const PipelineScheduleSpec &spec = {});

class PassManager;
/// The passes that turn a lowered forward module into one training step, in
/// order, each with the reason for its place (see Passes.cpp).
llvm::Error addDefaultTrainingPipeline(PassManager &pm);

/// The passes that partition a training step over its mesh (recompute, ZeRO
/// layouts, sharding propagation with collective insertion, pipeline stages,
/// the deadlock check), in order. `deadlockCheck` false leaves the check out,
/// for a compile that builds the execution plan, whose verifier proves the
/// same message order on the plan itself (exec/PlanVerifier.h).
llvm::Error addPartitionPipeline(PassManager &pm, bool deadlockCheck = true);

} // namespace planc

#endif
