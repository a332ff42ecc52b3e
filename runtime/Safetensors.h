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
  std::map<std::string, std::string> metadata;
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
/// nothing is written).
Status serializeSafetensors(std::ostream &os, const HostTensorMap &tensors,
                            const std::map<std::string, std::string> &metadata = {});

/// Writes `path` atomically (see AtomicFile.h).
Status writeSafetensors(const std::string &path, const HostTensorMap &tensors,
                        const std::map<std::string, std::string> &metadata = {});

/// Parses the bytes of a file; `name` is what error messages call it.
Result<SafetensorsContents> parseSafetensors(std::string_view bytes, const std::string &name);

/// Reads and parses `path`.
Result<SafetensorsContents> readSafetensors(const std::string &path);

} // namespace planc::runtime

#endif
