//===- frontend/ParserImpl.h - what the parser's files share ----*- C++ -*-===//
//
// Private to Parser*.cpp: the map from ANTLR's token positions to source
// ranges, the token-level checks that run before the parse, and the builder
// of the AST from a parse tree without syntax errors.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_PARSERIMPL_H
#define PLANC_FRONTEND_PARSERIMPL_H

#include "frontend/AST.h"
#include "frontend/Parser.h"
#include "support/Diagnostics.h"

#include "PlanLexer.h"
#include "PlanParser.h"
#include "antlr4-runtime.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"

#include <algorithm>
#include <memory>
#include <vector>

namespace planc::parser {

using planc::grammar::PlanLexer;
using planc::grammar::PlanParser;
using llvm::SMLoc;
using llvm::SMRange;

/// Maps ANTLR token positions to source ranges.
class Positions {
public:
  Positions(llvm::StringRef text, const std::vector<uint32_t> &cp) : text(text), cp(cp) {}
  const char *at(size_t codePoint) const {
    if (cp.empty()) return text.data() + std::min(codePoint, text.size());
    return text.data() + cp[std::min(codePoint, cp.size() - 1)];
  }
  SMRange range(const antlr4::Token *t) const {
    if (!t) return {};
    if (t->getType() == antlr4::Token::EOF) {
      SMLoc end = SMLoc::getFromPointer(text.data() + text.size());
      return {end, end};
    }
    return {SMLoc::getFromPointer(at(t->getStartIndex())),
            SMLoc::getFromPointer(at(t->getStopIndex() + 1))};
  }
  SMRange range(antlr4::ParserRuleContext *ctx) const {
    if (!ctx || !ctx->getStart()) return {};
    SMRange first = range(ctx->getStart());
    SMRange last = ctx->getStop() ? range(ctx->getStop()) : first;
    if (last.End.getPointer() < first.Start.getPointer()) last = first;
    return {first.Start, last.End};
  }
  SMRange range(antlr4::tree::TerminalNode *node) const {
    return node ? range(node->getSymbol()) : SMRange();
  }
  /// A token's text: the UTF-8 bytes of the source it spans, copied once.
  std::string textOf(const antlr4::Token *t) const {
    SMRange r = range(t);
    return std::string(r.Start.getPointer(), r.End.getPointer());
  }

private:
  llvm::StringRef text;
  const std::vector<uint32_t> &cp;
};

/// Reports what the lexer could not make sense of, brackets that do not pair
/// up (with a note at the opener, as clang does: ANTLR's recovery guesses
/// worse), and nesting that would exhaust the parser's stack. Returns false if
/// parsing must not go on.
bool checkTokens(antlr4::CommonTokenStream &tokens, const Positions &pos, DiagnosticEngine &diags,
                 const ParseLimits &limits);

/// The AST of a file's parse tree, which is known to be free of syntax
/// errors; null after a diagnostic (an expression nested too deep, a number
/// out of range).
std::unique_ptr<ast::SourceFile> buildFileAST(PlanParser::FileContext *ctx, const Positions &pos,
                                              DiagnosticEngine &diags, const ParseLimits &limits);
/// The same for one expression (the value of a --set).
ast::ExprPtr buildExprAST(PlanParser::ExprContext *ctx, const Positions &pos, DiagnosticEngine &diags,
                          const ParseLimits &limits);

} // namespace planc::parser

#endif
