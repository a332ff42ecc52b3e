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
// Reading trusts nothing: a truncated, corrupt or hostile file is an error
// naming the file and what is wrong with it, never a crash.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_SAFETENSORS_H
#define PLANC_RUNTIME_SAFETENSORS_H

#include "ir/Interpreter.h"
#include "ir/Tensor.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <string>

namespace planc::runtime {

/// The tensors of a file by name (values widened to f64, `dtype` as stored)
/// and its metadata.
struct SafetensorsContents {
  ir::TensorMap tensors;
  std::map<std::string, std::string> metadata;
};

/// The format's dtype names: "F64", "F32", "BF16", "F16", "F8_E4M3",
/// "F8_E5M2", "I32", "I64", "U8", "U16", "U32", "BOOL".
const char *safetensorsDTypeName(ir::DType dtype);
std::optional<ir::DType> parseSafetensorsDType(llvm::StringRef name);

/// The largest header a reader accepts (the reference implementation's limit).
constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

/// Writes the file's bytes: tensors in name order, each stored in its own
/// dtype, the header padded with spaces to a multiple of 8 bytes so every
/// tensor's data is aligned.
void serializeSafetensors(llvm::raw_ostream &os, const ir::TensorMap &tensors,
                          const std::map<std::string, std::string> &metadata = {});

/// Writes `path` atomically (see AtomicFile.h).
llvm::Error writeSafetensors(llvm::StringRef path, const ir::TensorMap &tensors,
                             const std::map<std::string, std::string> &metadata = {});

/// Parses the bytes of a file; `name` is what error messages call it.
llvm::Expected<SafetensorsContents> parseSafetensors(llvm::StringRef bytes, llvm::StringRef name);

/// Reads and parses `path`.
llvm::Expected<SafetensorsContents> readSafetensors(llvm::StringRef path);

} // namespace planc::runtime

#endif
