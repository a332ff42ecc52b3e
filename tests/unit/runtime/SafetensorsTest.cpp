//===- tests/unit/runtime/SafetensorsTest.cpp - the safetensors reader and writer -===//
//
// The bytes are the format's (checked against a layout worked out by hand and
// against known bit patterns of every dtype), a file round-trips exactly, and
// every kind of truncated or corrupt file is an error that names the file,
// never a crash: every prefix of a valid file and every one-byte change of
// its header are tried.
//
//===----------------------------------------------------------------------===//

#include "runtime/AtomicFile.h"
#include "runtime/ElementBits.h"
#include "runtime/Safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <sstream>

using namespace planc;
using namespace planc::runtime;

namespace {

using DType = ElementType;
using Shape = std::vector<int64_t>;

/// A tensor of these values, encoded (so rounded) to `type`.
HostTensor tensor(Shape shape, DType type, std::vector<double> values) {
  HostTensor t = HostTensor::zeros(type, std::move(shape));
  EXPECT_EQ(size_t(t.numel()), values.size());
  encodeBuffer(type, values.data(), values.size(), t.bytes.data());
  return t;
}

std::vector<double> valuesOf(const HostTensor &t) {
  std::vector<double> v(size_t(t.numel()));
  decodeBuffer(t.type, t.bytes.data(), v.size(), v.data());
  return v;
}

std::string serialize(const HostTensorMap &tensors, const std::map<std::string, std::string> &metadata = {}) {
  std::ostringstream os;
  Status s = serializeSafetensors(os, tensors, metadata);
  EXPECT_TRUE(s.ok()) << s.message();
  return os.str();
}

double roundTo(DType t, double x) { return roundToElement(t, x); }

/// A file with this header text and data (the length prefix is computed).
std::string fileWith(const std::string &header, const std::string &data) {
  std::string bytes(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes[i] = char((n >> (8 * i)) & 0xff);
  return bytes + header + data;
}

/// The error parsing `bytes` gives (empty if it parsed).
std::string errorOf(const std::string &bytes) {
  auto parsed = parseSafetensors(bytes, "bad.safetensors");
  return parsed.ok() ? "" : parsed.error();
}

TEST(SafetensorsTest, LayoutIsTheFormats) {
  std::string bytes = serialize({{"x", tensor({2}, DType::F32, {1.0, 2.0})}});
  std::string header = R"({"x":{"data_offsets":[0,8],"dtype":"F32","shape":[2]}})";
  std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
  std::string data("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);
  EXPECT_EQ(bytes, fileWith(padded, data));
  EXPECT_EQ((bytes.size() - 8 - 8) % 8, 0u) << "data starts 8-aligned";
}

TEST(SafetensorsTest, KnownBitPatterns) {
  EXPECT_EQ(encodeElement(DType::F16, 1.0), 0x3C00u);
  EXPECT_EQ(encodeElement(DType::F16, -2.0), 0xC000u);
  EXPECT_EQ(encodeElement(DType::F16, 65504.0), 0x7BFFu);
  EXPECT_EQ(encodeElement(DType::F16, std::ldexp(1.0, -24)), 0x0001u) << "smallest subnormal";
  EXPECT_EQ(encodeElement(DType::F16, 1e6), 0x7C00u) << "overflow rounds to infinity";
  EXPECT_EQ(encodeElement(DType::BF16, 1.0), 0x3F80u);
  EXPECT_EQ(encodeElement(DType::BF16, -0.0), 0x8000u);
  EXPECT_EQ(encodeElement(DType::F8E4M3, 448.0), 0x7Eu);
  EXPECT_EQ(encodeElement(DType::F8E4M3, 1.0), 0x38u);
  EXPECT_EQ(encodeElement(DType::F8E4M3, std::ldexp(1.0, -9)), 0x01u);
  EXPECT_EQ(encodeElement(DType::F8E4M3, std::nan("")), 0x7Fu);
  EXPECT_EQ(encodeElement(DType::F8E5M2, 57344.0), 0x7Bu);
  EXPECT_EQ(encodeElement(DType::F8E5M2, -INFINITY), 0xFCu);
  EXPECT_EQ(encodeElement(DType::I32, -1.0), 0xFFFFFFFFu);
  EXPECT_EQ(encodeElement(DType::U16, 65535.0), 0xFFFFu);
  EXPECT_EQ(decodeElement(DType::F16, 0x3555), 0x1.554p-2);
  EXPECT_EQ(decodeElement(DType::I64, ~uint64_t(0)), -1.0);
  EXPECT_TRUE(std::isnan(decodeElement(DType::F8E4M3, 0xFF)));
  EXPECT_EQ(decodeElement(DType::F8E4M3, 0x78), 256.0) << "e4m3fn has no infinity";
}

TEST(SafetensorsTest, EveryCodeOfTheSmallFloatsRoundTrips) {
  for (DType d : {DType::F16, DType::BF16, DType::F8E4M3, DType::F8E5M2}) {
    uint64_t codes = uint64_t(1) << (8 * byteSize(d));
    for (uint64_t bits = 0; bits < codes; ++bits) {
      double v = decodeElement(d, bits);
      if (std::isnan(v)) continue; // NaN payloads are not kept
      ASSERT_EQ(encodeElement(d, v), bits) << spelling(d) << " code " << bits;
      ASSERT_EQ(roundTo(d, v), v) << spelling(d) << " code " << bits;
    }
  }
}

TEST(SafetensorsTest, RoundTripKeepsEveryDTypeAndTheMetadata) {
  struct Source {
    Shape shape;
    DType type;
    std::vector<double> values;
  };
  std::map<std::string, Source> sources = {
      {"f64", {{2, 2}, DType::F64, {1.0 / 3, -0.0, 1e-300, -std::numeric_limits<double>::infinity()}}},
      {"f32", {{3}, DType::F32, {0.1, -7.5, std::ldexp(1.0, -140)}}},
      {"bf16", {{2}, DType::BF16, {3.140625, -1e30}}},
      {"f16", {{2}, DType::F16, {0.5, std::ldexp(1.0, -20)}}},
      {"e4m3", {{2}, DType::F8E4M3, {-448, 0.0625}}},
      {"e5m2", {{1}, DType::F8E5M2, {-3.0}}},
      {"i32", {{3}, DType::I32, {-2147483648.0, 0, 2147483647.0}}},
      {"i64", {{1}, DType::I64, {-1e15}}},
      {"u8", {{2}, DType::U8, {0, 255}}},
      {"u16", {{1}, DType::U16, {65535}}},
      {"u32", {{1}, DType::U32, {4294967295.0}}},
      {"bool", {{2}, DType::Bool, {1, 0}}},
      {"scalar", {{}, DType::F32, {42}}},
      {"empty", {{0, 5}, DType::F32, {}}},
  };
  HostTensorMap in;
  for (const auto &[name, src] : sources) in[name] = tensor(src.shape, src.type, src.values);
  std::map<std::string, std::string> meta = {{"format", "pt"}, {"step", "3"}};
  auto out = parseSafetensors(serialize(in, meta), "mem");
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out->metadata, meta);
  ASSERT_EQ(out->tensors.size(), in.size());
  for (const auto &[name, src] : sources) {
    const HostTensor &u = out->tensors.at(name);
    EXPECT_EQ(u.shape, src.shape) << name;
    EXPECT_EQ(u.type, src.type) << name;
    EXPECT_EQ(u.bytes, in.at(name).bytes) << name << ": the file's bytes are the tensor's";
    std::vector<double> got = valuesOf(u);
    ASSERT_EQ(got.size(), src.values.size()) << name;
    for (size_t i = 0; i < got.size(); ++i) {
      double expect = roundTo(src.type, src.values[i]);
      EXPECT_TRUE(got[i] == expect && std::signbit(got[i]) == std::signbit(expect))
          << name << "[" << i << "] " << got[i] << " vs " << expect;
    }
  }
}

TEST(SafetensorsTest, ATensorWhoseBytesAreNotItsShapesIsAnError) {
  HostTensor t{DType::F32, {2, 3}, std::vector<uint8_t>(20)};
  std::ostringstream os;
  Status s = serializeSafetensors(os, {{"w", t}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "tensor 'w' holds 20 bytes, but f32[2, 3] takes 24");
  EXPECT_EQ(os.str(), "") << "nothing is written";
}

TEST(SafetensorsTest, FileRoundTripIsAtomic) {
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("safetensors-test-" + std::to_string(std::random_device{}()))).string();
  std::filesystem::create_directories(dir);
  std::string path = dir + "/w.safetensors";
  HostTensorMap in = {{"w", tensor({2, 3}, DType::F64, {1, 2, 3, 4, 5, 6})}};
  ASSERT_TRUE(writeSafetensors(path, in).ok());
  auto out = readSafetensors(path);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(valuesOf(out->tensors.at("w")), (std::vector<double>{1, 2, 3, 4, 5, 6}));

  // Overwriting replaces the file whole; no temporary is left beside it.
  in["w"] = tensor({2, 3}, DType::F64, {7, 2, 3, 4, 5, 6});
  ASSERT_TRUE(writeSafetensors(path, in).ok());
  EXPECT_EQ(valuesOf(readSafetensors(path)->tensors.at("w"))[0], 7);
  int files = 0;
  for (const auto &entry : std::filesystem::directory_iterator(dir)) files += entry.is_regular_file();
  EXPECT_EQ(files, 1);

  // A write that fails passes its error on and leaves the old file.
  Status failed = writeFileAtomically(path, [](std::ostream &os) {
    os << "half a file";
    return errorStatus("stopped");
  });
  EXPECT_EQ(failed.message(), "stopped");
  EXPECT_EQ(valuesOf(readSafetensors(path)->tensors.at("w"))[0], 7);
  files = 0;
  for (const auto &entry : std::filesystem::directory_iterator(dir)) files += entry.is_regular_file();
  EXPECT_EQ(files, 1) << "the temporary file is removed";
  std::string missingDir = dir + "/no/such/dir/x.safetensors";
  std::string msg = writeSafetensors(missingDir, in).message();
  EXPECT_NE(msg.find("cannot write '" + missingDir + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file"), std::string::npos) << msg;

  // Contents in memory, written whole.
  ASSERT_TRUE(writeFileAtomically(dir + "/text", std::string_view("line\n")).ok());
  auto text = readSafetensors(dir + "/text");
  EXPECT_NE(text.error().find("is not a valid safetensors file: the file is 5 bytes"), std::string::npos)
      << text.error();

  std::string missing = dir + "/absent.safetensors";
  msg = readSafetensors(missing).error();
  EXPECT_EQ(msg, "cannot read '" + missing + "': No such file or directory");
  std::filesystem::remove_all(dir);
}

TEST(SafetensorsTest, CorruptFilesAreClearErrors) {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string eight(8, '\x01');
  struct Case {
    std::string bytes, message;
  } cases[] = {
      {"", "the file is 0 bytes, too short for the 8-byte header length"},
      {std::string("\x05\x00\x00", 3), "the file is 3 bytes"},
      {fileWith(ok, eight).substr(0, 20), "but the file has only 12 after the length (truncated?)"},
      {std::string("\xff\xff\xff\xff\xff\xff\xff\xff", 8) + "{}", "over the limit"},
      {fileWith("", ""), "the header is not a JSON object"},
      {fileWith("[1, 2]", ""), "the header is not a JSON object"},
      {fileWith("{\"a\": ", ""), "the header is not valid JSON"},
      {fileWith("{\"a\": \"\xff\"}", ""), "the header is not valid JSON"},
      {fileWith(R"({"a":3})", ""), "tensor 'a' is not an object"},
      {fileWith(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", eight), "tensor 'a' lacks 'dtype'"},
      {fileWith(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", eight), "tensor 'a' lacks 'shape'"},
      {fileWith(R"({"a":{"dtype":"F32","shape":[2]}})", eight), "tensor 'a' lacks 'data_offsets'"},
      {fileWith(R"({"a":{"dtype":"C64","shape":[2],"data_offsets":[0,8]}})", eight), "dtype 'C64'"},
      {fileWith(R"({"a":{"dtype":7,"shape":[2],"data_offsets":[0,8]}})", eight), "dtype that is not a string"},
      {fileWith(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight), "not a non-negative integer"},
      {fileWith(R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", eight), "not a non-negative integer"},
      {fileWith(R"({"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", eight), "shape that is not a list"},
      {fileWith(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", eight),
       "overflows"},
      {fileWith(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", eight), "not two non-negative integers"},
      {fileWith(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", eight), "end before they begin"},
      {fileWith(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight),
       "tensor 'a' is F32[3], 12 bytes, but its data_offsets span 8"},
      {fileWith(ok, eight.substr(0, 5)), "ends at byte 8 of the data, which has only 5 (truncated?)"},
      {fileWith(ok, eight + "xx"), "2 bytes after the last tensor's data"},
      {fileWith(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight), "bytes 0 to 4"},
      {fileWith(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                eight),
       "overlaps"},
      {fileWith(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                eight),
       "names 'a' twice"},
      {fileWith(R"({"__metadata__":{"k":1}})", ""), "'__metadata__' entry 'k' is not a string"},
      {fileWith(R"({"__metadata__":[]})", ""), "'__metadata__' is not an object"},
  };
  for (const Case &c : cases) {
    std::string msg = errorOf(c.bytes);
    EXPECT_NE(msg.find("'bad.safetensors' is not a valid safetensors file: "), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.message), std::string::npos) << "expected '" << c.message << "' in: " << msg;
  }
  // Nested objects may repeat the names of top-level ones.
  EXPECT_EQ(errorOf(fileWith(R"({"__metadata__":{"a":"x"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                             eight)),
            "");
}

TEST(SafetensorsTest, EveryPrefixAndEveryHeaderByteChangeIsHandled) {
  std::string good = serialize({{"a", tensor({2, 2}, DType::F32, {1, 2, 3, 4})},
                                {"b", tensor({3}, DType::I64, {5, 6, 7})}},
                               {{"k", "v"}});
  ASSERT_EQ(errorOf(good), "");
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_NE(errorOf(good.substr(0, n)), "") << "a prefix of " << n << " bytes parsed";
  size_t headerEnd = 8 + size_t(uint8_t(good[0]));
  for (size_t i = 0; i < headerEnd; ++i)
    for (int flip : {0x01, 0x20, 0x80}) {
      std::string bad = good;
      bad[i] = char(bad[i] ^ flip);
      (void)errorOf(bad); // may parse (a changed name) or not; it must not crash
    }
}

} // namespace
