//===- runtime/Checkpoint.h - a compiled plan's checkpoints -------*- C++ -*-===//
//
// The files of docs/checkpoints.md, every rank writing its own:
//
//   DIR/step-<N>/rank-<r>.safetensors   every Param buffer of rank r by its
//                                       checkpoint name, in its own dtype
//                                       (its block of a sharded tensor);
//                                       metadata: plan, build, step, seed,
//                                       rank, mesh, and the CRC-32C of every
//                                       tensor and of the header
//   DIR/step-<N>/index.json             written last, by rank 0, once every
//                                       rank's file is durable: the plan, the
//                                       build, the step (steps done), the
//                                       seed, the mesh, the run's lineage,
//                                       every rank file's size and CRC-32C,
//                                       per tensor its global shape, dtype,
//                                       sharding and which file holds which
//                                       block (its shape and global offset),
//                                       and a checksum of all of that
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
#include <vector>

namespace planc::runtime {

/// "DIR/step-00000100".
std::string checkpointFolder(const std::string &dir, int64_t stepsDone);

/// "rank-<r>.safetensors".
std::string rankFileName(int64_t rank);

/// How the ranks of a mesh agree while they write one checkpoint.
struct RankSync {
  /// Collective over every rank: whether any rank passed true.
  std::function<bool(bool failed)> anyFailed;
  /// Collective: every rank's text, in rank order, on rank 0 (empty
  /// elsewhere) -- what each rank's file is, for the index.
  std::function<Result<std::vector<std::string>>(const std::string &mine)> gather;
};

struct Resumed {
  int64_t stepsDone = 0;
  uint64_t seed = 0;
  std::string folder;
  std::string lineage;                  // the checkpoint's run lineage ("" before format 3)
  std::vector<std::string> dropped;     // its tensors the plan lacks (--drop-unused-tensors)
  std::vector<std::string> warnings;    // folders passed over looking for the newest
};

/// Where a run writes its checkpoints, and which of them it may remove.
struct CheckpointSeries {
  std::string dir;
  int64_t keep = 0;         // the newest `keep` of the lineage stay; 0: all
  std::string lineage;      // the run's: new, or the checkpoint's it resumed
  std::string resumedFrom;  // the step folder it resumed from: never removed
};

/// Before training, on every rank: makes `dir` and checks that this rank
/// can write there (a file written and removed), and, when the run writes
/// a checkpoint at all (`firstWrite`, the step of its first one; -1: none),
/// that `dir` holds no complete checkpoint it would overwrite or interleave
/// with -- one of a step past `start`, or of `firstWrite` itself (a fresh
/// run's step 0). `resumed` is the checkpoint the run continues (its
/// lineage carries on), or null (a new lineage). `warnings` receives the
/// folders of `dir` that are not checkpoints.
Result<CheckpointSeries> startCheckpointSeries(const std::string &dir, int64_t keep, int64_t start,
                                               const Resumed *resumed, int64_t firstWrite, int64_t rank,
                                               std::vector<std::string> &warnings);

/// Writes this rank's part of the checkpoint of `stepsDone` steps from
/// `arena` (every rank calls it, with `sync` when there are several), then
/// rank 0 writes the index and removes the checkpoints of the series'
/// lineage beyond its newest `keep`, never the one resumed from nor one of
/// another run. On an error on any rank (an unwritable folder, a full
/// disk) the earlier checkpoints are untouched, no index is written, and
/// the message says so.
Status saveCheckpoint(const ExecutableModel &model, const uint8_t *arena, const CheckpointSeries &series,
                      int64_t stepsDone, uint64_t seed, const RankSync *sync = nullptr);

/// Loads the checkpoint at `path` -- a step folder, or a checkpoint root
/// whose complete checkpoint of the highest step is taken -- into `arena`:
/// this rank's block of every parameter, from whichever files hold it,
/// every file verified against the index (CheckpointIndex.h). Errors name
/// the file: none complete, another plan, a missing tensor, one the plan
/// lacks (unless `dropUnused`: Resumed::dropped names them), one of another
/// global shape or dtype, blocks that do not cover the rank's, a truncated,
/// corrupt or mismatched file.
Result<Resumed> loadCheckpoint(const ExecutableModel &model, uint8_t *arena, const std::string &path,
                               bool dropUnused = false);

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
/// By the plan's paths, a tensor no buffer of the plan has (a larger
/// model's layer, another optimizer's state) is an error unless
/// `dropUnused` (--drop-unused-tensors): then `summary` names it.
Status loadInitialWeights(const ExecutableModel &model, uint8_t *arena, const std::string &file,
                          std::string &summary, bool dropUnused = false);

/// "2 tensors the plan lacks dropped: 'a', 'b'": what a load that passed
/// over them says, a few named, then a count.
std::string droppedNote(const std::vector<std::string> &dropped);

} // namespace planc::runtime

#endif
