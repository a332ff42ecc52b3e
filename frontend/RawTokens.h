//===- frontend/RawTokens.h - the .plan tokens without ANTLR -----*- C++ -*-===//
//
// The tokens frontend/FastLexer.cpp scans, before they become ANTLR token
// objects: a type and the bytes it spans. The direct parser
// (frontend/DirectParser.h) reads these, so a plan it parses costs no token
// object, and this header keeps ANTLR out of every file that includes it.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_RAWTOKENS_H
#define PLANC_FRONTEND_RAWTOKENS_H

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace planc::parser {

/// One token: what kind (the grammar's literal tokens are one kind, told apart
/// by their text) and its bytes [begin, end) in the scanned text.
struct RawToken {
  enum Kind : uint8_t {
    Keyword,      // a literal word: 'model', 'repeat', 'and', ...
    Punct,        // a literal symbol: '{', '<=', '...', ...
    Schedule1F1B, // '1f1b'
    Quantity, Number, String, Annotation, Ident,
    BlockComment, // on the hidden channel; may be unterminated
    BadChar,      // a code point no rule matches (an unterminated string's '"' too)
    End,          // end of file
  };
  Kind kind;
  uint32_t begin, end;
};

/// Scans `text` (valid UTF-8) by grammar/Plan.g4's lexer rules, appending the
/// tokens, block comments included and End last, to `out`. Stops, returning
/// false, at the token past `maxTokens` (counted as FastLexer counts them).
bool lexRaw(llvm::StringRef text, size_t maxTokens, std::vector<RawToken> &out);

} // namespace planc::parser

#endif
