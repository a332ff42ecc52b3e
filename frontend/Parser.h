//===- frontend/Parser.h - .plan text to AST --------------------*- C++ -*-===//
//
// The only door from text to the AST. Parser*.cpp are the only files that
// see ANTLR's parser: they check the bytes (UTF-8, NUL, nesting), try the
// direct parser (DirectParser.h: the AST of a text without errors, without
// ANTLR), and where it gives up run the generated parser with errors turned
// into planc diagnostics, and build the AST.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_PARSER_H
#define PLANC_FRONTEND_PARSER_H

#include "frontend/AST.h"
#include "frontend/Config.h"
#include "support/Diagnostics.h"

#include "llvm/Support/raw_ostream.h"

#include <memory>

namespace llvm {
class SourceMgr;
}

namespace planc {

/// Limits that keep hostile input from exhausting the stack or the clock.
struct ParseLimits {
  unsigned maxBracketDepth = 200;
  unsigned maxExprDepth = 400;
  /// A real plan has a few thousand tokens; millions mean a generated or
  /// corrupted file, and the parser's time grows with them. 600,000 leaves
  /// room for the 100k-statement plans of tests/e2e/scaling.py.
  size_t maxTokens = 600000;
};

/// Parses the buffer `bufferId` of `sm`. Returns null if the text has syntax
/// errors (they are reported; no half-built tree reaches Sema).
std::unique_ptr<ast::SourceFile> parseFile(llvm::SourceMgr &sm, unsigned bufferId,
                                           DiagnosticEngine &diags, ParseLimits limits = {});

/// Prints one token a line: `line:col kind 'text'` (for `planc emit --emit=tokens`).
/// Returns false if the bytes themselves are invalid (reported).
bool dumpTokens(llvm::SourceMgr &sm, unsigned bufferId, DiagnosticEngine &diags,
                llvm::raw_ostream &os);

/// Parses `block.key[.arg]=value` from the command line into an override. The
/// text is added to `sm` as its own buffer so errors point into it.
std::unique_ptr<SetOverride> parseSetOverride(llvm::StringRef text, llvm::SourceMgr &sm,
                                              DiagnosticEngine &diags);

} // namespace planc

#endif
