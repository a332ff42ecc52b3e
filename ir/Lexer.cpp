//===- ir/Lexer.cpp - tokens of the textual IR ---------------------------===//

#include "ir/Lexer.h"

#include "llvm/ADT/StringExtras.h"

using namespace planc;
using namespace planc::ir;

namespace {
bool isWordStart(char c) { return llvm::isAlpha(c) || c == '_'; }
bool isWordChar(char c) { return llvm::isAlnum(c) || c == '_'; }
} // namespace

bool ir::isBareNameChar(char c) { return llvm::isAlnum(c) || c == '_' || c == '.' || c == '$' || c == '-'; }

const char *ir::describe(Token::Kind kind) {
  switch (kind) {
  case Token::Eof: return "end of input";
  case Token::Error: return "invalid token";
  case Token::Word: return "a word";
  case Token::ValueName: return "a value name";
  case Token::ModuleName: return "a module name";
  case Token::Integer: return "an integer";
  case Token::Float: return "a float";
  case Token::String: return "a string";
  case Token::LParen: return "'('";
  case Token::RParen: return "')'";
  case Token::LBrace: return "'{'";
  case Token::RBrace: return "'}'";
  case Token::LBracket: return "'['";
  case Token::RBracket: return "']'";
  case Token::Comma: return "','";
  case Token::Colon: return "':'";
  case Token::Equal: return "'='";
  case Token::Plus: return "'+'";
  case Token::Minus: return "'-'";
  case Token::Hash: return "'#'";
  case Token::Arrow: return "'->'";
  }
  return "a token";
}

Token Lexer::make(Token::Kind kind, const char *start) {
  Token t;
  t.kind = kind;
  t.spelling = llvm::StringRef(start, size_t(cur - start));
  return t;
}

Token Lexer::error(const char *start, const std::string &message) {
  Token t = make(Token::Error, start);
  if (t.spelling.empty() && cur < end) t.spelling = llvm::StringRef(start, 1);
  t.text = message;
  return t;
}

void Lexer::skipSpaceAndComments() {
  while (cur < end) {
    if (*cur == ' ' || *cur == '\t' || *cur == '\n' || *cur == '\r') {
      ++cur;
    } else if (*cur == '/' && cur + 1 < end && cur[1] == '/') {
      while (cur < end && *cur != '\n') ++cur;
    } else {
      return;
    }
  }
}

Token Lexer::next() {
  skipSpaceAndComments();
  const char *start = cur;
  if (cur == end) return make(Token::Eof, start);
  char c = *cur++;
  switch (c) {
  case '(': return make(Token::LParen, start);
  case ')': return make(Token::RParen, start);
  case '{': return make(Token::LBrace, start);
  case '}': return make(Token::RBrace, start);
  case '[': return make(Token::LBracket, start);
  case ']': return make(Token::RBracket, start);
  case ',': return make(Token::Comma, start);
  case ':': return make(Token::Colon, start);
  case '=': return make(Token::Equal, start);
  case '+': return make(Token::Plus, start);
  case '"': return lexQuoted(start, Token::String);
  case '-':
    if (cur < end && llvm::isDigit(*cur)) return lexNumber(start);
    if (execTokens && cur < end && *cur == '>') {
      ++cur;
      return make(Token::Arrow, start);
    }
    return make(Token::Minus, start);
  case '%':
  case '@': {
    Token::Kind kind = c == '%' ? Token::ValueName : Token::ModuleName;
    if (cur < end && *cur == '"') {
      ++cur;
      return lexQuoted(start, kind);
    }
    while (cur < end && isBareNameChar(*cur)) ++cur;
    if (cur == start + 1) return error(start, std::string("expected a name after '") + c + "'");
    Token t = make(kind, start);
    t.text = t.spelling.drop_front().str();
    return t;
  }
  case '#':
    if (execTokens) return make(Token::Hash, start);
    break;
  default: break;
  }
  if (llvm::isDigit(c)) return lexNumber(start);
  if (isWordStart(c)) {
    while (cur < end && isWordChar(*cur)) ++cur;
    return make(Token::Word, start);
  }
  if (llvm::isPrint(c)) return error(start, std::string("unexpected character '") + c + "'");
  return error(start, "unexpected byte 0x" + llvm::utohexstr(uint8_t(c), /*LowerCase=*/true, 2));
}

Token Lexer::lexNumber(const char *start) {
  // -?[0-9]+ ('.' [0-9]*)? ([eE] [+-]? [0-9]+)?  (the leading digit is consumed)
  bool isFloat = false;
  while (cur < end && llvm::isDigit(*cur)) ++cur;
  if (cur < end && *cur == '.') {
    isFloat = true;
    ++cur;
    while (cur < end && llvm::isDigit(*cur)) ++cur;
  }
  if (cur < end && (*cur == 'e' || *cur == 'E')) {
    const char *exp = cur + 1;
    if (exp < end && (*exp == '+' || *exp == '-')) ++exp;
    if (exp < end && llvm::isDigit(*exp)) {
      isFloat = true;
      cur = exp;
      while (cur < end && llvm::isDigit(*cur)) ++cur;
    }
  }
  return make(isFloat ? Token::Float : Token::Integer, start);
}

Token Lexer::lexQuoted(const char *start, Token::Kind kind) {
  // The opening quote is consumed. Escapes: \" \\ \n \t and \HH (hex byte).
  std::string text;
  while (true) {
    if (cur == end || *cur == '\n') return error(start, "unterminated string");
    char c = *cur++;
    if (c == '"') break;
    if (c != '\\') {
      text += c;
      continue;
    }
    if (cur == end) return error(start, "unterminated string");
    char e = *cur++;
    if (e == '"' || e == '\\') text += e;
    else if (e == 'n') text += '\n';
    else if (e == 't') text += '\t';
    else if (llvm::isHexDigit(e) && cur < end && llvm::isHexDigit(*cur))
      text += char(llvm::hexDigitValue(e) * 16 + llvm::hexDigitValue(*cur++));
    else
      return error(cur - 2, "invalid escape in string (use \\\", \\\\, \\n, \\t or \\HH)");
  }
  Token t = make(kind, start);
  t.text = std::move(text);
  return t;
}
