//===- frontend/DirectParserImpl.h - the direct parser's class --*- C++ -*-===//
//
// Private to DirectParser*.cpp: the parser over raw tokens, its declarations
// and statements in DirectParser.cpp, its expressions in DirectParserExpr.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_DIRECTPARSERIMPL_H
#define PLANC_FRONTEND_DIRECTPARSERIMPL_H

#include "frontend/AST.h"
#include "frontend/Parser.h"
#include "frontend/RawTokens.h"

#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace planc::parser::direct {

using llvm::SMLoc;
using llvm::SMRange;

/// The text is not one the direct parser handles; the ANTLR path takes it.
struct NotHandled {};

/// The precedences of ANTLR's rewrite of `expr` (11 alternatives).
enum Prec : unsigned {
  PrecOr = 2, PrecAnd = 3, PrecNot = 4, PrecCmp = 5, PrecAdd = 6, PrecMul = 7,
  PrecNeg = 8, PrecMember = 9, PrecNamed = 10, PrecAnnotated = 11,
};

/// An expression and the depth of ANTLR's expression contexts it spans, as
/// ParserAST.cpp's builder counts them against ParseLimits::maxExprDepth.
struct Built {
  ast::ExprPtr expr;
  unsigned height = 0;
};

class DirectParser {
public:
  DirectParser(llvm::StringRef text, const ParseLimits &limits) : text(text), limits(limits) {}
  /// The file's AST; throws NotHandled.
  std::unique_ptr<ast::SourceFile> run();

private:
  // Tokens
  llvm::StringRef textOf(const RawToken &t) const { return text.slice(t.begin, t.end); }
  const RawToken &peek(size_t ahead = 0) const { return toks[std::min(i + ahead, toks.size() - 1)]; }
  bool punct(llvm::StringRef s, size_t ahead = 0) const {
    const RawToken &t = peek(ahead);
    return t.kind == RawToken::Punct && textOf(t) == s;
  }
  bool keyword(llvm::StringRef s, size_t ahead = 0) const {
    const RawToken &t = peek(ahead);
    return t.kind == RawToken::Keyword && textOf(t) == s;
  }

  /// grammar's `name`: IDENT, SCHEDULE_1F1B, or a keyword usable as a name.
  bool isName(size_t ahead = 0) const {
    const RawToken &t = peek(ahead);
    if (t.kind == RawToken::Ident || t.kind == RawToken::Schedule1F1B) return true;
    if (t.kind != RawToken::Keyword) return false;
    llvm::StringRef s = textOf(t);
    return s == "model" || s == "layer" || s == "train" || s == "cluster" || s == "parallel" || s == "enum" ||
           s == "input" || s == "param" || s == "names";
  }

  const RawToken &take() {
    if (peek().kind == RawToken::End) throw NotHandled();
    return toks[i++];
  }

  void expectPunct(llvm::StringRef s) {
    if (!punct(s)) throw NotHandled();
    ++i;
  }

  void expectKeyword(llvm::StringRef s) {
    if (!keyword(s)) throw NotHandled();
    ++i;
  }

  SMRange rangeOf(const RawToken &t) const {
    return {SMLoc::getFromPointer(text.data() + t.begin), SMLoc::getFromPointer(text.data() + t.end)};
  }

  /// The range of a rule that began at token `start` and ends with the last token taken.
  SMRange spanFrom(size_t start) const {
    return {SMLoc::getFromPointer(text.data() + toks[start].begin),
            SMLoc::getFromPointer(text.data() + toks[i - 1].end)};
  }

  /// A `name`: its text and range.
  std::pair<std::string, SMRange> name() {
    if (!isName()) throw NotHandled();
    const RawToken &t = take();
    return {textOf(t).str(), rangeOf(t)};
  }

  /// An expression whose builder depth starts at `base`, within the limit.
  ast::ExprPtr exprAt(unsigned base) {
    Built b = expr(0);
    if (base + b.height > limits.maxExprDepth) throw NotHandled();
    return std::move(b.expr);
  }
  /// Whether the token ahead can follow a whole setting: ',' (its own), the
  /// next setting or name rule, or the block's '}'.
  bool endsSetting() const { return punct(",") || punct("}") || isName() || peek().kind == RawToken::String; }

  /// Lexes, and gives up on every token-level finding of ParserTokens.cpp's
  /// checkTokens (or a superset of them): bad characters, unterminated
  /// comments, brackets that do not pair or nest too deep, long runs of
  /// prefix operators, and any number followed on its line by a word (a
  /// possibly misspelled unit). Block comments are dropped.
  void scanTokens();
  ast::ImportDecl importDecl();
  std::unique_ptr<ast::ModelDecl> modelDecl();
  std::unique_ptr<ast::LayerDecl> layerDecl();
  ast::LayerParam layerParam();
  ast::TensorType tensorType(unsigned base);
  /// `annotation`; `argHeight` the deepest of its arguments.
  ast::Annotation annotation(unsigned &argHeight);
  /// `annotation*` of an input or param, built at `depth`.
  std::vector<ast::Annotation> annotations(unsigned depth);
  /// `bodyItem*` up to the closing '}' (not taken); `depth` is the number of
  /// statements around it, which the builder counts with expressions.
  ast::Body body(unsigned depth);
  /// A `stmt` the builder counts at `depth`.
  ast::ItemPtr stmt(unsigned depth);
  std::unique_ptr<ast::NamesDecl> namesDecl();
  std::unique_ptr<ast::ConfigBlock> configBlock();
  ast::SettingPtr setting();
  /// `key(args)`, taken when what follows ends the setting. `key (x)` also
  /// parses as a wordSetting with a parenthesised value; ANTLR resolves
  /// that ambiguity to the lower alternative, argsSetting. When the `(...)`
  /// is not a whole argument list, or an expression goes on after it, the
  /// tokens are left for the expression forms.
  bool argsSetting(ast::Setting &s);
  void nestedSettings(ast::Setting &s);
  /// `(arg (',' arg)* ','?)? ')'`, the '(' taken; `height` the deepest argument.
  std::vector<ast::Arg> argList(unsigned &height);
  ast::Arg arg(unsigned &height);
  /// ANTLR's `expr(minPrec)`.
  Built expr(unsigned minPrec);
  /// A `primary` as the expression context around it (one level).
  Built primary();

  llvm::StringRef text;
  const ParseLimits &limits;
  std::vector<RawToken> toks; // the parser's tokens: no comments, End last
  size_t i = 0;               // the next token
  unsigned recursion = 0;     // of expr(): bounded, as the builder's depth is
};

} // namespace planc::parser::direct

#endif
