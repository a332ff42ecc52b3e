//===- frontend/ParserTokens.cpp - token-level checks before the parse ---===//
//
// The parser is recursive descent: brackets and prefix operators nested
// deep enough would exhaust its stack, so the token stream is checked first,
// and its bracket errors are reported better than ANTLR's recovery would.
//
//===----------------------------------------------------------------------===//

#include "frontend/ParserImpl.h"

#include <string>

using namespace planc;
using namespace planc::parser;

namespace {

bool isOpen(const std::string &t) { return t == "(" || t == "[" || t == "{"; }
bool isClose(const std::string &t) { return t == ")" || t == "]" || t == "}"; }
std::string closerOf(const std::string &open) { return open == "(" ? ")" : open == "[" ? "]" : "}"; }

} // namespace

bool parser::checkTokens(antlr4::CommonTokenStream &tokens, const Positions &pos, DiagnosticEngine &diags,
                         const ParseLimits &limits) {
  bool ok = true;
  unsigned prefixRun = 0;
  std::vector<antlr4::Token *> open; // unclosed brackets, innermost last
  for (antlr4::Token *t : tokens.getTokens()) {
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

