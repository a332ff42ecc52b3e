//===- runtime/CheckpointIndex.h - reading a checkpoint by its index -*- C++ -*-===//
//
// The reading side of docs/checkpoints.md: a checkpoint's index.json (which
// rank's file holds which block of every tensor) and the blocks themselves,
// assembled into whatever block a reader needs -- a rank's block under the
// plan that resumes (which may split the tensors otherwise than the plan
// that wrote them: resharding), or the whole tensor (the converter to one
// unsharded file).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_CHECKPOINTINDEX_H
#define PLANC_RUNTIME_CHECKPOINTINDEX_H

#include "runtime/BlockCopy.h"
#include "runtime/ElementType.h"
#include "runtime/NameMap.h"
#include "runtime/Safetensors.h"
#include "runtime/Status.h"

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
  std::string plan, build;
  int64_t step = 0;
  uint64_t seed = 0;
  std::map<std::string, Tensor> tensors;
  NameMap names; // the name map of the plan that wrote it (empty: none)
};

/// The index of the checkpoint at `path`: a step folder, or a checkpoint
/// folder whose newest complete step folder is taken. Errors: no such
/// folder, none complete, an index that is not one (naming the file).
Result<CheckpointIndex> readCheckpointIndex(const std::string &path);

/// The complete step folders of `dir`, oldest first.
std::vector<std::string> completeCheckpoints(const std::string &dir);

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
  Result<const SafetensorsContents *> open(const std::string &file);
  const CheckpointIndex &index;
  std::map<std::string, SafetensorsContents> opened;
};

} // namespace planc::runtime

#endif
