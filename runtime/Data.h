//===- runtime/Data.h - the training data of `train { data ... }` -*- C++ -*-===//
//
// A data source hands out the batch of a step: `tokens` and `targets` of the
// model's shape [batch, seq], the targets being the tokens shifted by one
// (next-token prediction). Batches depend only on the seed and the step, so a
// resumed run, a recomputation and an outside reference all see the same
// numbers. Three sources:
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
// model's vocabulary does not have, is an error naming the file.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_DATA_H
#define PLANC_RUNTIME_DATA_H

#include "ir/IR.h"
#include "ir/Tensor.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace planc::runtime {

struct DataSpec {
  enum class Kind { Synthetic, Text, Tokens };
  Kind kind = Kind::Synthetic;
  std::string path;                   // text, tokens
  ir::DType tokenDType = ir::DType::U16; // tokens: U16 or U32
};

/// What a batch must look like: the model's `tokens` and `targets` inputs.
struct BatchShape {
  int64_t batch = 1, seq = 1;
  int64_t vocab = 1;                  // token ids are in [0, vocab)
  ir::DType dtype = ir::DType::I32;   // of the inputs
};

/// The model's token inputs: `input tokens : i32[batch, seq]` and `input
/// targets` of the same type, and the vocabulary of the embedding table the
/// tokens index. Any other shape of model is an error saying what is needed.
llvm::Expected<BatchShape> batchShapeOf(const ir::Module &m);

struct Batch {
  ir::Tensor tokens, targets; // [batch, seq]
};

class DataSource {
public:
  virtual ~DataSource() = default;
  /// The batch of `step` (0-based). Deterministic: the same seed and step give
  /// the same batch, in any order of calls.
  virtual llvm::Expected<Batch> batch(int64_t step) = 0;
  /// One line for the log: "synthetic Markov chain (4 successors per token)".
  virtual std::string describe() const = 0;
};

/// Opens the source; file sources check their file here (size, layout,
/// enough tokens for one sequence).
llvm::Expected<std::unique_ptr<DataSource>> openDataSource(const DataSpec &spec, const BatchShape &shape,
                                                           uint64_t seed);

} // namespace planc::runtime

#endif
