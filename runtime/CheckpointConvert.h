//===- runtime/CheckpointConvert.h - checkpoints to one file and back -*- C++ -*-===//
//
// `planc convert` (docs/checkpoints.md): a checkpoint of any plan -- every
// rank's blocks -- as one unsharded safetensors file other tools read
// (every tensor whole, by its checkpoint name, in its own dtype; the plan,
// step and seed in the file's metadata), and such a file back into a
// checkpoint folder of one rank's file, which every plan of the model
// resumes from (loading reshards it).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_CHECKPOINTCONVERT_H
#define PLANC_RUNTIME_CHECKPOINTCONVERT_H

#include "runtime/Status.h"

#include <string>

namespace planc::runtime {

/// Writes the checkpoint at `checkpoint` (a step folder, or a folder whose
/// newest complete step is taken) whole into `file`; `summary` says what.
Status exportCheckpoint(const std::string &checkpoint, const std::string &file, std::string &summary);

/// Writes the tensors of `file` (one written by exportCheckpoint: its
/// metadata names the plan, the step and the seed) as the checkpoint
/// DIR/step-<N> of one rank; `summary` says what.
Status importCheckpoint(const std::string &file, const std::string &dir, std::string &summary);

/// Writes the checkpoint at `checkpoint` into `file` under the names of the
/// name map its plan follows (`mapName`, "hf-llama" or "hf_llama": the index
/// records the map): every tensor the map names, whole, the map's steps
/// applied (nn.Linear's transposes, GPT-2's column order), in the
/// parameter's dtype, with the "pt" metadata transformers reads; and the
/// map's config.json beside `file`. Optimizer states are left out.
Status exportNamed(const std::string &checkpoint, const std::string &mapName, const std::string &file,
                   std::string &summary);

} // namespace planc::runtime

#endif
