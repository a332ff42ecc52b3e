//===- tests/unit/runtime/DataTest.cpp - the training data sources ----------------===//
//
// Batches are next-token pairs of the model's shape, the same for the same
// seed and step whatever the order of calls; the synthetic chain is learnable
// (few successors per token); file sources read nanoGPT's layout, and every
// bad file is an error naming it.
//
//===----------------------------------------------------------------------===//

#include "runtime/Data.h"

#include "ir/Builder.h"
#include "ir/IR.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

using namespace planc;
using namespace planc::ir;
using namespace planc::runtime;

namespace {

const BatchShape kShape{/*batch=*/3, /*seq=*/8, /*vocab=*/50, DType::I32};

std::unique_ptr<DataSource> open(const DataSpec &spec, const BatchShape &shape = kShape, uint64_t seed = 7) {
  auto source = openDataSource(spec, shape, seed);
  EXPECT_TRUE(bool(source)) << llvm::toString(source.takeError());
  return source ? std::move(*source) : nullptr;
}

std::string openError(const DataSpec &spec, const BatchShape &shape = kShape) {
  auto source = openDataSource(spec, shape, 7);
  return source ? "" : llvm::toString(source.takeError());
}

Batch batchOf(DataSource &s, int64_t step) {
  auto b = s.batch(step);
  EXPECT_TRUE(bool(b)) << llvm::toString(b.takeError());
  return b ? std::move(*b) : Batch{};
}

/// targets[r][i] == tokens[r][i + 1]: the pairs are one sequence shifted by one.
void expectShifted(const Batch &b, const BatchShape &shape) {
  ASSERT_EQ(b.tokens.shape, (Shape{shape.batch, shape.seq}));
  ASSERT_EQ(b.targets.shape, (Shape{shape.batch, shape.seq}));
  EXPECT_EQ(b.tokens.dtype, shape.dtype);
  for (int64_t r = 0; r < shape.batch; ++r)
    for (int64_t i = 0; i + 1 < shape.seq; ++i)
      EXPECT_EQ(b.targets.data[size_t(r * shape.seq + i)], b.tokens.data[size_t(r * shape.seq + i + 1)]);
  for (double t : b.tokens.data) EXPECT_TRUE(t >= 0 && t < double(shape.vocab) && t == int64_t(t));
  for (double t : b.targets.data) EXPECT_TRUE(t >= 0 && t < double(shape.vocab) && t == int64_t(t));
}

class TempDir {
public:
  TempDir() { EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("data-test", path)); }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
  std::string file(const std::string &name, const std::string &bytes) const {
    std::string p = (path + "/" + name).str();
    std::error_code ec;
    llvm::raw_fd_ostream os(p, ec);
    os << bytes;
    return p;
  }
  llvm::SmallString<128> path;
};

std::string u16s(const std::vector<uint16_t> &v) {
  std::string s;
  for (uint16_t x : v) s += {char(x & 0xff), char(x >> 8)};
  return s;
}

TEST(DataTest, SyntheticBatchesAreShiftedDeterministicAndVaried) {
  auto s = open(DataSpec{});
  ASSERT_TRUE(s);
  Batch b3 = batchOf(*s, 3);
  expectShifted(b3, kShape);
  Batch b0 = batchOf(*s, 0);
  EXPECT_EQ(batchOf(*s, 3).tokens.data, b3.tokens.data) << "the same step again";
  EXPECT_NE(b0.tokens.data, b3.tokens.data) << "another step";
  auto again = open(DataSpec{});
  EXPECT_EQ(batchOf(*again, 3).targets.data, b3.targets.data) << "another source, same seed";
  auto other = open(DataSpec{}, kShape, 8);
  EXPECT_NE(batchOf(*other, 3).tokens.data, b3.tokens.data) << "another seed";
}

TEST(DataTest, SyntheticChainHasFewSuccessorsPerToken) {
  BatchShape shape{16, 64, 256, DType::I32};
  auto s = open(DataSpec{}, shape);
  ASSERT_TRUE(s);
  std::map<int64_t, std::set<int64_t>> next;
  std::set<int64_t> seen;
  for (int64_t step = 0; step < 20; ++step) {
    Batch b = batchOf(*s, step);
    expectShifted(b, shape);
    for (size_t i = 0; i < b.tokens.data.size(); ++i) {
      next[int64_t(b.tokens.data[i])].insert(int64_t(b.targets.data[i]));
      seen.insert(int64_t(b.tokens.data[i]));
    }
  }
  size_t most = 0;
  for (const auto &entry : next) most = std::max(most, entry.second.size());
  EXPECT_LE(most, 4u) << "every token has at most 4 successors";
  EXPECT_GT(seen.size(), 64u) << "the walks visit much of the vocabulary";
}

