//===- frontend/SourceBytes.h - checking a file's bytes ---------*- C++ -*-===//
#ifndef PLANC_FRONTEND_SOURCEBYTES_H
#define PLANC_FRONTEND_SOURCEBYTES_H

#include "support/Diagnostics.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <vector>

namespace planc {

/// Reports a NUL byte (a binary file) or invalid UTF-8 at its place and
/// returns false. Otherwise fills `codePointOffsets` with the byte offset of
/// every code point (and one past the end), or leaves it empty for ASCII text:
/// ANTLR counts code points, llvm::SMLoc counts bytes.
bool checkBytes(llvm::StringRef text, llvm::StringRef fileName, DiagnosticEngine &diags,
                std::vector<uint32_t> &codePointOffsets);

/// Length of the UTF-8 sequence starting at `p`, or 0 if it is invalid
/// (overlong forms, surrogates and values past U+10FFFF included).
size_t utf8SequenceLength(const unsigned char *p, const unsigned char *end);

} // namespace planc

#endif
