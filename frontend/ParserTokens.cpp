//===- frontend/ParserTokens.cpp - token-level checks before the parse ---===//
//
// The parser is recursive descent: brackets and prefix operators nested
// deep enough would exhaust its stack, so the token stream is checked first,
// and its bracket errors are reported better than ANTLR's recovery would.
// So are misspelled units: `80 GiBs` lexes as `80 GiB` and a name `s`, which
// the parser could only report at some later token.
//
//===----------------------------------------------------------------------===//

#include "frontend/ParserImpl.h"
#include "support/Units.h"

#include "llvm/ADT/StringExtras.h"

#include <string>

using namespace planc;
using namespace planc::parser;

namespace {

bool isOpen(const std::string &t) { return t == "(" || t == "[" || t == "{"; }
bool isClose(const std::string &t) { return t == ")" || t == "]" || t == "}"; }
std::string closerOf(const std::string &open) { return open == "(" ? ")" : open == "[" ? "]" : "}"; }

/// True when only spaces and tabs lie between `a` and `b`: the number and
/// the word after it are one quantity as written.
bool sameQuantity(SMRange a, SMRange b) {
  const char *p = a.End.getPointer(), *end = b.Start.getPointer();
  if (!p || !end || p > end) return false;
  for (; p != end; ++p)
    if (*p != ' ' && *p != '\t') return false;
  return true;
}

bool glued(SMRange a, SMRange b) { return a.End.getPointer() == b.Start.getPointer(); }

/// The unit a misspelling stands for: the same letters in another case
/// (`gib`), or with a plural `s` (`GiBs`, `gbs`). None for any other word, so
/// `global_batch = 4 micro_batch = 4` (commas are optional) stays a plan.
const UnitInfo *unitMeant(llvm::StringRef written) {
  std::string lower = written.lower();
  for (const UnitInfo &u : allUnits()) {
    std::string unit = llvm::StringRef(u.name).lower();
    if (lower == unit || lower == unit + "s") return &u;
  }
  return nullptr;
}

/// A number followed on its line by a word that misspells a unit: reported
/// at the word (with the unit's letters glued to a quantity, at all of them).
/// Returns the number of tokens the misspelling spans after `i`, 0 for none.
size_t checkUnit(const std::vector<antlr4::Token *> &all, size_t i, const Positions &pos, DiagnosticEngine &diags) {
  antlr4::Token *number = all[i];
  bool quantity = number->getType() == PlanLexer::QUANTITY;
  if ((!quantity && number->getType() != PlanLexer::NUMBER) || i + 1 >= all.size()) return 0;
  antlr4::Token *word = all[i + 1];
  SMRange numberRange = pos.range(number), wordRange = pos.range(word);
  if (word->getType() != PlanLexer::IDENT || !sameQuantity(numberRange, wordRange)) return 0;
  // `gb/s`: the parts of a rate, when written without spaces.
  size_t span = 1;
  std::string written = word->getText();
  if (i + 3 < all.size() && all[i + 2]->getText() == "/" && all[i + 3]->getType() == PlanLexer::IDENT &&
      glued(wordRange, pos.range(all[i + 2])) && glued(pos.range(all[i + 2]), pos.range(all[i + 3]))) {
    written += "/" + all[i + 3]->getText();
    wordRange.End = pos.range(all[i + 3]).End;
    span = 3;
  }
  SMRange at = wordRange;
  const UnitInfo *lexed = nullptr;
  if (quantity) {
    // Letters glued to a unit make a longer word: `80 GiBs` is the unit `GiBs`.
    if (!glued(numberRange, wordRange)) return 0;
    const std::string text = number->getText();
    for (const UnitInfo &u : allUnits())
      if (llvm::StringRef(text).endswith(u.name) && (!lexed || llvm::StringRef(u.name).size() > llvm::StringRef(lexed->name).size()))
        lexed = &u;
    if (!lexed) return 0;
    written = lexed->name + written;
    at.Start = SMLoc::getFromPointer(numberRange.End.getPointer() - llvm::StringRef(lexed->name).size());
  }
  // `80 GiBx` still meant the unit the lexer found.
  const UnitInfo *meant = unitMeant(written);
  if (!meant) meant = lexed;
  if (!meant) return 0;
  diags.report(DiagID::err_misspelled_unit, at).fixit(at, meant->name) << written << meant->name;
  return span;
}

} // namespace

bool parser::checkTokens(antlr4::CommonTokenStream &tokens, const Positions &pos, DiagnosticEngine &diags,
                         const ParseLimits &limits) {
  bool ok = true;
  unsigned prefixRun = 0;
  std::vector<antlr4::Token *> open; // unclosed brackets, innermost last
  const std::vector<antlr4::Token *> all = tokens.getTokens();
  for (size_t i = 0; i < all.size(); ++i) {
    antlr4::Token *t = all[i];
    if (size_t span = checkUnit(all, i, pos, diags)) {
      ok = false;
      if (diags.hitErrorLimit()) return false;
      i += span;
      continue;
    }
    if (t->getType() == antlr4::Token::EOF) {
      if (!open.empty() && ok) {
        std::string opener = open.back()->getText();
        diags.report(DiagID::err_unexpected_eof, pos.range(t))
            .note(DiagID::note_to_match, pos.range(open.back()), {opener})
            << ("'" + closerOf(opener) + "'");
        return false;
      }
      break;
    }
    std::string text = t->getText();
    if (t->getType() == PlanLexer::BLOCK_COMMENT) {
      if (text.size() < 4 || text.compare(text.size() - 2, 2, "*/") != 0) {
        SMRange r = pos.range(t);
        diags.report(DiagID::err_unterminated_comment, SMRange(r.Start, SMLoc::getFromPointer(r.Start.getPointer() + 2)));
        ok = false;
      }
      continue;
    }
    if (t->getType() == PlanLexer::BAD_CHAR) {
      if (text == "\"") {
        diags.report(DiagID::err_unterminated_string, pos.range(t));
      } else {
        std::string shown = text == "'" ? "\"'\"" : "'" + text + "'";
        diags.report(DiagID::err_invalid_character, pos.range(t)) << shown;
      }
      ok = false;
      if (diags.hitErrorLimit()) return false;
      continue;
    }
    if (isOpen(text)) {
      open.push_back(t);
      if (open.size() > limits.maxBracketDepth) {
        diags.report(DiagID::err_nesting_too_deep, pos.range(t)) << int64_t(limits.maxBracketDepth);
        return false;
      }
    } else if (isClose(text)) {
      if (open.empty()) {
        diags.report(DiagID::err_extraneous_token, pos.range(t)) << ("'" + text + "' with no opening bracket");
        return false;
      }
      std::string want = closerOf(open.back()->getText());
      if (text != want) {
        diags.report(DiagID::err_unexpected_token, pos.range(t))
            .note(DiagID::note_to_match, pos.range(open.back()), {open.back()->getText()})
            << ("'" + text + "'") << ("'" + want + "'");
        return false;
      }
      open.pop_back();
    }
    // Prefix operators recurse in the parser too: `- - - - x`.
    if (text == "-" || text == "not") {
      if (++prefixRun > limits.maxBracketDepth) {
        diags.report(DiagID::err_expr_too_deep, pos.range(t)) << int64_t(limits.maxBracketDepth);
        return false;
      }
    } else {
      prefixRun = 0;
    }
  }
  return ok;
}

