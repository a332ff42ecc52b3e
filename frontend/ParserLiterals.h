//===- frontend/ParserLiterals.h - the values of literal tokens -*- C++ -*-===//
//
// Numbers, quantities and strings as the AST holds them, read the same way by
// both parsers (ParserAST.cpp from ANTLR's tree, DirectParser.cpp from the
// tokens), so that the two cannot differ on a literal's value; and the one
// rewrite of a parsed node both make (a repeat's count).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_PARSERLITERALS_H
#define PLANC_FRONTEND_PARSERLITERALS_H

#include "frontend/AST.h"

#include "llvm/ADT/StringRef.h"

#include <string>

namespace planc::parser {

/// What is wrong with a literal the grammar accepts; the caller reports it.
enum class LiteralError { None, IntegerTooLarge, NotFinite };

/// A string token's value: the quotes dropped, `\n` and `\t` read, any other
/// escaped character kept as itself.
std::string unescape(llvm::StringRef quoted);

/// Fills `n` (text, integer or float value) from a NUMBER token's text.
LiteralError readNumber(llvm::StringRef text, ast::NumberExpr &n);

/// Fills `q` (text, number, unit) from a QUANTITY token's text.
LiteralError readQuantity(llvm::StringRef text, ast::QuantityExpr &q);

/// A layer parameter's scalar type by its name: int, float, bool, dtype;
/// Unknown for any other name (Sema reports it).
ast::LayerParam::Kind scalarParamKind(llvm::StringRef typeName);

/// `repeat 12 as blocks @recompute { }`: the grammar reads the count's
/// postfix `as name` and annotations as the count expression's (Plan.g4
/// says why); they belong to the repeat. Moves them from `r.count` to
/// `r.label` and the front of `r.annotations`.
void takeRepeatCountPostfix(ast::RepeatItem &r);

} // namespace planc::parser

#endif
