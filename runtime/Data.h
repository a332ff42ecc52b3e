//===- runtime/Data.h - the training data of `train { data ... }` -*- C++ -*-===//
//
// A data source hands out the batch of a step: `tokens` and `targets` of the
// model's shape [batch, seq], the targets being the tokens shifted by one
// (next-token prediction), as raw buffers of the inputs' element type. Batches
// depend only on the seed and the step, so a resumed run, a recomputation and
// an outside reference all see the same numbers. Three sources:
//
//   synthetic   a seeded first-order Markov chain over the vocabulary: each
//               token has a few likely successors, so a model can learn it and
//               its loss falls from ln(vocab) towards the chain's entropy
//   text        a file whose bytes are the tokens (any text, no tokenizer)
//   tokens      a raw array of u16 or u32 tokens, nanoGPT's .bin layout
//
// File sources read windows at seeded random offsets, as nanoGPT's get_batch.
// Relative paths are relative to the working directory, like the checkpoint
// folder. A missing, unreadable, truncated or too small file, or a token the
// model's vocabulary does not have, is an error naming the file. The file is
// read into memory whole on every rank, so it must be a regular file (not
// `/dev/zero`, a pipe or a folder) of at most kMaxDataFileBytes (64 GiB).
//
// What shape a model's batch has is the compiler's to say (it reads the IR:
// backend/interp/BatchShape.h); this file takes it as given.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_DATA_H
#define PLANC_RUNTIME_DATA_H

#include "runtime/ElementType.h"
#include "runtime/HostTensor.h"
#include "runtime/Status.h"

#include <cstdint>
#include <memory>
#include <string>

namespace planc::runtime {

/// The largest data file a source reads (64 GiB): it is held in memory whole,
/// once per rank (docs/language.md, `data`).
constexpr uint64_t kMaxDataFileBytes = uint64_t(64) << 30;

struct DataSpec {
  enum class Kind { Synthetic, Text, Tokens };
  Kind kind = Kind::Synthetic;
  std::string path;                          // text, tokens
  ElementType tokenDType = ElementType::U16; // tokens: U16 or U32 (text: one byte each)
  uint64_t maxFileBytes = kMaxDataFileBytes;  // text, tokens: larger files are refused
};

/// What a batch must look like: the model's `tokens` and `targets` inputs.
struct BatchShape {
  int64_t batch = 1, seq = 1;
  int64_t vocab = 1;                     // token ids are in [0, vocab)
  ElementType type = ElementType::I32;   // of the inputs: an integer type
};

struct Batch {
  HostTensor tokens, targets; // [batch, seq] of BatchShape::type
};

class DataSource {
public:
  virtual ~DataSource() = default;
  /// The batch of `step` (0-based). Deterministic: the same seed and step give
  /// the same batch, in any order of calls.
  virtual Result<Batch> batch(int64_t step) = 0;
  /// One line for the log: "synthetic Markov chain over 50 tokens, 4 successors each".
  virtual std::string describe() const = 0;
};

/// Opens the source; file sources check their file here (size, layout,
/// enough tokens for one sequence). A shape no batch can have (no rows or
/// positions, an empty vocabulary, a non-integer type or one too narrow for
/// the vocabulary) is an error too.
Result<std::unique_ptr<DataSource>> openDataSource(const DataSpec &spec, const BatchShape &shape, uint64_t seed);

} // namespace planc::runtime

#endif
