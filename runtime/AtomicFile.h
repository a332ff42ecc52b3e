//===- runtime/AtomicFile.h - files that are whole or absent ---*- C++ -*-===//
//
// Checkpoints, dumps and reports are written to a temporary file in the
// destination's folder, flushed to disk (fsync), then renamed over the
// destination: a crash or a full disk leaves the old file or none, never a
// half-written one that a later run would read as truncated.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_ATOMICFILE_H
#define PLANC_RUNTIME_ATOMICFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>

namespace planc::runtime {

/// Writes `path` through `write`, atomically. An error from `write`, from the
/// disk (with the system's reason) or from the rename leaves `path` as it was
/// and removes the temporary file; every message names `path`.
llvm::Error writeFileAtomically(llvm::StringRef path,
                                const std::function<llvm::Error(llvm::raw_ostream &)> &write);

/// The same for contents already in memory.
llvm::Error writeFileAtomically(llvm::StringRef path, llvm::StringRef contents);

} // namespace planc::runtime

#endif
