//===- runtime/Data.cpp - synthetic, text and token-file batches ---------===//

#include "runtime/Data.h"

#include "ir/Interpreter.h"

#include "llvm/Support/MemoryBuffer.h"
#include "support/Error.h"

#include <algorithm>
#include <array>
#include <cmath>

using namespace planc;
using namespace planc::ir;
using namespace planc::runtime;

namespace {

/// SplitMix64's finaliser: distinct (seed, purpose, step, row) tuples get
/// unrelated Philox keys.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t keyOf(uint64_t seed, uint64_t purpose, uint64_t a = 0, uint64_t b = 0) {
  return mix(mix(mix(seed ^ mix(purpose)) ^ a) ^ b);
}

/// Random stream purposes, so the chain, the walks and the file offsets of
/// one seed never share numbers.
enum : uint64_t { kChain = 1, kWalk = 2, kOffset = 3 };

Batch emptyBatch(const BatchShape &shape) {
  return {Tensor({shape.batch, shape.seq}, shape.dtype), Tensor({shape.batch, shape.seq}, shape.dtype)};
}

//===----------------------------------------------------------------------===//
// synthetic
//===----------------------------------------------------------------------===//

/// Each token has kSuccessors distinct successors with fixed, skewed
/// probabilities: the chain's entropy (about 1.1 nats) is the loss a perfect
/// model reaches, far below ln(vocab) where an untrained one starts.
class SyntheticSource : public DataSource {
public:
  static constexpr int kSuccessors = 4;
  static constexpr std::array<double, kSuccessors> kProbability{0.55, 0.25, 0.12, 0.08};

  SyntheticSource(const BatchShape &shape, uint64_t seed) : shape(shape), seed(seed) {
    int k = int(std::min<int64_t>(kSuccessors, shape.vocab));
    successors.assign(size_t(shape.vocab) * kSuccessors, 0);
    uint64_t key = keyOf(seed, kChain);
    uint64_t counter = 0;
    for (int64_t t = 0; t < shape.vocab; ++t) {
      int64_t *next = &successors[size_t(t) * kSuccessors];
      for (int j = 0; j < kSuccessors; ++j) {
        if (j >= k) { // a vocabulary smaller than kSuccessors repeats the last
          next[j] = next[k - 1];
          continue;
        }
        int64_t candidate;
        do {
          candidate = draw(key, counter++, shape.vocab);
        } while (std::find(next, next + j, candidate) != next + j);
        next[j] = candidate;
      }
    }
  }

  llvm::Expected<Batch> batch(int64_t step) override {
    Batch b = emptyBatch(shape);
    for (int64_t row = 0; row < shape.batch; ++row) {
      uint64_t key = keyOf(seed, kWalk, uint64_t(step), uint64_t(row));
      int64_t token = draw(key, 0, shape.vocab);
      for (int64_t i = 0; i <= shape.seq; ++i) {
        if (i < shape.seq) b.tokens.data[size_t(row * shape.seq + i)] = double(token);
        if (i > 0) b.targets.data[size_t(row * shape.seq + i - 1)] = double(token);
        token = successor(token, EvalContext::philoxUniform(key, uint64_t(i) + 1));
      }
    }
    return b;
  }

  std::string describe() const override {
    return "synthetic Markov chain over " + std::to_string(shape.vocab) + " tokens, " +
           std::to_string(kSuccessors) + " successors each";
  }

private:
  static int64_t draw(uint64_t key, uint64_t counter, int64_t n) {
    return std::min<int64_t>(int64_t(EvalContext::philoxUniform(key, counter) * double(n)), n - 1);
  }

  int64_t successor(int64_t token, double u) const {
    const int64_t *next = &successors[size_t(token) * kSuccessors];
    for (int j = 0; j < kSuccessors - 1; ++j) {
      if (u < kProbability[j]) return next[j];
      u -= kProbability[j];
    }
    return next[kSuccessors - 1];
  }

  BatchShape shape;
  uint64_t seed;
  std::vector<int64_t> successors; // [vocab, kSuccessors]
};

//===----------------------------------------------------------------------===//
// text and token files
//===----------------------------------------------------------------------===//

