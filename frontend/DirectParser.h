//===- frontend/DirectParser.h - .plan text to AST without ANTLR -*- C++ -*-===//
//
// The fast path of frontend/Parser.cpp: a recursive-descent parser over the
// tokens of frontend/RawTokens.h that builds exactly the AST the ANTLR parse
// and ParserAST.cpp build for the same text (same nodes, ranges and
// annotation placement), without a parse tree. It reports nothing: on any
// text it does not fully handle -- a syntax error, a token or limit that
// ParserTokens.cpp or ParserAST.cpp would report, a choice it is not sure
// ANTLR makes the same way -- it returns null and the ANTLR path parses the
// text again and says what is wrong. tests/e2e/parser-agree.sh compares the
// two paths on every .plan file of the repository and on mutated ones.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_DIRECTPARSER_H
#define PLANC_FRONTEND_DIRECTPARSER_H

#include "frontend/AST.h"
#include "frontend/Parser.h"

#include "llvm/ADT/StringRef.h"

#include <memory>

namespace planc::parser {

/// The AST of the file `text` (valid UTF-8, checked by SourceBytes.h), or
/// null where the ANTLR path must parse it. Ranges point into `text`; the
/// caller sets the file's name and buffer.
std::unique_ptr<ast::SourceFile> parseFileDirect(llvm::StringRef text, const ParseLimits &limits);

} // namespace planc::parser

#endif
