//===- runtime/CheckpointIndex.h - reading a checkpoint by its index -*- C++ -*-===//
//
// The reading side of docs/checkpoints.md: a checkpoint's index.json (which
// rank's file holds which block of every tensor) and the blocks themselves,
// assembled into whatever block a reader needs -- a rank's block under the
// plan that resumes (which may split the tensors otherwise than the plan
// that wrote them: resharding), or the whole tensor (the converter to one
// unsharded file).
//
// Nothing a checkpoint says is taken as written (docs/checkpoints.md,
// "What is verified"): the index's fields are checked (a known format, a
// step and a seed that are not negative, block shapes within the global
// shape, sizes without overflow) and, from format 3 on, against the
// index's own checksum; every rank file is checked against the size and
// CRC-32C the index recorded for it, its tensors against their own
// checksums, and its metadata (plan, build, step, seed, rank, mesh)
// against the index.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_CHECKPOINTINDEX_H
#define PLANC_RUNTIME_CHECKPOINTINDEX_H

#include "runtime/BlockCopy.h"
#include "runtime/ElementType.h"
#include "runtime/NameMap.h"
#include "runtime/Safetensors.h"
#include "runtime/Status.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace planc::runtime {

struct CheckpointIndex {
  struct FileBlock {
    std::string file; // "rank-<r>.safetensors", in the step folder
    int64_t rank = 0;
    Block block;      // its shape and global offset
  };
  struct Tensor {
    ElementType type = ElementType::F32;
    std::vector<int64_t> shape; // global
    std::string sharding;
    std::vector<FileBlock> files;
  };
  std::string folder;    // the step folder
  std::string indexPath; // its index.json
  int format = 3;        // planc-checkpoint-<format>
  std::string plan, build;
  int64_t step = 0;
  uint64_t seed = 0;
  int64_t ranks = 1;
  std::vector<int64_t> mesh; // dp, pp, tp, cp, ep (format 2 on)
  std::string lineage;       // the run that wrote it and the runs it resumed (format 3)
  std::map<std::string, Tensor> tensors;
  std::map<std::string, FileDigest> files; // each rank file's size and CRC-32C (format 3)
  NameMap names; // the name map of the plan that wrote it (empty: none)
  /// Folders passed over while looking for the newest checkpoint.
  std::vector<std::string> warnings;
};

/// The newest format this build writes, and its name.
constexpr int kCheckpointFormat = 3;
constexpr const char *kCheckpointFormatName = "planc-checkpoint-3";

/// The index of the checkpoint at `path`: a step folder, or a checkpoint
/// folder whose complete checkpoint of the highest step is taken. Errors:
/// no such folder, none complete, an index that is not one or whose
/// checksum does not match (naming the file and the field).
Result<CheckpointIndex> readCheckpointIndex(const std::string &path);

/// The text of index.json: `index` (every field but the checksum) with the
/// CRC-32C of its compact JSON as "checksum".
std::string checkpointIndexText(const nlohmann::json &index);

/// A new run's lineage: 16 hex digits, unique in practice.
std::string newCheckpointLineage();

/// A complete checkpoint of a folder.
struct CheckpointEntry {
  std::string folder; // DIR/step-<N>
  int64_t step = 0;   // its index's
  std::string lineage;
};

/// What a checkpoint folder holds: its complete checkpoints by the step
/// their index records, oldest first -- a folder named after its index's
/// step (checkpointFolder), whose index reads -- and a warning for every
/// other folder, which is ignored (`step-9`, `step-abc`, one whose index is
/// damaged or names another step). A step folder without an index (an
/// interrupted checkpoint) is passed over without one.
struct CheckpointListing {
  std::vector<CheckpointEntry> complete;
  std::vector<std::string> warnings;
};
CheckpointListing listCheckpoints(const std::string &dir);

/// Reads blocks of a checkpoint's tensors, each file read once.
class CheckpointReader {
public:
  explicit CheckpointReader(const CheckpointIndex &index) : index(index) {}
  /// Writes block `to` of tensor `name` into `out` (to.shape elements of
  /// `type`, the tensor's own dtype; what lies outside the global shape is
  /// 0) from the files that hold it, `preferRank`'s first. Errors name the
  /// file or the tensor: missing, another dtype, blocks that do not cover.
  Status read(const std::string &name, const Block &to, ElementType type, int64_t preferRank, uint8_t *out);

private:
  /// Reads a rank file and checks it against the index: its size and
  /// CRC-32C, its tensors' checksums, its metadata.
  Result<const SafetensorsContents *> open(const std::string &file, int64_t rank);
  const CheckpointIndex &index;
  std::map<std::string, SafetensorsContents> opened;
};

} // namespace planc::runtime

#endif
