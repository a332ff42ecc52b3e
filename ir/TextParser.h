//===- ir/TextParser.h - the pieces of the IR text other forms embed -*- C++ -*-===//
//
// The token handling and diagnostics of ir/Parser.cpp and its parsers of the
// pieces a line of IR is made of: types with their shardings, attribute
// dictionaries and values, integers and locations. Other text forms that
// embed those pieces (the execution plan's, exec/PlanParser.h) derive from
// it, so they read them exactly as the IR does and report errors the same
// way: clang-style diagnostics at the offending token, collected in `diags`.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_TEXTPARSER_H
#define PLANC_IR_TEXTPARSER_H

#include "ir/IR.h"
#include "ir/Lexer.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/SourceMgr.h"

#include <string>
#include <vector>

namespace planc::ir {

/// The candidate closest to `name`, if close enough to be a likely typo.
template <typename Range> std::string closestMatch(llvm::StringRef name, const Range &candidates) {
  unsigned limit = std::max<unsigned>(1, (name.size() + 2) / 3);
  unsigned best = limit + 1;
  std::string match;
  for (llvm::StringRef c : candidates) {
    unsigned d = name.edit_distance(c, /*AllowReplacements=*/true, /*MaxEditDistance=*/limit);
    if (d < best) {
      best = d;
      match = c.str();
    }
  }
  return match;
}

/// "; did you mean '<prefix><match>'?", or "" without a match.
std::string didYouMean(const std::string &match, llvm::StringRef prefix = "");

class TextParser {
public:
  /// Reads buffer `bufferId` of `sm`; `execTokens` as ir/Lexer.h's.
  TextParser(const llvm::SourceMgr &sm, unsigned bufferId, bool execTokens = false);

protected:
  // ---- diagnostics: each returns false, so a parse function can `return error(...)`
  bool error(const Token &at, const llvm::Twine &msg) { return error(at.loc(), at.spelling.size(), msg); }
  bool error(llvm::SMLoc loc, size_t length, const llvm::Twine &msg);
  void note(llvm::SMLoc loc, const llvm::Twine &msg);
  /// "expected X" at the current token, naming what was found instead.
  bool expected(const llvm::Twine &what);

  // ---- tokens
  void consume() { tok = lexer.next(); }
  bool consumeIf(Token::Kind k) {
    if (!tok.is(k)) return false;
    consume();
    return true;
  }
  bool expect(Token::Kind k) { return consumeIf(k) || expected(describe(k)); }
  bool expectWord(llvm::StringRef w) {
    if (!tok.isWord(w)) return expected("'" + w + "'");
    consume();
    return true;
  }

  // ---- the embeddable pieces, as docs/ir.md spells them
  bool parseType(TensorType &type);             // f32[4, 64]{shard(1, tp)}
  bool parseAttrDict(AttrMap &attrs);           // {name = value, ...}, at the '{'
  bool parseAttrValue(Attr &value);
  bool parseInt(int64_t &value, const char *what);
  /// `[i, j, ...]` (possibly empty), appended to `list`.
  bool parseIntList(std::vector<int64_t> &list);
  bool parseLocation(Location &loc);            // loc("file":line:col), at 'loc'

  const llvm::SourceMgr &sm;
  Lexer lexer;
  Token tok;
  std::vector<llvm::SMDiagnostic> diags;

private:
  bool parseSharding(TensorType &type);
  bool parseAxes(std::vector<MeshAxis> &axes);
};

} // namespace planc::ir

#endif
