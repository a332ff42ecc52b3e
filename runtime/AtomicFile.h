//===- runtime/AtomicFile.h - files that are whole or absent ---*- C++ -*-===//
//
// Checkpoints, dumps, traces and reports are written to a temporary file in
// the destination's folder, flushed to disk (fsync), then renamed over the
// destination: a crash or a full disk leaves the old file or none, never a
// half-written one that a later run would read as truncated.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_ATOMICFILE_H
#define PLANC_RUNTIME_ATOMICFILE_H

#include "runtime/Status.h"

#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace planc::runtime {

/// Writes `path` through `write`, atomically. An error from `write` (passed
/// on as it is), from the disk (with the system's reason) or from the rename
/// leaves `path` as it was and removes the temporary file; every message of
/// the disk's names `path`: "cannot write 'PATH': REASON".
Status writeFileAtomically(const std::string &path, const std::function<Status(std::ostream &)> &write);

/// The same for contents already in memory.
Status writeFileAtomically(const std::string &path, std::string_view contents);

} // namespace planc::runtime

#endif
