//===- support/Error.h - errors for I/O and internal failures -*- C++ -*-===//
//
// An llvm::Error that is only a message: a file that cannot be read or
// written, a module a pass cannot handle, an interpreter that finds no value.
// Findings meant for a plan's author are diagnostics instead (DiagID, see
// Diagnostics.def; from passes, ir/Finding.h).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_SUPPORT_ERROR_H
#define PLANC_SUPPORT_ERROR_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

namespace planc {

/// An error whose text is `message` (no error code: it is read, not handled).
inline llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

} // namespace planc

#endif
