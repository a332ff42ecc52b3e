//===- runtime/Checkpoint.h - a compiled plan's checkpoints -------*- C++ -*-===//
//
// The files of docs/checkpoints.md, every rank writing its own:
//
//   DIR/step-<N>/rank-<r>.safetensors   every Param buffer of rank r by its
//                                       checkpoint name, in its own dtype
//                                       (its block of a sharded tensor);
//                                       metadata: plan, build, step, seed, rank
//   DIR/step-<N>/index.json             written last, by rank 0, once every
//                                       rank's file is durable: the plan, the
//                                       build, the step (steps done), the
//                                       seed, the mesh, and per tensor its
//                                       global shape, dtype, sharding and
//                                       which file holds which block (its
//                                       shape and global offset)
//
// N is the number of steps done (the step to run next, 0-based), zero-padded
// to eight digits so the folders sort by step. Every file is written
// atomically; a folder without index.json is an interrupted checkpoint and
// is neither resumed from nor counted among the kept ones.
//
// Loading reads the index and, for each block the rank needs, the parts of
// the files that cover it: a checkpoint written under one plan loads under
// any other plan of the same model (other mesh, ZeRO stage, schedule) --
// resharding -- as long as every tensor has the same global shape.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_CHECKPOINT_H
#define PLANC_RUNTIME_CHECKPOINT_H

#include "runtime/Executable.h"
#include "runtime/Status.h"

#include <cstdint>
#include <functional>
#include <string>

namespace planc::runtime {

/// "DIR/step-00000100".
std::string checkpointFolder(const std::string &dir, int64_t stepsDone);

/// "rank-<r>.safetensors".
std::string rankFileName(int64_t rank);

/// How the ranks of a mesh agree while they write one checkpoint.
struct RankSync {
  /// Collective over every rank: whether any rank passed true.
  std::function<bool(bool failed)> anyFailed;
};

/// Writes this rank's part of the checkpoint of `stepsDone` steps from
/// `arena` (every rank calls it, with `sync` when there are several), then
/// rank 0 writes the index and removes complete checkpoints beyond the
/// newest `keep` (0: keeps all). On an error on any rank (an unwritable
/// folder, a full disk) the earlier checkpoints are untouched, no index is
/// written, and the message says so.
Status saveCheckpoint(const ExecutableModel &model, const uint8_t *arena, const std::string &dir,
                      int64_t stepsDone, uint64_t seed, int64_t keep, const RankSync *sync = nullptr);

struct Resumed {
  int64_t stepsDone = 0;
  uint64_t seed = 0;
  std::string folder;
};

/// Loads the checkpoint at `path` -- a step folder, or a checkpoint root
/// whose newest complete step folder is taken -- into `arena`: this rank's
/// block of every parameter, from whichever files hold it. Errors name the
/// file: none complete, another plan, a missing tensor, one of another
/// global shape or dtype, blocks that do not cover the rank's, a truncated
/// file.
Result<Resumed> loadCheckpoint(const ExecutableModel &model, uint8_t *arena, const std::string &path);

/// Loads the model parameters of a safetensors file (--init-from): by the
/// plan's paths, every model parameter there with its shape; or, for a file
/// of Hugging Face names (Llama's model.layers.N..., GPT-2's h.N...), by the
/// name maps below. A dtype other than the buffer's is converted. Names the
/// file and the tensor on errors; `summary` says what was loaded.
///
/// The Llama map (a plan built from std.nn and std.llama, named as
/// examples/llama2-7b.plan; `*` any instance path), nn.Linear's [out, in]
/// weights transposed:
///
///   model.embed_tokens.weight                        *tok_embeddings.weight
///   model.layers.N.input_layernorm.weight            blocks.N.*attention_norm.weight
///   model.layers.N.self_attn.{q,k,v,o}_proj.weight   blocks.N.*w{q,k,v,o}[.weight]   transposed
///   model.layers.N.post_attention_layernorm.weight   blocks.N.*ffn_norm.weight
///   model.layers.N.mlp.{gate,up,down}_proj.weight    blocks.N.*w{1,3,2}[.weight]     transposed
///   model.norm.weight, lm_head.weight                norm.weight, output.weight (transposed)
///
/// The GPT-2 map (std.gpt, named as examples/gpt2-124m.plan; a
/// `transformer.` prefix optional), Conv1D's [in, out] weights as they are:
///
///   wte.weight, wpe.weight                  *wte.weight, *wpe.weight (its first seq rows)
///   h.N.ln_{1,2}.{weight,bias}              blocks.N.*ln_{1,2}.{weight,bias}
///   h.N.attn.c_attn.{weight,bias}           blocks.N.*{w,b}_qkv   columns [3, heads, d] -> [heads, 3, d]
///   h.N.attn.c_proj.{weight,bias}           blocks.N.*{w,b}_o
///   h.N.mlp.c_fc.{weight,bias}              blocks.N.*{w,b}_in
///   h.N.mlp.c_proj.{weight,bias}            blocks.N.*{w,b}_out
///   ln_f.{weight,bias}                      *ln_f.{weight,bias}
///
/// c_attn's reordering needs the head count: the compiler reads it from the
/// reshape std.gpt's attention splits the product with (ExecParam::qkvHeads);
/// a parameter without one is an error, not a silent misordering.
///
/// Each must match exactly one parameter; tensors the maps do not know
/// (rotary tables, GPT-2's mask buffers and tied lm_head) are skipped,
/// parameters they do not reach (LoRA's adapters) keep their initial values.
/// Rotary weights need no permutation: planc's rope turns the pairs
/// (i, i + d/2), as the Hugging Face Llama checkpoints expect.
Status loadInitialWeights(const ExecutableModel &model, uint8_t *arena, const std::string &file,
                          std::string &summary);

} // namespace planc::runtime

#endif
