//===- ir/Lexer.h - tokens of the textual IR --------------------*- C++ -*-===//
//
// Splits textual IR (docs/ir.md) into tokens for ir/Parser.cpp. Names and
// strings come out decoded; every token keeps its source range so parse
// errors can point at it. Malformed input gives an Error token with a
// message, never a crash.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_LEXER_H
#define PLANC_IR_LEXER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"

#include <string>

namespace planc::ir {

struct Token {
  enum Kind {
    Eof,
    Error,      // `text` says what is wrong
    Word,       // matmul, f32, param, true, ...
    ValueName,  // %x or %"odd name"; `text` is the name
    ModuleName, // @tiny_gpt; `text` is the name
    Integer,    // 42, -3
    Float,      // 0.5, 1e-05, -2.0
    String,     // "..."; `text` is the decoded contents
    LParen, RParen, LBrace, RBrace, LBracket, RBracket,
    Comma, Colon, Equal, Plus, Minus,
    Hash, Arrow, // '#' and '->': only from a Lexer made with execTokens (exec/PlanParser.h)
  };
  Kind kind = Eof;
  llvm::StringRef spelling; // the source bytes
  std::string text;         // decoded name, string or error message

  bool is(Kind k) const { return kind == k; }
  bool isWord(llvm::StringRef w) const { return kind == Word && spelling == w; }
  llvm::SMLoc loc() const { return llvm::SMLoc::getFromPointer(spelling.data()); }
};

/// Characters of a name written bare after `%` or `@`; the printer quotes
/// any other name.
bool isBareNameChar(char c);

/// How a token kind is named in "expected ..." messages.
const char *describe(Token::Kind kind);

class Lexer {
public:
  /// `execTokens`: also '#' and '->', which the execution plan's text form
  /// (exec/PlanParser.h) has and the IR does not.
  explicit Lexer(llvm::StringRef buffer, bool execTokens = false)
      : cur(buffer.begin()), end(buffer.end()), execTokens(execTokens) {}
  Token next();

private:
  Token make(Token::Kind kind, const char *start);
  Token error(const char *start, const std::string &message);
  Token lexNumber(const char *start);
  Token lexQuoted(const char *start, Token::Kind kind);
  void skipSpaceAndComments();

  const char *cur;
  const char *end;
  bool execTokens;
};

} // namespace planc::ir

#endif
