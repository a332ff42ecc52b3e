//===- runtime/Safetensors.h - reading and writing .safetensors -*- C++ -*-===//
//
// The safetensors format (huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON mapping each tensor name to its dtype,
// shape and [begin, end) byte range in the data that follows, an optional
// "__metadata__" object of strings, then the raw little-endian data. It is
// what PyTorch, JAX and numpy read without planc, so initial weights, batches
// and gradients dumped here can feed an outside reference, and checkpoints
// can be inspected with common tools.
//
// Tensors are HostTensors: their bytes are the file's bytes, unchanged both
// ways. Reading trusts nothing: a truncated, corrupt or hostile file is an
// error naming the file and what is wrong with it, never a crash.
//
// A file written with checksums (checkpoints and `planc convert`'s files)
// records in its metadata, under "crc32c", the CRC-32C of every tensor's
// bytes and of the rest of its header (its other metadata, every tensor's
// dtype and shape); reading such a file verifies every one of them.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_SAFETENSORS_H
#define PLANC_RUNTIME_SAFETENSORS_H

#include "runtime/HostTensor.h"
#include "runtime/Status.h"

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace planc::runtime {

using HostTensorMap = std::map<std::string, HostTensor>;

/// The tensors of a file by name and its metadata.
struct SafetensorsContents {
  HostTensorMap tensors;
  std::map<std::string, std::string> metadata; // without the checksums' entry
  bool checksummed = false;                    // its checksums were there, and verified
};

/// The metadata entry of a file's checksums: a JSON object
/// {"header": CRC, "tensors": {NAME: CRC, ...}} of eight-hex-digit CRC-32Cs.
constexpr const char *kChecksumsKey = "crc32c";

/// A file's size and the CRC-32C of all its bytes, as written.
struct FileDigest {
  uint64_t bytes = 0;
  uint32_t crc = 0;
};

/// The format's dtype names: "F64", "F32", "BF16", "F16", "F8_E4M3",
/// "F8_E5M2", "I32", "I64", "U8", "U16", "U32", "BOOL".
const char *safetensorsDTypeName(ElementType type);
std::optional<ElementType> parseSafetensorsDType(std::string_view name);

/// The largest header a reader accepts (the reference implementation's limit).
constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

/// Writes the file's bytes: tensors in name order, the header padded with
/// spaces to a multiple of 8 bytes so every tensor's data is aligned. A
/// tensor whose bytes are not its shape's size is an error naming it (and
/// nothing is written). With `checksums` the metadata records them;
/// `digest`, when given, receives the size and CRC-32C of what was written.
Status serializeSafetensors(std::ostream &os, const HostTensorMap &tensors,
                            const std::map<std::string, std::string> &metadata = {}, bool checksums = false,
                            FileDigest *digest = nullptr);

/// Writes `path` atomically (see AtomicFile.h).
Status writeSafetensors(const std::string &path, const HostTensorMap &tensors,
                        const std::map<std::string, std::string> &metadata = {}, bool checksums = false,
                        FileDigest *digest = nullptr);

/// Parses the bytes of a file; `name` is what error messages call it. A
/// checksum that does not match is an error naming the tensor (or the
/// header) and both values.
Result<SafetensorsContents> parseSafetensors(std::string_view bytes, const std::string &name);

/// Reads and parses `path`.
Result<SafetensorsContents> readSafetensors(const std::string &path);

} // namespace planc::runtime

#endif
