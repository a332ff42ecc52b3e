//===- ir/TextParser.cpp - the pieces of the IR text other forms embed ---===//
//
// Moved out of ir/Parser.cpp unchanged, so the IR and every form that embeds
// its types, attributes and locations read them alike.
//
//===----------------------------------------------------------------------===//

#include "ir/TextParser.h"

#include "llvm/Support/MemoryBuffer.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>

using namespace planc;
using namespace planc::ir;

std::string ir::didYouMean(const std::string &match, llvm::StringRef prefix) {
  return match.empty() ? "" : "; did you mean '" + prefix.str() + match + "'?";
}

TextParser::TextParser(const llvm::SourceMgr &sm, unsigned bufferId, bool execTokens)
    : sm(sm), lexer(sm.getMemoryBuffer(bufferId)->getBuffer(), execTokens) {
  tok = lexer.next();
}

bool TextParser::error(llvm::SMLoc loc, size_t length, const llvm::Twine &msg) {
  llvm::SMRange range(loc, llvm::SMLoc::getFromPointer(loc.getPointer() + length));
  diags.push_back(sm.GetMessage(loc, llvm::SourceMgr::DK_Error, msg, length ? llvm::makeArrayRef(range) : llvm::None));
  return false;
}

void TextParser::note(llvm::SMLoc loc, const llvm::Twine &msg) {
  diags.push_back(sm.GetMessage(loc, llvm::SourceMgr::DK_Note, msg));
}

bool TextParser::expected(const llvm::Twine &what) {
  if (tok.is(Token::Error)) return error(tok, tok.text);
  std::string found = tok.is(Token::Eof) ? "end of input" : "'" + tok.spelling.str() + "'";
  return error(tok, "expected " + what + ", found " + found);
}

bool TextParser::parseType(TensorType &type) {
  Token dtypeTok = tok;
  if (!tok.is(Token::Word)) return expected("a type such as 'f32[4, 64]'");
  std::optional<DType> dtype = parseDType(tok.spelling);
  if (!dtype) {
    std::vector<llvm::StringRef> names;
    for (unsigned d = 0; d <= unsigned(DType::Bool); ++d) names.push_back(spelling(DType(d)));
    return error(tok, "unknown dtype '" + tok.spelling + "'" + didYouMean(closestMatch(tok.spelling, names)));
  }
  consume();
  Shape shape;
  if (!expect(Token::LBracket)) return false;
  if (!tok.is(Token::RBracket)) {
    do {
      Token dimTok = tok;
      int64_t d;
      if (!parseInt(d, "a dimension")) return false;
      if (d < 0) return error(dimTok, "a dimension is not negative");
      shape.push_back(d);
    } while (consumeIf(Token::Comma));
  }
  if (!expect(Token::RBracket)) return false;
  type = TensorType(std::move(shape), *dtype);
  if (tok.is(Token::LBrace)) return parseSharding(type);
  return true;
}

bool TextParser::parseAxes(std::vector<MeshAxis> &axes) {
  do {
    std::optional<MeshAxis> axis = tok.is(Token::Word) ? parseMeshAxis(tok.spelling) : std::nullopt;
    if (!axis) return expected("a mesh axis (dp, pp, tp, cp or ep)");
    axes.push_back(*axis);
    consume();
  } while (consumeIf(Token::Plus));
  return true;
}

bool TextParser::parseSharding(TensorType &type) {
  consume(); // {
  if (consumeIf(Token::RBrace)) return true;
  Sharding &s = type.sharding;
  bool seenPartial = false;
  do {
    Token entryTok = tok;
    if (tok.isWord("shard")) {
      consume();
      if (!expect(Token::LParen)) return false;
      Token dimTok = tok;
      int64_t dim;
      if (!parseInt(dim, "the sharded dimension")) return false;
      if (dim < 0 || uint64_t(dim) >= type.rank())
        return error(dimTok, "shard dimension " + llvm::Twine(dim) + " is out of range for a rank-" +
                                 llvm::Twine(type.rank()) + " value");
      if (!s.dims[dim].empty()) return error(dimTok, "dimension " + llvm::Twine(dim) + " is sharded twice");
      if (!expect(Token::Comma) || !parseAxes(s.dims[dim]) || !expect(Token::RParen)) return false;
    } else if (tok.isWord("partial")) {
      if (seenPartial) return error(entryTok, "'partial' given twice");
      seenPartial = true;
      consume();
      if (!expect(Token::LParen) || !parseAxes(s.partial) || !expect(Token::RParen)) return false;
    } else {
      return expected("'shard(dim, axes)' or 'partial(axes)'");
    }
  } while (consumeIf(Token::Comma));
  return expect(Token::RBrace);
}

