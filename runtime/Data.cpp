//===- runtime/Data.cpp - synthetic, text and token-file batches ---------===//

#include "runtime/Data.h"
#include "runtime/ElementBits.h"
#include "runtime/Philox.h"
#include "runtime/ReadFile.h"
#include "runtime/Plural.h"

#include <algorithm>
#include <array>
#include <vector>

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

/// Token ids as they are drawn, turned into the inputs' bytes at the end.
struct TokenRows {
  explicit TokenRows(const BatchShape &shape)
      : shape(shape), tokens(size_t(shape.batch * shape.seq)), targets(size_t(shape.batch * shape.seq)) {}

  /// Position `i` (0 ..= seq) of row `row`'s window: the tokens are
  /// positions 0 ..< seq, the targets 1 ..= seq.
  void set(int64_t row, int64_t i, uint64_t token) {
    if (i < shape.seq) tokens[size_t(row * shape.seq + i)] = double(token);
    if (i > 0) targets[size_t(row * shape.seq + i - 1)] = double(token);
  }

  Batch encode() const {
    Batch b{HostTensor::zeros(shape.type, {shape.batch, shape.seq}), HostTensor::zeros(shape.type, {shape.batch, shape.seq})};
    encodeBuffer(shape.type, tokens.data(), tokens.size(), b.tokens.bytes.data());
    encodeBuffer(shape.type, targets.data(), targets.size(), b.targets.bytes.data());
    return b;
  }

  BatchShape shape;
  std::vector<double> tokens, targets;
};

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

  Result<Batch> batch(int64_t step) override {
    TokenRows rows(shape);
    for (int64_t row = 0; row < shape.batch; ++row) {
      uint64_t key = keyOf(seed, kWalk, uint64_t(step), uint64_t(row));
      int64_t token = draw(key, 0, shape.vocab);
      for (int64_t i = 0; i <= shape.seq; ++i) {
        rows.set(row, i, uint64_t(token));
        token = successor(token, philoxUniform(key, uint64_t(i) + 1));
      }
    }
    return rows.encode();
  }

  std::string describe() const override {
    return "synthetic Markov chain over " + std::to_string(shape.vocab) + " tokens, " +
           std::to_string(kSuccessors) + " successors each";
  }

private:
  static int64_t draw(uint64_t key, uint64_t counter, int64_t n) {
    return std::min<int64_t>(int64_t(philoxUniform(key, counter) * double(n)), n - 1);
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
  static Result<std::unique_ptr<DataSource>> open(const DataSpec &spec, const BatchShape &shape, uint64_t seed) {
    bool text = spec.kind == DataSpec::Kind::Text;
    if (!text && spec.tokenDType != ElementType::U16 && spec.tokenDType != ElementType::U32)
      return errorStatus("token data file '" + spec.path + "' is read as u16 or u32 tokens, not " +
                         spelling(spec.tokenDType));
    unsigned width = text ? 1 : byteSize(spec.tokenDType);
    std::string what = std::string(text ? "text" : "token") + " data file '" + spec.path + "'";
    Result<std::string> bytes = readRegularFile(spec.path, what, spec.maxFileBytes);
    if (!bytes.ok()) return bytes.status();
    uint64_t size = bytes->size();
    if (size % width != 0)
      return errorStatus(what + " is " + counted(int64_t(size), "byte") + ", not a whole number of " +
                         spelling(spec.tokenDType) + " tokens (truncated?)");
    uint64_t tokens = size / width;
    if (tokens < uint64_t(shape.seq) + 1)
      return errorStatus(what + " has " + counted(int64_t(tokens), "token") + "; a sequence of " +
                         std::to_string(shape.seq) + " with its shifted targets needs at least " +
                         std::to_string(shape.seq + 1));
    auto source = std::unique_ptr<FileSource>(new FileSource(shape, seed));
    source->bytes = std::move(*bytes);
    source->width = width;
    source->tokens = tokens;
    source->what = what;
    source->description = (text ? "bytes of '" : "tokens (" + std::string(spelling(spec.tokenDType)) + ") of '") +
                          spec.path + "', " + std::to_string(tokens) + " tokens";
    return std::unique_ptr<DataSource>(std::move(source));
  }

  Result<Batch> batch(int64_t step) override {
    TokenRows rows(shape);
    uint64_t windows = tokens - uint64_t(shape.seq); // nanoGPT: randint(len(data) - block_size)
    for (int64_t row = 0; row < shape.batch; ++row) {
      double u = philoxUniform(keyOf(seed, kOffset, uint64_t(step), uint64_t(row)), 0);
      uint64_t start = std::min<uint64_t>(uint64_t(u * double(windows)), windows - 1);
      for (int64_t i = 0; i <= shape.seq; ++i) {
        Result<uint64_t> token = tokenAt(start + uint64_t(i));
        if (!token.ok()) return token.status();
        rows.set(row, i, *token);
      }
    }
    return rows.encode();
  }

  std::string describe() const override { return description; }

private:
  FileSource(const BatchShape &shape, uint64_t seed) : shape(shape), seed(seed) {}

  Result<uint64_t> tokenAt(uint64_t index) const {
    const auto *p = reinterpret_cast<const unsigned char *>(bytes.data()) + index * width;
    uint64_t v = 0;
    for (unsigned i = 0; i < width; ++i) v |= uint64_t(p[i]) << (8 * i);
    if (v >= uint64_t(shape.vocab))
      return errorStatus(what + ": token " + std::to_string(v) + " at position " + std::to_string(index) +
                         " is outside the model's vocabulary of " + std::to_string(shape.vocab));
    return v;
  }

  BatchShape shape;
  uint64_t seed;
  std::string bytes;
  unsigned width = 1;
  uint64_t tokens = 0;
  std::string what, description;
};

/// "" or what makes `shape` one no batch can have.
std::string checkShape(const BatchShape &shape) {
  if (shape.batch < 1 || shape.seq < 1)
    return "a batch needs at least one row and one position, not [" + std::to_string(shape.batch) + ", " +
           std::to_string(shape.seq) + "]";
  if (shape.vocab < 1) return "a vocabulary needs at least one token, not " + std::to_string(shape.vocab);
  if (isFloat(shape.type) || shape.type == ElementType::Bool)
    return std::string("tokens are integers; inputs of type ") + spelling(shape.type) + " cannot hold them";
  double largest = double(shape.vocab - 1);
  if (roundToElement(shape.type, largest) != largest)
    return "token " + std::to_string(shape.vocab - 1) + " of the vocabulary does not fit inputs of type " +
           spelling(shape.type);
  return "";
}

} // namespace

Result<std::unique_ptr<DataSource>> planc::runtime::openDataSource(const DataSpec &spec, const BatchShape &shape,
                                                                   uint64_t seed) {
  if (std::string problem = checkShape(shape); !problem.empty()) return errorStatus("the training data: " + problem);
  if (spec.kind == DataSpec::Kind::Synthetic) return std::unique_ptr<DataSource>(new SyntheticSource(shape, seed));
  return FileSource::open(spec, shape, seed);
}
