//===- tests/unit/runtime/Crc32cTest.cpp - the checkpoints' checksum -------===//
//
// The CRC-32C of the standard check string, of zeros, and of random buffers
// of every length against a bit-at-a-time reference (the hardware path and
// the table path must both agree with it), continuation over pieces, and the
// hex text checkpoints record.
//
//===----------------------------------------------------------------------===//

#include "runtime/Crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using namespace planc::runtime;

namespace {

/// The definition, one bit at a time.
uint32_t reference(const std::vector<uint8_t> &bytes) {
  uint32_t crc = ~0u;
  for (uint8_t b : bytes) {
    crc ^= b;
    for (int i = 0; i < 8; ++i) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
  }
  return ~crc;
}

TEST(Crc32cTest, KnownValues) {
  EXPECT_EQ(crc32c("123456789"), 0xe3069283u); // the catalogue's check value
  EXPECT_EQ(crc32c(""), 0u);
  std::vector<uint8_t> zeros(32, 0);
  EXPECT_EQ(crc32c(0, zeros.data(), zeros.size()), 0x8a9136aau); // RFC 3720, B.4
}

TEST(Crc32cTest, MatchesTheDefinitionAtEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  std::vector<uint8_t> buffer(300);
  for (uint8_t &b : buffer) b = uint8_t(rng());
  for (size_t offset = 0; offset < 9; ++offset)
    for (size_t n = 0; offset + n <= buffer.size(); n += 7) {
      std::vector<uint8_t> piece(buffer.begin() + long(offset), buffer.begin() + long(offset + n));
      ASSERT_EQ(crc32c(0, buffer.data() + offset, n), reference(piece)) << offset << " " << n;
    }
}

TEST(Crc32cTest, ContinuesOverPieces) {
  const std::string text = "a checkpoint's bytes, in two pieces of any split";
  for (size_t split = 0; split <= text.size(); ++split)
    EXPECT_EQ(crc32c(crc32c(0, text.data(), split), text.data() + split, text.size() - split), crc32c(text));
}

TEST(Crc32cTest, OneFlippedBitChangesIt) {
  std::vector<uint8_t> bytes(4096, 0x5a);
  const uint32_t base = crc32c(0, bytes.data(), bytes.size());
  for (size_t i = 0; i < bytes.size(); i += 61)
    for (int bit = 0; bit < 8; ++bit) {
      bytes[i] ^= uint8_t(1 << bit);
      EXPECT_NE(crc32c(0, bytes.data(), bytes.size()), base);
      bytes[i] ^= uint8_t(1 << bit);
    }
}

TEST(Crc32cTest, Text) {
  EXPECT_EQ(crc32cText(0xe3069283u), "e3069283");
  EXPECT_EQ(crc32cText(0xau), "0000000a");
  EXPECT_EQ(parseCrc32cText("e3069283"), 0xe3069283u);
  EXPECT_FALSE(parseCrc32cText("E3069283")); // as written: lower case
  EXPECT_FALSE(parseCrc32cText("e306928"));
  EXPECT_FALSE(parseCrc32cText("e3069283 "));
  EXPECT_FALSE(parseCrc32cText("-3069283"));
}

} // namespace
