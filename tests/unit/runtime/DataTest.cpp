//===- tests/unit/runtime/DataTest.cpp - the training data sources ----------------===//
//
// Batches are next-token pairs of the model's shape, the same for the same
// seed and step whatever the order of calls; the synthetic chain is learnable
// (few successors per token); file sources read nanoGPT's layout, and every
// bad file is an error naming it.
//
//===----------------------------------------------------------------------===//

#include "runtime/Data.h"
#include "runtime/ElementBits.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

using namespace planc;
using namespace planc::runtime;

namespace {

const BatchShape kShape{/*batch=*/3, /*seq=*/8, /*vocab=*/50, ElementType::I32};

std::unique_ptr<DataSource> open(const DataSpec &spec, const BatchShape &shape = kShape, uint64_t seed = 7) {
  auto source = openDataSource(spec, shape, seed);
  EXPECT_TRUE(source.ok()) << source.error();
  return source.ok() ? std::move(*source) : nullptr;
}

std::string openError(const DataSpec &spec, const BatchShape &shape = kShape) {
  auto source = openDataSource(spec, shape, 7);
  return source.ok() ? "" : source.error();
}

/// A batch's tokens and targets as values.
struct Values {
  std::vector<double> tokens, targets;
};

std::vector<double> valuesOf(const HostTensor &t) {
  std::vector<double> v(size_t(t.numel()));
  EXPECT_EQ(t.bytes.size(), t.byteSize());
  decodeBuffer(t.type, t.bytes.data(), v.size(), v.data());
  return v;
}

Values batchOf(DataSource &s, int64_t step, const BatchShape &shape = kShape) {
  auto b = s.batch(step);
  EXPECT_TRUE(b.ok()) << b.error();
  if (!b.ok()) return {};
  EXPECT_EQ(b->tokens.shape, (std::vector<int64_t>{shape.batch, shape.seq}));
  EXPECT_EQ(b->targets.shape, (std::vector<int64_t>{shape.batch, shape.seq}));
  EXPECT_EQ(b->tokens.type, shape.type);
  EXPECT_EQ(b->targets.type, shape.type);
  return {valuesOf(b->tokens), valuesOf(b->targets)};
}

/// targets[r][i] == tokens[r][i + 1]: the pairs are one sequence shifted by one.
void expectShifted(const Values &b, const BatchShape &shape) {
  ASSERT_EQ(b.tokens.size(), size_t(shape.batch * shape.seq));
  ASSERT_EQ(b.targets.size(), size_t(shape.batch * shape.seq));
  for (int64_t r = 0; r < shape.batch; ++r)
    for (int64_t i = 0; i + 1 < shape.seq; ++i)
      EXPECT_EQ(b.targets[size_t(r * shape.seq + i)], b.tokens[size_t(r * shape.seq + i + 1)]);
  for (double t : b.tokens) EXPECT_TRUE(t >= 0 && t < double(shape.vocab) && t == int64_t(t));
  for (double t : b.targets) EXPECT_TRUE(t >= 0 && t < double(shape.vocab) && t == int64_t(t));
}

class TempDir {
public:
  TempDir() {
    std::mt19937_64 random{std::random_device{}()};
    path = (std::filesystem::temp_directory_path() / ("data-test-" + std::to_string(random()))).string();
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string &name, const std::string &bytes) const {
    std::string p = path + "/" + name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  std::string path;
};

std::string u16s(const std::vector<uint16_t> &v) {
  std::string s;
  for (uint16_t x : v) s += {char(x & 0xff), char(x >> 8)};
  return s;
}

TEST(DataTest, SyntheticBatchesAreShiftedDeterministicAndVaried) {
  auto s = open(DataSpec{});
  ASSERT_TRUE(s);
  Values b3 = batchOf(*s, 3);
  expectShifted(b3, kShape);
  Values b0 = batchOf(*s, 0);
  EXPECT_EQ(batchOf(*s, 3).tokens, b3.tokens) << "the same step again";
  EXPECT_NE(b0.tokens, b3.tokens) << "another step";
  auto again = open(DataSpec{});
  EXPECT_EQ(batchOf(*again, 3).targets, b3.targets) << "another source, same seed";
  auto other = open(DataSpec{}, kShape, 8);
  EXPECT_NE(batchOf(*other, 3).tokens, b3.tokens) << "another seed";
}

TEST(DataTest, SyntheticChainHasFewSuccessorsPerToken) {
  BatchShape shape{16, 64, 256, ElementType::I32};
  auto s = open(DataSpec{}, shape);
  ASSERT_TRUE(s);
  std::map<int64_t, std::set<int64_t>> next;
  std::set<int64_t> seen;
  for (int64_t step = 0; step < 20; ++step) {
    Values b = batchOf(*s, step, shape);
    expectShifted(b, shape);
    for (size_t i = 0; i < b.tokens.size(); ++i) {
      next[int64_t(b.tokens[i])].insert(int64_t(b.targets[i]));
      seen.insert(int64_t(b.tokens[i]));
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
  auto s = open(DataSpec{DataSpec::Kind::Tokens, path, ElementType::U16});
  ASSERT_TRUE(s);
  EXPECT_NE(s->describe().find("40 tokens"), std::string::npos) << s->describe();
  Values b = batchOf(*s, 5);
  expectShifted(b, kShape);
  for (int64_t r = 0; r < kShape.batch; ++r) { // consecutive tokens of the file
    double start = b.tokens[size_t(r * kShape.seq)];
    for (int64_t i = 0; i < kShape.seq; ++i) EXPECT_EQ(b.tokens[size_t(r * kShape.seq + i)], start + double(i));
    EXPECT_EQ(b.targets[size_t(r * kShape.seq + kShape.seq - 1)], start + double(kShape.seq));
  }
  EXPECT_EQ(batchOf(*s, 5).tokens, b.tokens);

  // u32, and exactly seq + 1 tokens: the only window.
  std::string wide;
  for (uint32_t i = 0; i < 9; ++i) wide += {char(i + 1), 0, 0, 0};
  auto w = open(DataSpec{DataSpec::Kind::Tokens, dir.file("wide.bin", wide), ElementType::U32});
  ASSERT_TRUE(w);
  Values bw = batchOf(*w, 0);
  EXPECT_EQ(bw.tokens[0], 1);
  EXPECT_EQ(bw.targets[7], 9);
}

TEST(DataTest, TextBytesAreTheTokens) {
  TempDir dir;
  BatchShape shape{2, 4, 256, ElementType::I32};
  auto s = open(DataSpec{DataSpec::Kind::Text, dir.file("input.txt", "hello, world"), ElementType::U8}, shape);
  ASSERT_TRUE(s);
  Values b = batchOf(*s, 0, shape);
  expectShifted(b, shape);
  std::string text = "hello, world";
  for (double t : b.tokens) EXPECT_NE(text.find(char(int(t))), std::string::npos);
}

TEST(DataTest, BadFilesAreErrorsNamingTheFile) {
  TempDir dir;
  std::string missing = dir.path + "/absent.bin";
  std::string msg = openError(DataSpec{DataSpec::Kind::Tokens, missing, ElementType::U16});
  EXPECT_NE(msg.find("cannot read token data file '" + missing + "': No such file"), std::string::npos) << msg;

  std::string odd = dir.file("odd.bin", u16s({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) + "x");
  msg = openError(DataSpec{DataSpec::Kind::Tokens, odd, ElementType::U16});
  EXPECT_NE(msg.find("'" + odd + "' is 21 bytes, not a whole number of u16 tokens (truncated?)"), std::string::npos)
      << msg;

  std::string small = dir.file("small.bin", u16s({1, 2, 3}));
  msg = openError(DataSpec{DataSpec::Kind::Tokens, small, ElementType::U16});
  EXPECT_NE(msg.find("'" + small + "' has 3 tokens; a sequence of 8 with its shifted targets needs at least 9"),
            std::string::npos)
      << msg;

  std::string empty = dir.file("empty.txt", "");
  msg = openError(DataSpec{DataSpec::Kind::Text, empty, ElementType::U8});
  EXPECT_NE(msg.find("text data file '" + empty + "' has 0 tokens"), std::string::npos) << msg;

  msg = openError(DataSpec{DataSpec::Kind::Text, dir.path, ElementType::U8});
  EXPECT_NE(msg.find("text data file '" + dir.path + "' is not a regular file (a folder)"), std::string::npos) << msg;

  // A token the model's vocabulary (50) does not have.
  std::string big = dir.file("big.bin", u16s({1, 2, 3, 4, 5, 6, 7, 8, 900}));
  auto s = open(DataSpec{DataSpec::Kind::Tokens, big, ElementType::U16});
  ASSERT_TRUE(s);
  auto b = s->batch(0);
  ASSERT_FALSE(b.ok());
  msg = b.error();
  EXPECT_NE(msg.find("'" + big + "': token 900 at position 8 is outside the model's vocabulary of 50"),
            std::string::npos)
      << msg;
}

TEST(DataTest, FilesPastTheirLimitsAreRefusedBeforeReading) {
  // A device would be read without end: refused by its kind, not its size.
  std::string msg = openError(DataSpec{DataSpec::Kind::Text, "/dev/zero", ElementType::U8});
  EXPECT_NE(msg.find("text data file '/dev/zero' is not a regular file (a character device); only regular files are read"),
            std::string::npos)
      << msg;
  // A regular file larger than the source's limit (64 GiB by default; small
  // here) is refused with its size and the limit; one at the limit is read.
  TempDir dir;
  std::string tokens = u16s({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  std::string path = dir.file("tokens.bin", tokens);
  DataSpec spec{DataSpec::Kind::Tokens, path, ElementType::U16};
  spec.maxFileBytes = tokens.size() - 2;
  msg = openError(spec);
  EXPECT_NE(msg.find("token data file '" + path + "' is 24 bytes, more than the limit of 22 bytes (the file is read into memory whole)"),
            std::string::npos)
      << msg;
  spec.maxFileBytes = tokens.size();
  EXPECT_TRUE(open(spec));
  EXPECT_EQ(DataSpec{}.maxFileBytes, uint64_t(64) << 30);
}

TEST(DataTest, BatchesAreTheInputsElementType) {
  // i64 inputs: the same tokens as i32 ones, eight bytes each.
  BatchShape wide = kShape;
  wide.type = ElementType::I64;
  auto s32 = open(DataSpec{}), s64 = open(DataSpec{}, wide);
  ASSERT_TRUE(s32 && s64);
  auto b = s64->batch(2);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->tokens.bytes.size(), size_t(kShape.batch * kShape.seq * 8));
  EXPECT_EQ(batchOf(*s64, 2, wide).tokens, batchOf(*s32, 2).tokens);
  // Little-endian bytes: the first token's low byte leads.
  double first = batchOf(*s32, 2).tokens[0];
  EXPECT_EQ(b->tokens.bytes[0], uint8_t(int64_t(first) & 0xff));
  EXPECT_EQ(b->tokens.bytes[7], 0);
}

TEST(DataTest, ShapesNoBatchCanHaveAreErrors) {
  BatchShape s = kShape;
  s.type = ElementType::F32;
  EXPECT_EQ(openError(DataSpec{}, s), "the training data: tokens are integers; inputs of type f32 cannot hold them");
  s = kShape;
  s.type = ElementType::U8;
  s.vocab = 300;
  EXPECT_EQ(openError(DataSpec{}, s), "the training data: token 299 of the vocabulary does not fit inputs of type u8");
  s = kShape;
  s.vocab = 0;
  EXPECT_EQ(openError(DataSpec{}, s), "the training data: a vocabulary needs at least one token, not 0");
  s = kShape;
  s.seq = 0;
  EXPECT_EQ(openError(DataSpec{}, s), "the training data: a batch needs at least one row and one position, not [3, 0]");
  TempDir dir;
  std::string path = dir.file("t.bin", u16s({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(openError(DataSpec{DataSpec::Kind::Tokens, path, ElementType::I64}),
            "token data file '" + path + "' is read as u16 or u32 tokens, not i64");
}

} // namespace
