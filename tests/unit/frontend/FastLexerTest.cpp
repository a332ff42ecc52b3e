//===- tests/unit/frontend/FastLexerTest.cpp - the hand lexer equals ANTLR's ---===//
//
// frontend/FastLexer.h replaces the generated lexer on the parse path; here
// both lex the same text and must give the same tokens (type, channel,
// start, stop, line, column, text): every .plan file of the repository, and
// thousands of mutants of them made of the characters that decide tokens
// (digits and units, quotes and escapes, '@', '/' and '*', keywords,
// newlines, multi-byte code points).
//
//===----------------------------------------------------------------------===//

#include "frontend/FastLexer.h"
#include "StepTestHelpers.h"

#include "PlanLexer.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <random>

using namespace planc;

namespace {

struct Tok {
  size_t type, channel, start, stop, line, column;
  std::string text;
  bool operator==(const Tok &o) const {
    return type == o.type && channel == o.channel && start == o.start && stop == o.stop && line == o.line &&
           column == o.column && text == o.text;
  }
};

std::string describe(const std::vector<Tok> &toks, size_t i) {
  if (i >= toks.size()) return "(none)";
  const Tok &t = toks[i];
  return "type " + std::to_string(t.type) + " channel " + std::to_string(t.channel) + " [" + std::to_string(t.start) +
         ", " + std::to_string(t.stop) + "] line " + std::to_string(t.line) + ":" + std::to_string(t.column) + " '" +
         t.text + "'";
}

Tok tokOf(antlr4::Token &t) {
  return {t.getType(), t.getChannel(), t.getStartIndex(), t.getStopIndex(), t.getLine(), t.getCharPositionInLine(),
          t.getType() == antlr4::Token::EOF ? std::string() : t.getText()};
}

std::vector<Tok> antlrTokens(const std::string &text) {
  antlr4::ANTLRInputStream input(text);
  grammar::PlanLexer lexer(&input);
  lexer.removeErrorListeners();
  std::vector<Tok> out;
  for (;;) {
    std::unique_ptr<antlr4::Token> t = lexer.nextToken();
    out.push_back(tokOf(*t));
    if (t->getType() == antlr4::Token::EOF) break;
  }
  return out;
}

std::vector<Tok> fastTokens(const std::string &text) {
  antlr4::ANTLRInputStream input(text);
  grammar::PlanLexer lexer(&input);
  std::vector<std::unique_ptr<antlr4::Token>> list;
  EXPECT_TRUE(parser::lexFast(text, &lexer, &input, SIZE_MAX, list));
  std::vector<Tok> out;
  for (auto &t : list) out.push_back(tokOf(*t));
  return out;
}

/// Empty when equal, else where they first differ.
std::string compare(const std::string &text) {
  std::vector<Tok> a = antlrTokens(text), b = fastTokens(text);
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i)
    if (i >= a.size() || i >= b.size() || !(a[i] == b[i]))
      return "token " + std::to_string(i) + ": ANTLR " + describe(a, i) + ", fast " + describe(b, i);
  return "";
}

std::vector<std::string> planFiles() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const char *dir : {"examples", "lib/std", "tests/lit", "bench"}) {
    llvm::SmallString<256> root(planc::testing::sourceDir());
    llvm::sys::path::append(root, dir);
    for (llvm::sys::fs::recursive_directory_iterator it(root, ec), end; it != end && !ec; it.increment(ec))
      if (llvm::StringRef(it->path()).endswith(".plan")) files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool validUtf8(const std::string &s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = (unsigned char)s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!n || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if (((unsigned char)s[i + k] >> 6) != 2) return false;
    i += n;
  }
  return true;
}

} // namespace

TEST(FastLexer, EqualsTheGeneratedLexerOnEveryPlanOfTheRepository) {
  std::vector<std::string> files = planFiles();
  ASSERT_GT(files.size(), 50u);
  for (const std::string &f : files) {
    auto buffer = llvm::MemoryBuffer::getFile(f);
    ASSERT_TRUE(bool(buffer)) << f;
    std::string text = (*buffer)->getBuffer().str();
    if (!validUtf8(text)) continue; // the parser refuses those before lexing
    EXPECT_EQ(compare(text), "") << f;
  }
}

TEST(FastLexer, EqualsTheGeneratedLexerOnMutatedPlans) {
  std::vector<std::string> seeds;
  for (const std::string &f : planFiles())
    if (auto buffer = llvm::MemoryBuffer::getFile(f)) {
      std::string text = (*buffer)->getBuffer().str();
      if (validUtf8(text) && text.size() < 20000) seeds.push_back(text);
    }
  ASSERT_FALSE(seeds.empty());
  // Pieces that decide how text splits into tokens.
  const std::vector<std::string> pieces = {
      "0",  "1",  "9",  ".",   "..",  "...", "e",  "E",   "e+",  "-",   "_",   "1_0", "1f1b", "1f", " ",  "\t",
      "\n", "\r", "\"", "\\",  "\\\"", "@",  "@x", "/",   "//",  "/*",  "*/",  "*",   "GiB",  "GB/s", "Gb/s", "ms",
      "us", "TFLOPS", "model", "layer", "as", "not", "and", "or", "true", "(",  ")",   "{",    "}",  "[",  "]",
      "=",  "==", "<",  "<=",  ">=",  "!=",  "!",  "%",   ",",   ":",   "é",   "→",   "𝔸",    "#",  "$",  "'"};
  std::mt19937 rng(20261206);
  size_t checked = 0;
  for (int n = 0; n < 3000; ++n) {
    std::string text = seeds[rng() % seeds.size()];
    int edits = 1 + int(rng() % 4);
    for (int k = 0; k < edits && !text.empty(); ++k) {
      size_t at = rng() % text.size();
      while (at > 0 && ((unsigned char)text[at] >> 6) == 2) --at; // a code point's start
      switch (rng() % 3) {
      case 0: text.insert(at, pieces[rng() % pieces.size()]); break;
      case 1: {
        size_t len = 1;
        while (at + len < text.size() && ((unsigned char)text[at + len] >> 6) == 2) ++len;
        text.erase(at, len);
        break;
      }
      default: text.replace(at, 1, pieces[rng() % pieces.size()]);
      }
    }
    if (!validUtf8(text)) continue;
    ++checked;
    std::string diff = compare(text);
    ASSERT_EQ(diff, "") << "mutant " << n << ":\n" << text;
  }
  EXPECT_GT(checked, 2500u);
}

TEST(FastLexer, StopsPastTheLimitWithTheTokenPastIt) {
  std::string text = "a b c d e";
  antlr4::ANTLRInputStream input(text);
  grammar::PlanLexer lexer(&input);
  std::vector<std::unique_ptr<antlr4::Token>> list;
  EXPECT_FALSE(parser::lexFast(text, &lexer, &input, 3, list));
  ASSERT_EQ(list.size(), 4u);
  EXPECT_EQ(list.back()->getText(), "d");
}
