//===- frontend/FastLexer.cpp - longest match over UTF-8 bytes ------------===//

#include "frontend/FastLexer.h"
#include "frontend/RawTokens.h"

#include "PlanLexer.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

using namespace planc;
using namespace planc::parser;
using planc::grammar::PlanLexer;

namespace {

/// The grammar's literal tokens ('model', '<=', ...) by text, from the
/// generated lexer's vocabulary: words and punctuation apart.
struct Literals {
  std::vector<std::pair<std::string, size_t>> words; // sorted by text
  std::vector<std::pair<std::string, size_t>> punct; // longest first
  Literals() {
    antlr4::ANTLRInputStream empty(std::string{});
    PlanLexer lexer(&empty);
    const antlr4::dfa::Vocabulary &v = lexer.getVocabulary();
    for (size_t t = 1; t <= v.getMaxTokenType(); ++t) {
      std::string lit = v.getLiteralName(t);
      if (lit.size() < 3 || lit.front() != '\'' || lit.back() != '\'') continue;
      lit = lit.substr(1, lit.size() - 2);
      bool word = std::isalpha((unsigned char)lit[0]) || lit[0] == '_';
      (word ? words : punct).push_back({lit, t});
    }
    std::sort(words.begin(), words.end());
    std::stable_sort(punct.begin(), punct.end(),
                     [](const auto &a, const auto &b) { return a.first.size() > b.first.size(); });
  }
  size_t word(llvm::StringRef text) const {
    auto it = std::lower_bound(words.begin(), words.end(), text,
                               [](const auto &e, llvm::StringRef t) { return llvm::StringRef(e.first) < t; });
    return it != words.end() && it->first == text ? it->second : 0;
  }
};

const Literals &literals() {
  static const Literals table;
  return table;
}

bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isIdentChar(char c) { return isIdentStart(c) || (c >= '0' && c <= '9'); }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

/// DIGITS : [0-9] ('_'? [0-9])*   -- the length matched at p (0: none).
size_t digits(llvm::StringRef s, size_t p) {
  if (p >= s.size() || !isDigit(s[p])) return 0;
  size_t q = p + 1;
  for (;;) {
    if (q < s.size() && isDigit(s[q])) ++q;
    else if (q + 1 < s.size() && s[q] == '_' && isDigit(s[q + 1])) q += 2;
    else return q - p;
  }
}

/// EXPONENT : [eE] [+-]? [0-9]+
size_t exponent(llvm::StringRef s, size_t p) {
  if (p >= s.size() || (s[p] != 'e' && s[p] != 'E')) return 0;
  size_t q = p + 1;
  if (q < s.size() && (s[q] == '+' || s[q] == '-')) ++q;
  size_t d = q;
  while (d < s.size() && isDigit(s[d])) ++d;
  return d > q ? d - p : 0;
}

/// NUMBER_BODY : DIGITS ('.' DIGITS?)? EXPONENT? | '.' DIGITS EXPONENT?
size_t numberBody(llvm::StringRef s, size_t p) {
  size_t q = p;
  if (size_t d = digits(s, q)) {
    q += d;
    if (q < s.size() && s[q] == '.') {
      ++q;
      q += digits(s, q);
    }
  } else if (q < s.size() && s[q] == '.' && digits(s, q + 1)) {
    q += 1 + digits(s, q + 1);
  } else {
    return 0;
  }
  q += exponent(s, q);
  return q - p;
}

/// QUANTITY : NUMBER_BODY [ \t]* UNIT, given the number's length. The units
/// are grammar/Plan.g4's UNIT fragment (a fragment has no vocabulary entry);
/// FastLexerTest fails if the two lists part.
size_t quantity(llvm::StringRef s, size_t p, size_t number) {
  static const char *const units[] = {"KiB",  "MiB",  "GiB",  "TiB",    "KB",     "MB",     "GB", "TB",
                                      "GB/s", "TB/s", "MB/s", "Gb/s",   "Tb/s",   "Mb/s",   "GiB/s",
                                      "TFLOPS", "GFLOPS", "PFLOPS", "ns", "us", "ms"};
  size_t q = p + number;
  while (q < s.size() && (s[q] == ' ' || s[q] == '\t')) ++q;
  size_t best = 0;
  for (const char *u : units)
    if (s.substr(q).startswith(u)) best = std::max(best, std::strlen(u));
  return best ? q + best - p : 0;
}

/// STRING : '"' (~["\\\r\n] | '\\' .)* '"'   -- 0 when unterminated.
size_t string(llvm::StringRef s, size_t p) {
  size_t q = p + 1;
  while (q < s.size()) {
    char c = s[q];
    if (c == '"') return q + 1 - p;
    if (c == '\r' || c == '\n') return 0;
    if (c == '\\') {
      if (q + 1 >= s.size()) return 0;
      // `.` is one code point, whatever its UTF-8 length.
      q += 1;
      unsigned char lead = (unsigned char)s[q];
      q += lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
      continue;
    }
    ++q;
  }
  return 0;
}

/// The bytes of the UTF-8 code point starting with `lead`.
size_t codePointBytes(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

/// The scan both lexFast and lexRaw make: calls `emit(type, begin, bytes,
/// hidden)` for each token, EOF last, and stops (false) at the token past
/// `maxTokens` or when `emit` returns false.
template <typename Emit> bool scan(llvm::StringRef s, size_t maxTokens, Emit emit) {
  const Literals &lit = literals();
  size_t p = 0;
  size_t count = 0;
  while (p < s.size()) {
    const char c = s[p];
    // Skipped: whitespace and line comments.
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      ++p;
      continue;
    }
    if (c == '/' && p + 1 < s.size() && s[p + 1] == '/') {
      size_t q = p + 2;
      while (q < s.size() && s[q] != '\r' && s[q] != '\n') ++q;
      p = q;
      continue;
    }
    if (c == '/' && p + 1 < s.size() && s[p + 1] == '*') {
      size_t close = s.find("*/", p + 2);
      size_t bytes = close == llvm::StringRef::npos ? s.size() - p : close + 2 - p;
      // Counted as the generated lexer's first pass counted it: every token.
      emit(size_t(PlanLexer::BLOCK_COMMENT), p, bytes, true);
      p += bytes;
      if (++count > maxTokens) return false;
      continue;
    }
    // The longest match; on a tie the lowest token type (the rule first defined).
    size_t bestLen = 0, bestType = 0;
    auto offer = [&](size_t len, size_t type) {
      if (len > bestLen || (len == bestLen && len > 0 && type < bestType)) bestLen = len, bestType = type;
    };
    if (isIdentStart(c)) {
      size_t q = p + 1;
      while (q < s.size() && isIdentChar(s[q])) ++q;
      size_t keyword = lit.word(s.substr(p, q - p));
      offer(q - p, keyword ? keyword : size_t(PlanLexer::IDENT));
    }
    if (c == '@' && p + 1 < s.size() && isIdentStart(s[p + 1])) {
      size_t q = p + 2;
      while (q < s.size() && isIdentChar(s[q])) ++q;
      offer(q - p, PlanLexer::ANNOTATION);
    }
    if (size_t n = numberBody(s, p)) {
      offer(n, PlanLexer::NUMBER);
      offer(quantity(s, p, n), PlanLexer::QUANTITY);
    }
    if (c == '"') offer(string(s, p), PlanLexer::STRING);
    for (const auto &[text, type] : lit.punct)
      if (s.substr(p).startswith(text)) {
        offer(text.size(), type);
        break; // longest first
      }
    if (!bestLen) offer(codePointBytes((unsigned char)c), PlanLexer::BAD_CHAR);
    emit(bestType, p, bestLen, false);
    p += bestLen;
    if (++count > maxTokens) return false;
  }
  emit(size_t(antlr4::Token::EOF), p, 0, false);
  return true;
}

} // namespace

