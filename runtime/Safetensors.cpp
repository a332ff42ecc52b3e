//===- runtime/Safetensors.cpp - the safetensors format -------------------===//
//
// The checks on reading follow the reference implementation: the header
// length fits the file and the limit, the header is a JSON object, each entry
// has a known dtype, a shape of non-negative integers and a byte range the
// size its shape and dtype say, and the ranges tile the data exactly (no
// gaps, no overlaps, nothing after the last).
//
//===----------------------------------------------------------------------===//

#include "runtime/Safetensors.h"
#include "runtime/AtomicFile.h"
#include "runtime/ElementBits.h"

#include "llvm/Support/MemoryBuffer.h"
#include "support/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

using namespace planc;
using namespace planc::ir;
using json = nlohmann::json;

namespace {

struct DTypeName {
  DType dtype;
  const char *name;
};

const DTypeName kDTypeNames[] = {
    {DType::F64, "F64"},         {DType::F32, "F32"},         {DType::BF16, "BF16"}, {DType::F16, "F16"},
    {DType::F8E4M3, "F8_E4M3"},  {DType::F8E5M2, "F8_E5M2"},  {DType::I32, "I32"},   {DType::I64, "I64"},
    {DType::U8, "U8"},           {DType::U16, "U16"},         {DType::U32, "U32"},   {DType::Bool, "BOOL"},
};

void writeLittleEndian(llvm::raw_ostream &os, uint64_t bits, unsigned bytes) {
  char buf[8];
  for (unsigned i = 0; i < bytes; ++i) buf[i] = char((bits >> (8 * i)) & 0xff);
  os.write(buf, bytes);
}

uint64_t readLittleEndian(const unsigned char *p, unsigned bytes) {
  uint64_t v = 0;
  for (unsigned i = 0; i < bytes; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

} // namespace

const char *runtime::safetensorsDTypeName(DType dtype) {
  for (const DTypeName &d : kDTypeNames)
    if (d.dtype == dtype) return d.name;
  return "?";
}

std::optional<DType> runtime::parseSafetensorsDType(llvm::StringRef name) {
  for (const DTypeName &d : kDTypeNames)
    if (name == d.name) return d.dtype;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

void runtime::serializeSafetensors(llvm::raw_ostream &os, const TensorMap &tensors,
                                   const std::map<std::string, std::string> &metadata) {
  json header = json::object();
  uint64_t offset = 0;
  for (const auto &[name, t] : tensors) {
    uint64_t bytes = uint64_t(t.numel()) * byteSize(t.dtype);
    header[name] = {{"dtype", safetensorsDTypeName(t.dtype)},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  // Spaces are JSON whitespace: padding the header keeps the data 8-aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  writeLittleEndian(os, text.size(), 8);
  os << text;
  for (const auto &entry : tensors) {
    const Tensor &t = entry.second;
    unsigned width = byteSize(t.dtype);
    for (double x : t.data) writeLittleEndian(os, runtime::encodeElement(t.dtype, x), width);
  }
}

llvm::Error runtime::writeSafetensors(llvm::StringRef path, const TensorMap &tensors,
                                      const std::map<std::string, std::string> &metadata) {
  return writeFileAtomically(path, [&](llvm::raw_ostream &os) {
    serializeSafetensors(os, tensors, metadata);
    return llvm::Error::success();
  });
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

/// One header entry, checked against the data before anything is decoded.
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

class Reader {
public:
  Reader(llvm::StringRef bytes, llvm::StringRef name) : bytes(bytes), name(name.str()) {}

  llvm::Expected<runtime::SafetensorsContents> read() {
    if (bytes.size() < 8)
      return bad("the file is " + std::to_string(bytes.size()) +
                 " bytes, too short for the 8-byte header length (truncated?)");
    uint64_t headerLength = readLittleEndian(reinterpret_cast<const unsigned char *>(bytes.data()), 8);
    if (headerLength > runtime::kMaxSafetensorsHeader)
      return bad("the header length " + std::to_string(headerLength) + " is over the limit of " +
                 std::to_string(runtime::kMaxSafetensorsHeader) + " bytes (corrupt?)");
    if (headerLength > bytes.size() - 8)
      return bad("the header is " + std::to_string(headerLength) + " bytes but the file has only " +
                 std::to_string(bytes.size() - 8) + " after the length (truncated?)");
    llvm::StringRef headerText = bytes.substr(8, headerLength);
    data = bytes.substr(8 + headerLength);
    if (headerText.ltrim(" \t\r\n").empty() || headerText.ltrim(" \t\r\n").front() != '{')
      return bad("the header is not a JSON object");

    json header;
    std::string duplicate;
    std::set<std::string> seen;
    // nlohmann keeps the last of duplicate keys silently; the format forbids them.
    auto noDuplicates = [&](int depth, json::parse_event_t event, json &parsed) {
      if (depth == 1 && event == json::parse_event_t::key && duplicate.empty() &&
          !seen.insert(parsed.get<std::string>()).second)
        duplicate = parsed.get<std::string>();
      return true;
    };
    try {
      header = json::parse(headerText.begin(), headerText.end(), noDuplicates);
    } catch (const json::exception &e) {
      return bad(std::string("the header is not valid JSON: ") + e.what());
    }
    if (!header.is_object()) return bad("the header is not a JSON object");
    if (!duplicate.empty()) return bad("the header names '" + duplicate + "' twice");

    runtime::SafetensorsContents out;
    std::vector<Entry> entries;
    for (auto it = header.begin(); it != header.end(); ++it) {
      if (it.key() == "__metadata__") {
        if (llvm::Error e = readMetadata(it.value(), out.metadata)) return e;
        continue;
      }
      auto entry = readEntry(it.key(), it.value());
      if (!entry) return entry.takeError();
      entries.push_back(std::move(*entry));
    }
    if (llvm::Error e = checkTiling(entries)) return e;
    for (const Entry &e : entries) out.tensors[e.name] = decode(e);
    return out;
  }

private:
  llvm::Error bad(const std::string &what) const {
    return makeError("'" + name + "' is not a valid safetensors file: " + what);
  }

  llvm::Error readMetadata(const json &value, std::map<std::string, std::string> &metadata) const {
    if (!value.is_object()) return bad("'__metadata__' is not an object of strings");
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (!it.value().is_string())
        return bad("'__metadata__' entry '" + it.key() + "' is not a string");
      metadata[it.key()] = it.value().get<std::string>();
    }
    return llvm::Error::success();
  }

  llvm::Expected<Entry> readEntry(const std::string &key, const json &value) const {
    std::string what = "tensor '" + key + "'";
    if (!value.is_object()) return bad(what + " is not an object with dtype, shape and data_offsets");
    auto field = [&](const char *f) -> const json * {
      auto it = value.find(f);
      return it == value.end() ? nullptr : &*it;
    };
    const json *dtype = field("dtype"), *shape = field("shape"), *offsets = field("data_offsets");
    if (!dtype || !shape || !offsets)
      return bad(what + " lacks '" + (!dtype ? "dtype" : !shape ? "shape" : "data_offsets") + "'");
    Entry e;
    e.name = key;
    if (!dtype->is_string()) return bad(what + " has a dtype that is not a string");
    auto parsed = runtime::parseSafetensorsDType(dtype->get<std::string>());
    if (!parsed) return bad(what + " has dtype '" + dtype->get<std::string>() + "', which planc does not read");
    e.dtype = *parsed;

    if (!shape->is_array()) return bad(what + " has a shape that is not a list");
    uint64_t numel = 1;
    bool overflow = false;
    for (const json &d : *shape) {
      if (!d.is_number_unsigned()) return bad(what + " has a shape entry that is not a non-negative integer");
      uint64_t dim = d.get<uint64_t>();
      if (dim > uint64_t(INT64_MAX)) return bad(what + " has a shape entry too large");
      overflow |= __builtin_mul_overflow(numel, dim, &numel);
      e.shape.push_back(int64_t(dim));
    }
    uint64_t expected = 0;
    overflow |= __builtin_mul_overflow(numel, uint64_t(byteSize(e.dtype)), &expected);
    if (overflow) return bad(what + " has a shape whose size overflows");

    if (!offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned())
      return bad(what + " has data_offsets that are not two non-negative integers");
    e.begin = (*offsets)[0].get<uint64_t>();
    e.end = (*offsets)[1].get<uint64_t>();
    if (e.begin > e.end) return bad(what + " has data_offsets that end before they begin");
    if (e.end - e.begin != expected)
      return bad(what + " is " + runtime::safetensorsDTypeName(e.dtype) + toString(e.shape) + ", " + std::to_string(expected) +
                 " bytes, but its data_offsets span " + std::to_string(e.end - e.begin));
    if (e.end > data.size())
      return bad(what + " ends at byte " + std::to_string(e.end) + " of the data, which has only " +
                 std::to_string(data.size()) + " (truncated?)");
    return e;
  }

  /// The ranges must tile the data: a gap or an overlap means a corrupt
  /// header, bytes after the last tensor a corrupt or mis-concatenated file.
  llvm::Error checkTiling(std::vector<Entry> entries) const {
    std::sort(entries.begin(), entries.end(),
              [](const Entry &a, const Entry &b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
    uint64_t at = 0;
    for (const Entry &e : entries) {
      if (e.begin < at) return bad("tensor '" + e.name + "' overlaps the data of another tensor");
      if (e.begin > at)
        return bad("bytes " + std::to_string(at) + " to " + std::to_string(e.begin) +
                   " of the data belong to no tensor");
      at = e.end;
    }
    if (at != data.size())
      return bad("the file has " + std::to_string(data.size() - at) + " bytes after the last tensor's data");
    return llvm::Error::success();
  }

  Tensor decode(const Entry &e) const {
    Tensor t(e.shape, e.dtype);
    unsigned width = byteSize(e.dtype);
    const auto *p = reinterpret_cast<const unsigned char *>(data.data()) + e.begin;
    for (size_t i = 0; i < t.data.size(); ++i)
      t.data[i] = runtime::decodeElement(e.dtype, readLittleEndian(p + i * width, width));
    return t;
  }

  llvm::StringRef bytes, data;
  std::string name;
};

} // namespace

llvm::Expected<runtime::SafetensorsContents> runtime::parseSafetensors(llvm::StringRef bytes, llvm::StringRef name) {
  return Reader(bytes, name).read();
}

llvm::Expected<runtime::SafetensorsContents> runtime::readSafetensors(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "cannot read '%s': %s", path.str().c_str(),
                                   buffer.getError().message().c_str());
  return parseSafetensors((*buffer)->getBuffer(), path);
}