TEST(DataTest, TokenFilesAreReadAsWindows) {
  TempDir dir;
  std::vector<uint16_t> tokens;
  for (int i = 0; i < 40; ++i) tokens.push_back(uint16_t(i));
  std::string path = dir.file("train.bin", u16s(tokens));
  auto s = open(DataSpec{DataSpec::Kind::Tokens, path, DType::U16});
  ASSERT_TRUE(s);
  EXPECT_NE(s->describe().find("40 tokens"), std::string::npos) << s->describe();
  Batch b = batchOf(*s, 5);
  expectShifted(b, kShape);
  for (int64_t r = 0; r < kShape.batch; ++r) { // consecutive tokens of the file
    double start = b.tokens.data[size_t(r * kShape.seq)];
    for (int64_t i = 0; i < kShape.seq; ++i) EXPECT_EQ(b.tokens.data[size_t(r * kShape.seq + i)], start + double(i));
    EXPECT_EQ(b.targets.data[size_t(r * kShape.seq + kShape.seq - 1)], start + double(kShape.seq));
  }
  EXPECT_EQ(batchOf(*s, 5).tokens.data, b.tokens.data);

  // u32, and exactly seq + 1 tokens: the only window.
  std::string wide;
  for (uint32_t i = 0; i < 9; ++i) wide += {char(i + 1), 0, 0, 0};
  auto w = open(DataSpec{DataSpec::Kind::Tokens, dir.file("wide.bin", wide), DType::U32});
  ASSERT_TRUE(w);
  Batch bw = batchOf(*w, 0);
  EXPECT_EQ(bw.tokens.data[0], 1);
  EXPECT_EQ(bw.targets.data[7], 9);
}

TEST(DataTest, TextBytesAreTheTokens) {
  TempDir dir;
  BatchShape shape{2, 4, 256, DType::I32};
  auto s = open(DataSpec{DataSpec::Kind::Text, dir.file("input.txt", "hello, world"), DType::U8}, shape);
  ASSERT_TRUE(s);
  Batch b = batchOf(*s, 0);
  expectShifted(b, shape);
  std::string text = "hello, world";
  for (double t : b.tokens.data) EXPECT_NE(text.find(char(int(t))), std::string::npos);
}

TEST(DataTest, BadFilesAreErrorsNamingTheFile) {
  TempDir dir;
  std::string missing = (dir.path + "/absent.bin").str();
  std::string msg = openError(DataSpec{DataSpec::Kind::Tokens, missing, DType::U16});
  EXPECT_NE(msg.find("cannot read token data file '" + missing + "': No such file"), std::string::npos) << msg;

  std::string odd = dir.file("odd.bin", u16s({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) + "x");
  msg = openError(DataSpec{DataSpec::Kind::Tokens, odd, DType::U16});
  EXPECT_NE(msg.find("'" + odd + "' is 21 bytes, not a whole number of u16 tokens (truncated?)"), std::string::npos)
      << msg;

  std::string small = dir.file("small.bin", u16s({1, 2, 3}));
  msg = openError(DataSpec{DataSpec::Kind::Tokens, small, DType::U16});
  EXPECT_NE(msg.find("'" + small + "' has 3 tokens; a sequence of 8 with its shifted targets needs at least 9"),
            std::string::npos)
      << msg;

  std::string empty = dir.file("empty.txt", "");
  msg = openError(DataSpec{DataSpec::Kind::Text, empty, DType::U8});
  EXPECT_NE(msg.find("text data file '" + empty + "' has 0 tokens"), std::string::npos) << msg;

  msg = openError(DataSpec{DataSpec::Kind::Text, dir.path.str().str(), DType::U8});
  EXPECT_NE(msg.find("cannot read text data file '" + dir.path.str().str() + "'"), std::string::npos) << msg;

  // A token the model's vocabulary (50) does not have.
  std::string big = dir.file("big.bin", u16s({1, 2, 3, 4, 5, 6, 7, 8, 900}));
  auto s = open(DataSpec{DataSpec::Kind::Tokens, big, DType::U16});
  ASSERT_TRUE(s);
  auto b = s->batch(0);
  ASSERT_FALSE(bool(b));
  msg = llvm::toString(b.takeError());
  EXPECT_NE(msg.find("'" + big + "': token 900 at position 8 is outside the model's vocabulary of 50"),
            std::string::npos)
      << msg;
}

TEST(DataTest, BatchShapeComesFromTheModelsInputs) {
  Module m;
  m.name = "lm";
  Value *table = m.addParam("wte", TensorType({50, 8}, DType::F32));
  Value *tokens = m.addInput("tokens", TensorType({3, 8}, DType::I32));
  m.addInput("targets", TensorType({3, 8}, DType::I32));
  m.append(OpKind::Gather, {table, tokens}, {TensorType({3, 8, 8}, DType::F32)});
  auto shape = batchShapeOf(m);
  ASSERT_TRUE(bool(shape)) << llvm::toString(shape.takeError());
  EXPECT_EQ(shape->batch, 3);
  EXPECT_EQ(shape->seq, 8);
  EXPECT_EQ(shape->vocab, 50);
  EXPECT_EQ(shape->dtype, DType::I32);

  Module other;
  other.name = "regress";
  other.addInput("x", TensorType({3, 8}, DType::F32));
  std::string msg = llvm::toString(batchShapeOf(other).takeError());
  EXPECT_NE(msg.find("the training data fills 'input tokens : i32[batch, seq]' and 'input targets : i32[batch, seq]'; "
                     "model 'regress' has another input, 'x'"),
            std::string::npos)
      << msg;

  Module ragged;
  ragged.name = "ragged";
  ragged.addInput("tokens", TensorType({3, 8}, DType::I32));
  ragged.addInput("targets", TensorType({3, 7}, DType::I32));
  msg = llvm::toString(batchShapeOf(ragged).takeError());
  EXPECT_NE(msg.find("model 'ragged' has tokens i32[3, 8] but targets i32[3, 7]"), std::string::npos) << msg;

  Module noTargets;
  noTargets.name = "half";
  noTargets.addInput("tokens", TensorType({3, 8}, DType::I32));
  msg = llvm::toString(batchShapeOf(noTargets).takeError());
  EXPECT_NE(msg.find("model 'half' has no input 'targets'"), std::string::npos) << msg;
}

} // namespace
