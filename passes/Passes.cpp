//===- passes/Passes.cpp - the registry of passes -------------------------===//
//
// Every pass is listed here once, by name, with its one-line description and
// its factory; defaultTrainingPipeline() is the compiler's table of contents.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/PassManager.h"

using namespace planc;

const std::vector<PassInfo> &planc::registeredPasses() {
  static const std::vector<PassInfo> passes = {
      {"canonicalize", "removes ops whose results nothing uses and folds identity reshapes and casts",
       [](const PassPipelineOptions &) { return createCanonicalizePass(); }},
      {"autodiff", "appends the backward graph: a gradient output for every trainable parameter",
       [](const PassPipelineOptions &) { return createAutodiffPass(); }},
      {"optimizer", "lowers gradient clipping, the learning-rate schedule and the parameter updates to IR",
       [](const PassPipelineOptions &o) { return createOptimizerLoweringPass(o.training.optimizer, o.training.precision.grads); }},
      {"lora", "freezes the model and adds trainable LoRA adapters to every linear weight (lora_rank, lora_alpha)",
       [](const PassPipelineOptions &o) { return createLoraAdaptersPass(o.training.lora); }},
      {"fuse-attention", "under fusion = aggressive, fuses each attention (scores, mask, softmax, dropout, values) into flash_attention",
       [](const PassPipelineOptions &o) { return createFuseAttentionPass(o.training.fusion); }},
      {"fold-into-matmul", "under fusion = aggressive, folds weight-gradient batch sums and last-two-dim transposes into the matmuls beside them",
       [](const PassPipelineOptions &o) { return createFoldIntoMatMulPass(o.training.fusion); }},
      {"mixed-precision", "computes the forward graph in compute_dtype (bf16, f16) from f32 master parameters",
       [](const PassPipelineOptions &o) { return createMixedPrecisionPass(o.training.precision); }},
      {"loss-scaling", "scales the loss, unscales the gradients and skips steps that overflow (fp16)",
       [](const PassPipelineOptions &o) { return createLossScalingPass(o.training.precision); }},
      {"recompute", "recomputes saved activations in backward as the recompute policy says (none, selective, full)",
       [](const PassPipelineOptions &o) { return createRecomputePass(o.partition); }},
      {"zero", "splits optimizer states (ZeRO-1, 2) and parameters (ZeRO-3) over dp",
       [](const PassPipelineOptions &o) { return createZeroShardingPass(o.partition); }},
      {"propagate-sharding", "gives every value a sharding over the mesh and inserts the collectives between layouts",
       [](const PassPipelineOptions &o) { return createShardingPropagationPass(o.partition); }},
      {"sp-regather", "under sequence parallel, gathers a sequence-split activation again in backward instead of keeping the gathered copy",
       [](const PassPipelineOptions &o) { return createSequenceParallelRegatherPass(o.partition); }},
      {"param-prefetch", "issues each ZeRO-3 parameter gather one use ahead, in the order of first use",
       [](const PassPipelineOptions &o) { return createParamPrefetchPass(o.partition); }},
      {"grad-buckets", "groups the data-parallel gradient reductions into buckets issued during backward",
       [](const PassPipelineOptions &o) { return createGradientBucketsPass(o.partition); }},
      {"pipeline", "cuts the step into pipeline stages and schedule instructions, adds send/recv between stages",
       [](const PassPipelineOptions &o) { return createPipelinePartitionPass(o.partition.pipeline); }},
      {"fuse-elementwise", "under fusion = elementwise or aggressive, fuses chains of elementwise ops into fused_elementwise",
       [](const PassPipelineOptions &o) { return createFuseElementwisePass(o.training.fusion); }},
      {"check-deadlock", "proves every pair of ranks issues its messages and collectives in a matching order",
       [](const PassPipelineOptions &o) { return createDeadlockCheckPass(o.partition.pipeline); }},
  };
  return passes;
}

llvm::Error planc::addDefaultTrainingPipeline(PassManager &pm) {
  // Dead values first: a plan may compute what nothing reads (thousands of
  // statements in a repeated layer), and every later pass, the partitioner
  // and the memory planner would carry them.
  if (llvm::Error e = pm.add("canonicalize")) return e;
  // Adapters rewrite the model as written (a no-op unless the plan asks for
  // them): first, so the matmuls still read their weights directly, and the
  // casts, gradients and updates of every later pass see the adapters as any
  // other parameter.
  if (llvm::Error e = pm.add("lora")) return e;
  // Attention fused before differentiation: backward is the fused op's own
  // gradient, and no s x t value is left for recompute or the planner to keep
  // (a no-op unless the plan asks for fusion = aggressive).
  if (llvm::Error e = pm.add("fuse-attention")) return e;
  // The compute dtype is a property of the forward graph; autodiff then
  // differentiates its casts, so gradients reach the f32 master weights in f32.
  if (llvm::Error e = pm.add("mixed-precision")) return e;
  // Differentiate first, before anything lowers or splits the graph (Glow's
  // order): every later pass then transforms the whole training step at once.
  if (llvm::Error e = pm.add("autodiff")) return e;
  // The update is IR too, so forward, backward and update are one module that
  // the partitioner, the memory planner and the backends see whole.
  if (llvm::Error e = pm.add("optimizer")) return e;
  // fp16 loss scaling wraps the seed of backward and the updates (a no-op
  // unless the plan asks for it).
  if (llvm::Error e = pm.add("loss-scaling")) return e;
  // Batch sums and transposes beside matmuls go into them (a no-op unless
  // the plan asks for fusion = aggressive); forward, backward and update
  // are all here.
  if (llvm::Error e = pm.add("fold-into-matmul")) return e;
  // Gradient rules leave values nothing reads (gradients of inputs), and
  // folding leaves transposes and matmuls none reads; drop them.
  return pm.add("canonicalize");
}

llvm::Error planc::addPartitionPipeline(PassManager &pm, bool deadlockCheck) {
  // Recompute first: the clones it puts into backward are partitioned like
  // any op, so they get the same layouts and collectives as the originals.
  if (llvm::Error e = pm.add("recompute")) return e;
  // ZeRO only chooses layouts for states and parameters; propagation then
  // makes every other layout consistent with them.
  if (llvm::Error e = pm.add("zero")) return e;
  if (llvm::Error e = pm.add("propagate-sharding")) return e;
  // Sequence parallel keeps the shard of a gathered activation for backward
  // and gathers it again there (Megatron), not the gathered copy.
  if (llvm::Error e = pm.add("sp-regather")) return e;
  // ZeRO-3's parameter gathers a use ahead, so they overlap compute.
  if (llvm::Error e = pm.add("param-prefetch")) return e;
  // Gradient sync in buckets during backward, once every layout is known.
  if (llvm::Error e = pm.add("grad-buckets")) return e;
  // Stages last: they split ops that already have their layouts.
  if (llvm::Error e = pm.add("pipeline")) return e;
  // Elementwise chains fused on the settled step: a group never straddles a
  // stage, a phase or a layout (a no-op unless the plan asks for fusion).
  if (llvm::Error e = pm.add("fuse-elementwise")) return e;
  // Checked on the rolled step with the schedule: cheap for any model size.
  return deadlockCheck ? pm.add("check-deadlock") : llvm::Error::success();
}