/// A file of fixed-width little-endian tokens (1 byte for text), read as
/// windows of seq + 1 tokens at seeded random offsets.
class FileSource : public DataSource {
public:
  static llvm::Expected<std::unique_ptr<DataSource>> open(const DataSpec &spec, const BatchShape &shape,
                                                         uint64_t seed) {
    bool text = spec.kind == DataSpec::Kind::Text;
    unsigned width = text ? 1 : byteSize(spec.tokenDType);
    std::string what = std::string(text ? "text" : "token") + " data file '" + spec.path + "'";
    auto buffer = llvm::MemoryBuffer::getFile(spec.path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    if (!buffer) return makeError("cannot read " + what + ": " + buffer.getError().message());
    uint64_t size = (*buffer)->getBufferSize();
    if (size % width != 0)
      return makeError(what + " is " + std::to_string(size) + " bytes, not a whole number of " +
                   spelling(spec.tokenDType) + " tokens (truncated?)");
    uint64_t tokens = size / width;
    if (tokens < uint64_t(shape.seq) + 1)
      return makeError(what + " has " + std::to_string(tokens) + " tokens; a sequence of " + std::to_string(shape.seq) +
                   " with its shifted targets needs at least " + std::to_string(shape.seq + 1));
    auto source = std::unique_ptr<FileSource>(new FileSource(shape, seed));
    source->buffer = std::move(*buffer);
    source->width = width;
    source->tokens = tokens;
    source->what = what;
    source->description = (text ? "bytes of '" : "tokens (" + std::string(spelling(spec.tokenDType)) + ") of '") +
                          spec.path + "', " + std::to_string(tokens) + " tokens";
    return std::unique_ptr<DataSource>(std::move(source));
  }

  llvm::Expected<Batch> batch(int64_t step) override {
    Batch b = emptyBatch(shape);
    uint64_t windows = tokens - uint64_t(shape.seq); // nanoGPT: randint(len(data) - block_size)
    for (int64_t row = 0; row < shape.batch; ++row) {
      double u = EvalContext::philoxUniform(keyOf(seed, kOffset, uint64_t(step), uint64_t(row)), 0);
      uint64_t start = std::min<uint64_t>(uint64_t(u * double(windows)), windows - 1);
      for (int64_t i = 0; i <= shape.seq; ++i) {
        auto token = tokenAt(start + uint64_t(i));
        if (!token) return token.takeError();
        if (i < shape.seq) b.tokens.data[size_t(row * shape.seq + i)] = double(*token);
        if (i > 0) b.targets.data[size_t(row * shape.seq + i - 1)] = double(*token);
      }
    }
    return b;
  }

  std::string describe() const override { return description; }

private:
  FileSource(const BatchShape &shape, uint64_t seed) : shape(shape), seed(seed) {}

  llvm::Expected<uint64_t> tokenAt(uint64_t index) const {
    const auto *p = reinterpret_cast<const unsigned char *>(buffer->getBufferStart()) + index * width;
    uint64_t v = 0;
    for (unsigned i = 0; i < width; ++i) v |= uint64_t(p[i]) << (8 * i);
    if (v >= uint64_t(shape.vocab))
      return makeError(what + ": token " + std::to_string(v) + " at position " + std::to_string(index) +
                   " is outside the model's vocabulary of " + std::to_string(shape.vocab));
    return v;
  }

  BatchShape shape;
  uint64_t seed;
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  unsigned width = 1;
  uint64_t tokens = 0;
  std::string what, description;
};

} // namespace

//===----------------------------------------------------------------------===//
// The model's inputs
//===----------------------------------------------------------------------===//

llvm::Expected<BatchShape> runtime::batchShapeOf(const Module &m) {
  const char *needed = "the training data fills 'input tokens : i32[batch, seq]' and 'input targets : i32[batch, seq]'";
  const Value *tokens = nullptr, *targets = nullptr;
  for (const Value *v : m.inputs) {
    if (v->name == "tokens") tokens = v;
    else if (v->name == "targets") targets = v;
    else return makeError(std::string(needed) + "; model '" + m.name + "' has another input, '" + v->name + "'");
  }
  if (!tokens || !targets)
    return makeError(std::string(needed) + "; model '" + m.name + "' has no input '" + (tokens ? "targets" : "tokens") +
                 "'");
  for (const Value *v : {tokens, targets})
    if (v->type.rank() != 2 || !isInteger(v->type.dtype))
      return makeError(std::string(needed) + "; input '" + v->name + "' of model '" + m.name + "' is " +
                   toString(v->type));
  if (tokens->type.shape != targets->type.shape || tokens->type.dtype != targets->type.dtype)
    return makeError(std::string(needed) + "; model '" + m.name + "' has tokens " + toString(tokens->type) +
                 " but targets " + toString(targets->type));
  BatchShape shape;
  shape.batch = tokens->type.shape[0];
  shape.seq = tokens->type.shape[1];
  shape.dtype = tokens->type.dtype;
  shape.vocab = 0;
  for (const auto &op : m.ops)
    if (op->kind == OpKind::Gather && op->operands.size() == 2 && op->operands[1] == tokens)
      shape.vocab = std::max(shape.vocab, op->operands[0]->type.shape.empty() ? 0 : op->operands[0]->type.shape[0]);
  if (shape.vocab <= 0)
    return makeError("cannot tell the vocabulary of model '" + m.name + "': no embedding lookup reads its 'tokens'");
  return shape;
}

llvm::Expected<std::unique_ptr<DataSource>> runtime::openDataSource(const DataSpec &spec, const BatchShape &shape,
                                                                   uint64_t seed) {
  if (spec.kind == DataSpec::Kind::Synthetic) return std::make_unique<SyntheticSource>(shape, seed);
  return FileSource::open(spec, shape, seed);
}
