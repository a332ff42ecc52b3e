//===- runtime/ReadFile.h - a whole file into memory --------------*- C++ -*-===//
//
// The runtime's files (safetensors, token data) are read whole, with POSIX
// calls and the system's reason on failure.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_READFILE_H
#define PLANC_RUNTIME_READFILE_H

#include "runtime/Status.h"

#include <string>

namespace planc::runtime {

/// The bytes of `path`; an error "cannot read WHAT: REASON" (REASON the
/// system's, e.g. "No such file or directory", "Is a directory"), where WHAT
/// is `what` or, when it is empty, 'PATH' in quotes.
Result<std::string> readWholeFile(const std::string &path, const std::string &what = "");

} // namespace planc::runtime

#endif