bool parser::lexFast(llvm::StringRef s, antlr4::TokenSource *source, antlr4::CharStream *input, size_t maxTokens,
                     std::vector<std::unique_ptr<antlr4::Token>> &out) {
  const std::pair<antlr4::TokenSource *, antlr4::CharStream *> pair(source, input);
  auto &factory = antlr4::CommonTokenFactory::DEFAULT;
  size_t p = 0, cp = 0;               // byte and code point of the scan
  size_t line = 1, lineStartCp = 0;   // ANTLR counts lines at '\n'
  // Moves p and cp to byte `to`, counting code points and lines.
  auto advanceTo = [&](size_t to) {
    for (; p < to; ++p) {
      unsigned char c = (unsigned char)s[p];
      if ((c & 0xC0) != 0x80) ++cp;
      if (c == '\n') {
        ++line;
        lineStartCp = cp;
      }
    }
  };
  return scan(s, maxTokens, [&](size_t type, size_t begin, size_t bytes, bool hidden) {
    advanceTo(begin);
    size_t startCp = cp, startLine = line, column = cp - lineStartCp;
    advanceTo(begin + bytes);
    out.push_back(factory->create(pair, type, "", hidden ? antlr4::Token::HIDDEN_CHANNEL : antlr4::Token::DEFAULT_CHANNEL,
                                  startCp, cp - 1, startLine, column));
  });
}

bool parser::lexRaw(llvm::StringRef s, size_t maxTokens, std::vector<RawToken> &out) {
  const Literals &lit = literals();
  return scan(s, maxTokens, [&](size_t type, size_t begin, size_t bytes, bool) {
    RawToken::Kind kind;
    switch (type) {
    case PlanLexer::SCHEDULE_1F1B: kind = RawToken::Schedule1F1B; break;
    case PlanLexer::QUANTITY: kind = RawToken::Quantity; break;
    case PlanLexer::NUMBER: kind = RawToken::Number; break;
    case PlanLexer::STRING: kind = RawToken::String; break;
    case PlanLexer::ANNOTATION: kind = RawToken::Annotation; break;
    case PlanLexer::IDENT: kind = RawToken::Ident; break;
    case PlanLexer::BLOCK_COMMENT: kind = RawToken::BlockComment; break;
    case PlanLexer::BAD_CHAR: kind = RawToken::BadChar; break;
    default:
      if (type == size_t(antlr4::Token::EOF)) kind = RawToken::End;
      else kind = lit.word(s.substr(begin, bytes)) ? RawToken::Keyword : RawToken::Punct;
    }
    out.push_back({kind, uint32_t(begin), uint32_t(begin + bytes)});
  });
}
