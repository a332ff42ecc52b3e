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

/// Loads the model parameters of a safetensors file (--init-from) into
/// this rank's blocks: by the plan's paths (a file `planc convert` wrote),
/// every model parameter there with its shape; or by the name map the plan
/// follows (`names = hf_llama`, ExecutableModel::nameMap), a file of
/// Hugging Face names. Under a name map every rank takes the tensors of its
/// own parameters and passes over the others' (another pipeline stage's);
/// a tensor the map gives no parameter of the whole plan, and one it does
/// not know at all, is an error, as is a named parameter of this rank
/// missing from the file; a tied tensor (a head tied to the embedding) must
/// equal the one it is tied to. A dtype other than the buffer's is
/// converted. Errors name the file and the tensor; `summary` says what was
/// loaded and which parameters keep their initial values (LoRA's adapters).
Status loadInitialWeights(const ExecutableModel &model, uint8_t *arena, const std::string &file,
                          std::string &summary);

} // namespace planc::runtime

#endif
