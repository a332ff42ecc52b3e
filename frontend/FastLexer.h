//===- frontend/FastLexer.h - the .plan lexer, by hand -------------*- C++ -*-===//
//
// The tokens of grammar/Plan.g4's lexer rules, made by a hand-written scanner
// over the UTF-8 bytes instead of ANTLR's lexer simulator, which walks a DFA
// a code point at a time behind a lock and was a third of checking a 10 MB
// plan. The tokens are ANTLR's own (types from PlanLexer, channels, start and
// stop as code point indices into `input`, line and column), so the parser
// and every reader of tokens see no difference; tests/unit/frontend/
// FastLexerTest.cpp compares both lexers token by token on every .plan file
// of the repository and on thousands of mutated ones. The same scan, without
// token objects, is RawTokens.h's lexRaw, which the direct parser reads.
//
// Rules, as ANTLR applies them: the longest match wins; a tie goes to the
// rule defined first (the grammar's literals, then SCHEDULE_1F1B, QUANTITY,
// NUMBER, STRING, ANNOTATION, IDENT, ..., BAD_CHAR: the lowest token type).
// WS and LINE_COMMENT are skipped, BLOCK_COMMENT goes to the hidden channel,
// and anything no rule matches is a one-code-point BAD_CHAR. The literal
// tokens are read from the generated lexer's vocabulary, so a new keyword or
// operator in the grammar needs no change here.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_FASTLEXER_H
#define PLANC_FRONTEND_FASTLEXER_H

#include "antlr4-runtime.h"

#include "llvm/ADT/StringRef.h"

#include <memory>
#include <vector>

namespace planc::parser {

/// Lexes `text` (valid UTF-8, the bytes `input` was made from), appending
/// the tokens, EOF last, to `out`; stops after `maxTokens` tokens (the next
/// one is appended and false returned). `source` is the lexer the tokens
/// name as their source (for their text and the parser's messages).
bool lexFast(llvm::StringRef text, antlr4::TokenSource *source, antlr4::CharStream *input, size_t maxTokens,
             std::vector<std::unique_ptr<antlr4::Token>> &out);

} // namespace planc::parser

#endif
