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
#include "runtime/Crc32c.h"
#include "runtime/ReadFile.h"
#include "runtime/Plural.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

using namespace planc::runtime;
using json = nlohmann::json;

namespace {

struct DTypeName {
  ElementType type;
  const char *name;
};

const DTypeName kDTypeNames[] = {
    {ElementType::F64, "F64"},        {ElementType::F32, "F32"},        {ElementType::BF16, "BF16"},
    {ElementType::F16, "F16"},        {ElementType::F8E4M3, "F8_E4M3"}, {ElementType::F8E5M2, "F8_E5M2"},
    {ElementType::I32, "I32"},        {ElementType::I64, "I64"},        {ElementType::U8, "U8"},
    {ElementType::U16, "U16"},        {ElementType::U32, "U32"},        {ElementType::Bool, "BOOL"},
};

uint64_t readLittleEndian(const unsigned char *p, unsigned bytes) {
  uint64_t v = 0;
  for (unsigned i = 0; i < bytes; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

/// What a file's "header" checksum covers: every metadata entry but the
/// checksums' own, and every tensor's dtype and shape (the byte ranges
/// follow from them, and the tiling check keeps them exact).
uint32_t headerCrc(const std::map<std::string, std::string> &metadata,
                   const std::map<std::string, std::pair<ElementType, std::vector<int64_t>>> &tensors) {
  json canonical = {{"metadata", json::object()}, {"tensors", json::object()}};
  for (const auto &[key, value] : metadata)
    if (key != kChecksumsKey) canonical["metadata"][key] = value;
  for (const auto &[name, t] : tensors)
    canonical["tensors"][name] = {safetensorsDTypeName(t.first), t.second};
  return crc32c(canonical.dump());
}

std::string_view trimFront(std::string_view s) {
  size_t i = s.find_first_not_of(" \t\r\n");
  return i == std::string_view::npos ? std::string_view() : s.substr(i);
}

} // namespace

const char *planc::runtime::safetensorsDTypeName(ElementType type) {
  for (const DTypeName &d : kDTypeNames)
    if (d.type == type) return d.name;
  return "?";
}

std::optional<ElementType> planc::runtime::parseSafetensorsDType(std::string_view name) {
  for (const DTypeName &d : kDTypeNames)
    if (name == d.name) return d.type;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

Status planc::runtime::serializeSafetensors(std::ostream &os, const HostTensorMap &tensors,
                                            const std::map<std::string, std::string> &metadata, bool checksums,
                                            FileDigest *digest) {
  json header = json::object();
  std::map<std::string, std::string> meta = metadata;
  if (checksums) {
    json sums = {{"tensors", json::object()}};
    std::map<std::string, std::pair<ElementType, std::vector<int64_t>>> described;
    for (const auto &[name, t] : tensors) {
      sums["tensors"][name] = crc32cText(crc32c(0, t.bytes.data(), t.bytes.size()));
      described[name] = {t.type, t.shape};
    }
    sums["header"] = crc32cText(headerCrc(meta, described));
    meta[kChecksumsKey] = sums.dump();
  }
  uint64_t offset = 0;
  for (const auto &[name, t] : tensors) {
    uint64_t bytes = t.byteSize();
    if (t.bytes.size() != bytes)
      return errorStatus("tensor '" + name + "' holds " + counted(int64_t(t.bytes.size()), "byte") + ", but " +
                         spelling(t.type) + shapeText(t.shape) + " takes " + std::to_string(bytes));
    header[name] = {{"dtype", safetensorsDTypeName(t.type)},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  if (!meta.empty()) header["__metadata__"] = meta;
  std::string text = header.dump();
  // Spaces are JSON whitespace: padding the header keeps the data 8-aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  char length[8];
  for (unsigned i = 0; i < 8; ++i) length[i] = char((uint64_t(text.size()) >> (8 * i)) & 0xff);
  os.write(length, 8);
  os << text;
  FileDigest d;
  d.bytes = 8 + text.size();
  if (digest) d.crc = crc32c(crc32c(0, length, 8), text.data(), text.size());
  // HostTensor bytes are already little-endian.
  for (const auto &entry : tensors) {
    const std::vector<uint8_t> &bytes = entry.second.bytes;
    os.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
    d.bytes += bytes.size();
    if (digest) d.crc = crc32c(d.crc, bytes.data(), bytes.size());
  }
  if (digest) *digest = d;
  return Status::success();
}

Status planc::runtime::writeSafetensors(const std::string &path, const HostTensorMap &tensors,
                                        const std::map<std::string, std::string> &metadata, bool checksums,
                                        FileDigest *digest) {
  return writeFileAtomically(
      path, [&](std::ostream &os) { return serializeSafetensors(os, tensors, metadata, checksums, digest); });
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

/// One header entry, checked against the data before anything is copied.
struct Entry {
  std::string name;
  ElementType type;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

class Reader {
public:
  Reader(std::string_view bytes, std::string name) : bytes(bytes), name(std::move(name)) {}

  Result<SafetensorsContents> read() {
    if (bytes.size() < 8)
      return bad("the file is " + counted(int64_t(bytes.size()), "byte") +
                 ", too short for the 8-byte header length (truncated?)");
    uint64_t headerLength = readLittleEndian(reinterpret_cast<const unsigned char *>(bytes.data()), 8);
    if (headerLength > kMaxSafetensorsHeader)
      return bad("the header length " + std::to_string(headerLength) + " is over the limit of " +
                 std::to_string(kMaxSafetensorsHeader) + " bytes (corrupt?)");
    if (headerLength > bytes.size() - 8)
      return bad("the header is " + counted(int64_t(headerLength), "byte") + " but the file has only " +
                 std::to_string(bytes.size() - 8) + " after the length (truncated?)");
    std::string_view headerText = bytes.substr(8, headerLength);
    data = bytes.substr(8 + headerLength);
    if (trimFront(headerText).empty() || trimFront(headerText).front() != '{')
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

    SafetensorsContents out;
    std::vector<Entry> entries;
    for (auto it = header.begin(); it != header.end(); ++it) {
      if (it.key() == "__metadata__") {
        if (Status s = readMetadata(it.value(), out.metadata); !s.ok()) return s;
        continue;
      }
      Result<Entry> entry = readEntry(it.key(), it.value());
      if (!entry.ok()) return entry.status();
      entries.push_back(std::move(*entry));
    }
    if (Status s = checkTiling(entries); !s.ok()) return s;
    if (auto sums = out.metadata.find(kChecksumsKey); sums != out.metadata.end()) {
      if (Status s = checkSums(sums->second, out.metadata, entries); !s.ok()) return s;
      out.metadata.erase(sums);
      out.checksummed = true;
    }
    for (const Entry &e : entries) out.tensors[e.name] = copyOut(e);
    return out;
  }

private:
  Status bad(const std::string &what) const {
    return errorStatus("'" + name + "' is not a valid safetensors file: " + what);
  }

  Status readMetadata(const json &value, std::map<std::string, std::string> &metadata) const {
    if (!value.is_object()) return bad("'__metadata__' is not an object of strings");
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (!it.value().is_string()) return bad("'__metadata__' entry '" + it.key() + "' is not a string");
      metadata[it.key()] = it.value().get<std::string>();
    }
    return Status::success();
  }

  Result<Entry> readEntry(const std::string &key, const json &value) const {
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
    auto parsed = parseSafetensorsDType(dtype->get<std::string>());
    if (!parsed) return bad(what + " has dtype '" + dtype->get<std::string>() + "', which planc does not read");
    e.type = *parsed;

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
    overflow |= __builtin_mul_overflow(numel, uint64_t(byteSize(e.type)), &expected);
    if (overflow) return bad(what + " has a shape whose size overflows");

    if (!offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned())
      return bad(what + " has data_offsets that are not two non-negative integers");
    e.begin = (*offsets)[0].get<uint64_t>();
    e.end = (*offsets)[1].get<uint64_t>();
    if (e.begin > e.end) return bad(what + " has data_offsets that end before they begin");
    if (e.end - e.begin != expected)
      return bad(what + " is " + safetensorsDTypeName(e.type) + shapeText(e.shape) + ", " + counted(int64_t(expected), "byte") +
                 ", but its data_offsets span " + std::to_string(e.end - e.begin));
    if (e.end > data.size())
      return bad(what + " ends at byte " + std::to_string(e.end) + " of the data, which has only " +
                 std::to_string(data.size()) + " (truncated?)");
    return e;
  }

  /// The ranges must tile the data: a gap or an overlap means a corrupt
  /// header, bytes after the last tensor a corrupt or mis-concatenated file.
  Status checkTiling(std::vector<Entry> entries) const {
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
      return bad("the file has " + counted(int64_t(data.size() - at), "byte") + " after the last tensor's data");
    return Status::success();
  }

  /// The checksums the writer recorded, against the bytes read: every
  /// tensor has one, and the rest of the header has one.
  Status checkSums(const std::string &text, const std::map<std::string, std::string> &metadata,
                   const std::vector<Entry> &entries) const {
    const json sums = json::parse(text, nullptr, /*allow_exceptions=*/false);
    auto crcOf = [](const json &j) -> std::optional<uint32_t> {
      return j.is_string() ? parseCrc32cText(j.get<std::string>()) : std::nullopt;
    };
    if (sums.is_discarded() || !sums.is_object() || !sums.contains("header") || !crcOf(sums["header"]) ||
        !sums.contains("tensors") || !sums["tensors"].is_object())
      return bad("its '" + std::string(kChecksumsKey) + "' metadata is not a header's and tensors' checksums");
    const json &tensors = sums["tensors"];
    std::map<std::string, std::pair<ElementType, std::vector<int64_t>>> described;
    for (const Entry &e : entries) described[e.name] = {e.type, e.shape};
    for (const auto &[name, value] : tensors.items())
      if (!described.count(name)) return bad("its checksums name a tensor '" + name + "' it does not have");
    for (const Entry &e : entries) {
      auto recorded = tensors.contains(e.name) ? crcOf(tensors[e.name]) : std::nullopt;
      if (!recorded) return bad("tensor '" + e.name + "' has no checksum");
      const uint32_t actual = crc32c(0, data.data() + e.begin, e.end - e.begin);
      if (actual != *recorded)
        return corrupt("tensor '" + e.name + "'", *recorded, actual);
    }
    const uint32_t header = headerCrc(metadata, described);
    if (header != *crcOf(sums["header"])) return corrupt("its header", *crcOf(sums["header"]), header);
    return Status::success();
  }

  Status corrupt(const std::string &what, uint32_t recorded, uint32_t actual) const {
    return errorStatus("'" + name + "': " + what + " does not match its checksum (CRC-32C " + crc32cText(recorded) +
                       " when written, " + crc32cText(actual) + " now): the file is corrupt");
  }

  HostTensor copyOut(const Entry &e) const {
    HostTensor t{e.type, e.shape, {}};
    const auto *p = reinterpret_cast<const uint8_t *>(data.data()) + e.begin;
    t.bytes.assign(p, p + (e.end - e.begin));
    return t;
  }

  std::string_view bytes, data;
  std::string name;
};

} // namespace

Result<SafetensorsContents> planc::runtime::parseSafetensors(std::string_view bytes, const std::string &name) {
  return Reader(bytes, name).read();
}

Result<SafetensorsContents> planc::runtime::readSafetensors(const std::string &path) {
  Result<std::string> bytes = readWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  return parseSafetensors(*bytes, path);
}
