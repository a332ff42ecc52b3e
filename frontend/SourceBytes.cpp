//===- frontend/SourceBytes.cpp - checking a file's bytes before lexing --===//
//
// ANTLR's input stream throws on invalid UTF-8, so the bytes are checked here
// first: a NUL means a binary file, a bad sequence is reported at its byte.
//
//===----------------------------------------------------------------------===//

#include "frontend/SourceBytes.h"

#include "llvm/ADT/StringExtras.h"

using namespace planc;
using llvm::SMLoc;

size_t planc::utf8SequenceLength(const unsigned char *p, const unsigned char *end) {
  unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07;
  else return 0;
  if (size_t(end - p) < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are invalid too.
  static const uint32_t minimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < minimum[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

/// Checks the bytes and records the byte offset of every code point, since
/// ANTLR positions count code points and llvm::SMLoc counts bytes.
bool planc::checkBytes(llvm::StringRef text, llvm::StringRef fileName, DiagnosticEngine &diags,
                std::vector<uint32_t> &codePointOffsets) {
  const auto *begin = reinterpret_cast<const unsigned char *>(text.data());
  const auto *end = begin + text.size();
  bool ascii = true;
  for (const auto *p = begin; p < end;) {
    if (*p == 0) {
      diags.report(DiagID::err_file_binary, SMLoc::getFromPointer(text.data() + (p - begin)))
          << fileName;
      return false;
    }
    size_t n = utf8SequenceLength(p, end);
    if (n == 0) {
      diags.report(DiagID::err_invalid_utf8, SMLoc::getFromPointer(text.data() + (p - begin)))
          << llvm::utohexstr(*p, /*LowerCase=*/true);
      return false;
    }
    if (n > 1) ascii = false;
    p += n;
  }
  codePointOffsets.clear();
  if (ascii) return true;
  for (const auto *p = begin; p < end;) {
    codePointOffsets.push_back(uint32_t(p - begin));
    p += utf8SequenceLength(p, end);
  }
  codePointOffsets.push_back(uint32_t(text.size()));
  return true;
}

