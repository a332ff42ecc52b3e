//===- runtime/ReadFile.h - a whole file into memory --------------*- C++ -*-===//
//
// The runtime's files (safetensors, token data) are read whole, with POSIX
// calls and the system's reason on failure.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_READFILE_H
#define PLANC_RUNTIME_READFILE_H

#include "runtime/Status.h"

#include <cstdint>
#include <string>

namespace planc::runtime {

/// The bytes of `path`; an error "cannot read WHAT: REASON" (REASON the
/// system's, e.g. "No such file or directory", "Is a directory"), where WHAT
/// is `what` or, when it is empty, 'PATH' in quotes.
Result<std::string> readWholeFile(const std::string &path, const std::string &what = "");

/// The bytes of `path`, which must be a regular file of at most `maxBytes`
/// bytes: a device, a pipe or a folder (`/dev/zero`, a FIFO) would be read
/// without end, and the bytes are held in memory whole. Errors name WHAT as
/// readWholeFile's do and say which limit was crossed.
Result<std::string> readRegularFile(const std::string &path, const std::string &what, uint64_t maxBytes);

} // namespace planc::runtime

#endif