bool TextParser::parseAttrDict(AttrMap &attrs) {
  consume(); // {
  if (consumeIf(Token::RBrace)) return true;
  do {
    Token keyTok = tok;
    std::string key;
    if (tok.is(Token::Word)) key = tok.spelling.str();
    else if (tok.is(Token::String)) key = tok.text;
    else return expected("an attribute name");
    if (attrs.count(key)) return error(keyTok, "attribute '" + key + "' given twice");
    consume();
    if (!expect(Token::Equal)) return false;
    Attr value;
    if (!parseAttrValue(value)) return false;
    attrs.emplace(std::move(key), std::move(value));
  } while (consumeIf(Token::Comma));
  return expect(Token::RBrace);
}

bool TextParser::parseInt(int64_t &value, const char *what) {
  if (!tok.is(Token::Integer)) return expected(what);
  llvm::StringRef digits = tok.spelling;
  bool negative = digits.consume_front("-");
  uint64_t magnitude;
  // getAsInteger fails on overflow; the magnitude of INT64_MIN is one more than INT64_MAX.
  if (digits.getAsInteger(10, magnitude) || magnitude > uint64_t(INT64_MAX) + negative)
    return error(tok, "integer '" + tok.spelling + "' does not fit in 64 bits");
  value = negative ? int64_t(0 - magnitude) : int64_t(magnitude);
  consume();
  return true;
}

bool TextParser::parseAttrValue(Attr &value) {
  switch (tok.kind) {
  case Token::Integer: {
    int64_t i;
    if (!parseInt(i, "an integer")) return false;
    value = i;
    return true;
  }
  case Token::Float: {
    // strtod rounds correctly, so the printer's shortest spelling reads back
    // to the same bits. A denormal sets ERANGE too; only overflow is an error.
    std::string text = tok.spelling.str();
    errno = 0;
    double d = std::strtod(text.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(d)) return error(tok, "float '" + tok.spelling + "' is out of range");
    value = d;
    consume();
    return true;
  }
  case Token::Minus:
    consume();
    if (!tok.isWord("inf")) return expected("a number after '-'");
    value = -HUGE_VAL;
    consume();
    return true;
  case Token::String:
    value = tok.text;
    consume();
    return true;
  case Token::LBracket: {
    std::vector<int64_t> list;
    if (!parseIntList(list)) return false;
    value = std::move(list);
    return true;
  }
  case Token::Word:
    if (tok.isWord("true") || tok.isWord("false")) value = tok.isWord("true");
    else if (tok.isWord("inf")) value = HUGE_VAL;
    else if (tok.isWord("nan")) value = std::nan("");
    else break;
    consume();
    return true;
  default: break;
  }
  return expected("an attribute value (integer, float, true, false, string or [integers])");
}

bool TextParser::parseLocation(Location &loc) {
  consume(); // loc
  if (!expect(Token::LParen)) return false;
  if (!tok.is(Token::String)) return expected("the quoted file name");
  loc.file = tok.text;
  consume();
  int64_t line, column;
  if (!expect(Token::Colon)) return false;
  Token lineTok = tok;
  if (!parseInt(line, "a line number")) return false;
  if (line < 1 || line > UINT_MAX) return error(lineTok, "line numbers start at 1 and fit in 32 bits");
  if (!expect(Token::Colon)) return false;
  Token columnTok = tok;
  if (!parseInt(column, "a column number")) return false;
  if (column < 0 || column > UINT_MAX) return error(columnTok, "a column number is not negative and fits in 32 bits");
  loc.line = unsigned(line);
  loc.column = unsigned(column);
  return expect(Token::RParen);
}

bool TextParser::parseIntList(std::vector<int64_t> &list) {
  if (!expect(Token::LBracket)) return false;
  if (!tok.is(Token::RBracket)) {
    do {
      int64_t i;
      if (!parseInt(i, "an integer")) return false;
      list.push_back(i);
    } while (consumeIf(Token::Comma));
  }
  return expect(Token::RBracket);
}
