//===- ir/Parser.cpp - reading the textual IR ----------------------------===//
//
// Recursive descent over the grammar in docs/ir.md. The grammar has no
// nesting deeper than a list inside an op line, so no function here recurses
// and input size alone bounds the work.
//
//===----------------------------------------------------------------------===//

#include "ir/Parser.h"
#include "ir/Lexer.h"
#include "ir/StepOutputs.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>

using namespace planc;
using namespace planc::ir;

char IRParseError::ID = 0;

void IRParseError::log(llvm::raw_ostream &os) const {
  for (size_t i = 0; i < diagnostics.size(); ++i) {
    std::string s;
    llvm::raw_string_ostream ss(s);
    diagnostics[i].print(nullptr, ss, /*ShowColors=*/false);
    // Error messages conventionally end without a newline.
    os << (i + 1 == diagnostics.size() ? llvm::StringRef(ss.str()).rtrim('\n') : ss.str());
  }
}

std::error_code IRParseError::convertToErrorCode() const { return llvm::inconvertibleErrorCode(); }

namespace {

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

std::string didYouMean(const std::string &match, llvm::StringRef prefix = "") {
  return match.empty() ? "" : "; did you mean '" + prefix.str() + match + "'?";
}

class Parser {
public:
  Parser(const llvm::SourceMgr &sm, unsigned bufferId)
      : sm(sm), lexer(sm.getMemoryBuffer(bufferId)->getBuffer()) {
    tok = lexer.next();
  }

  llvm::Expected<std::unique_ptr<Module>> run() {
    if (!parseModule()) return llvm::make_error<IRParseError>(std::move(diags));
    return std::move(module);
  }

private:
  // ---- diagnostics
  bool error(const Token &at, const llvm::Twine &msg) { return error(at.loc(), at.spelling.size(), msg); }
  bool error(llvm::SMLoc loc, size_t length, const llvm::Twine &msg) {
    llvm::SMRange range(loc, llvm::SMLoc::getFromPointer(loc.getPointer() + length));
    diags.push_back(sm.GetMessage(loc, llvm::SourceMgr::DK_Error, msg, length ? llvm::makeArrayRef(range) : llvm::None));
    return false;
  }
  void note(llvm::SMLoc loc, const llvm::Twine &msg) {
    diags.push_back(sm.GetMessage(loc, llvm::SourceMgr::DK_Note, msg));
  }
  /// "expected X" at the current token, naming what was found instead.
  bool expected(const llvm::Twine &what) {
    if (tok.is(Token::Error)) return error(tok, tok.text);
    std::string found = tok.is(Token::Eof) ? "end of input" : "'" + tok.spelling.str() + "'";
    return error(tok, "expected " + what + ", found " + found);
  }

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

  // ---- grammar
  bool parseModule();
  bool parseMesh();
  bool parseParam();
  bool parseInput();
  bool parseOp();
  bool parseReturn();
  bool parseType(TensorType &type);
  bool parseSharding(TensorType &type);
  bool parseAxes(std::vector<MeshAxis> &axes);
  bool parseAttrDict(AttrMap &attrs);
  bool parseAttrValue(Attr &value);
  bool parseInt(int64_t &value, const char *what);
  bool parseLocation(Location &loc);
  bool parseOperand(Value *&v);
  bool defineName(const Token &nameTok);

  const llvm::SourceMgr &sm;
  Lexer lexer;
  Token tok;
  std::vector<llvm::SMDiagnostic> diags;
  std::unique_ptr<Module> module = std::make_unique<Module>();
  llvm::StringMap<llvm::SMLoc> definedAt; // for "previous definition" notes
};

bool Parser::parseModule() {
  if (!expectWord("module")) return false;
  if (!tok.is(Token::ModuleName)) return expected("a module name such as '@model'");
  module->name = tok.text;
  consume();
  if (tok.isWord("mesh") && !parseMesh()) return false;
  if (!expect(Token::LBrace)) return false;
  bool returned = false;
  while (!tok.is(Token::RBrace)) {
    if (returned) return expected("'}' after 'return'");
    bool ok;
    if (tok.isWord("param")) ok = parseParam();
    else if (tok.isWord("input")) ok = parseInput();
    else if (tok.isWord("return")) {
      ok = parseReturn();
      returned = true;
    }
    else if (tok.is(Token::ValueName) || tok.is(Token::Word)) ok = parseOp();
    else ok = expected("'param', 'input', an op or 'return'");
    if (!ok) return false;
  }
  consume();
  if (!tok.is(Token::Eof)) return expected("end of input after the module");
  return true;
}

bool Parser::parseMesh() {
  consume(); // mesh
  if (!expect(Token::LParen)) return false;
  bool seen[kNumMeshAxes] = {};
  do {
    Token axisTok = tok;
    std::optional<MeshAxis> axis = tok.is(Token::Word) ? parseMeshAxis(tok.spelling) : std::nullopt;
    if (!axis) return expected("a mesh axis (dp, pp, tp, cp or ep)");
    if (seen[unsigned(*axis)]) return error(axisTok, "mesh axis '" + axisTok.spelling + "' given twice");
    seen[unsigned(*axis)] = true;
    consume();
    int64_t size;
    if (!expect(Token::Equal)) return false;
    Token sizeTok = tok;
    if (!parseInt(size, "a mesh axis size")) return false;
    if (size < 1) return error(sizeTok, "a mesh axis has at least one device");
    module->mesh[unsigned(*axis)] = size;
  } while (consumeIf(Token::Comma));
  return expect(Token::RParen);
}

bool Parser::defineName(const Token &nameTok) {
  // The module numbers unnamed values itself, so an empty name cannot be kept.
  if (nameTok.text.empty()) return error(nameTok, "a value name is not empty");
  if (module->lookup(nameTok.text)) {
    error(nameTok, "redefinition of value '" + nameTok.spelling + "'");
    auto it = definedAt.find(nameTok.text);
    if (it != definedAt.end()) note(it->second, "previous definition is here");
    return false;
  }
  definedAt[nameTok.text] = nameTok.loc();
  return true;
}

bool Parser::parseParam() {
  consume(); // param
  Token nameTok = tok;
  if (!tok.is(Token::ValueName)) return expected("a parameter name such as '%w'");
  if (!defineName(nameTok)) return false;
  consume();
  TensorType type;
  if (!expect(Token::Colon) || !parseType(type)) return false;
  Value *p = module->addParam(nameTok.text, std::move(type));
  // Clauses in any order, each at most once.
  bool seenInit = false, seenFrozen = false, seenPath = false, seenLoc = false;
  auto once = [&](bool &seen) {
    if (seen) return error(tok, "'" + tok.spelling + "' given twice");
    seen = true;
    return true;
  };
  while (true) {
    if (tok.isWord("init")) {
      if (!once(seenInit)) return false;
      consume();
      Token kindTok = tok;
      if (tok.isWord("zeros") || tok.isWord("ones")) {
        p->init = tok.isWord("zeros") ? InitKind::Zeros : InitKind::Ones;
        consume();
        continue;
      }
      if (!tok.isWord("normal") && !tok.isWord("scaled_normal"))
        return expected("'normal(std)', 'scaled_normal(std)', 'zeros' or 'ones'");
      p->init = tok.isWord("normal") ? InitKind::Normal : InitKind::ScaledNormal;
      consume();
      if (!expect(Token::LParen)) return false;
      Token stdTok = tok;
      Attr std;
      if (!parseAttrValue(std)) return false;
      if (auto *d = std::get_if<double>(&std)) p->initStd = *d;
      else if (auto *i = std::get_if<int64_t>(&std)) p->initStd = double(*i);
      else return error(stdTok, "expected the standard deviation, a number");
      if (!(p->initStd >= 0) || std::isinf(p->initStd))
        return error(stdTok, "a standard deviation is finite and not negative");
      if (!expect(Token::RParen)) return false;
    } else if (tok.isWord("frozen")) {
      if (!once(seenFrozen)) return false;
      p->frozen = true;
      consume();
    } else if (tok.isWord("path")) {
      if (!once(seenPath)) return false;
      consume();
      if (!tok.is(Token::String)) return expected("a quoted path");
      p->path = tok.text;
      consume();
    } else if (tok.isWord("loc")) {
      if (!once(seenLoc) || !parseLocation(p->loc)) return false;
    } else {
      return true;
    }
  }
}

bool Parser::parseInput() {
  consume(); // input
  Token nameTok = tok;
  if (!tok.is(Token::ValueName)) return expected("an input name such as '%tokens'");
  if (!defineName(nameTok)) return false;
  consume();
  TensorType type;
  if (!expect(Token::Colon) || !parseType(type)) return false;
  Value *in = module->addInput(nameTok.text, std::move(type));
  bool seenPath = false, seenLoc = false;
  while (true) {
    if (tok.isWord("path")) {
      if (seenPath) return error(tok, "'path' given twice");
      seenPath = true;
      consume();
      if (!tok.is(Token::String)) return expected("a quoted path");
      in->path = tok.text;
      consume();
    } else if (tok.isWord("loc")) {
      if (seenLoc) return error(tok, "'loc' given twice");
      seenLoc = true;
      if (!parseLocation(in->loc)) return false;
    } else {
      return true;
    }
  }
}

bool Parser::parseOperand(Value *&v) {
  if (!tok.is(Token::ValueName)) return expected("an operand such as '%x'");
  v = module->lookup(tok.text);
  if (!v) {
    std::vector<llvm::StringRef> names;
    for (const auto &entry : definedAt) names.push_back(entry.getKey());
    return error(tok, "use of undefined value '" + tok.spelling + "'" + didYouMean(closestMatch(tok.text, names), "%"));
  }
  consume();
  return true;
}

bool Parser::parseOp() {
  std::vector<Token> resultToks;
  if (tok.is(Token::ValueName)) {
    do {
      if (!tok.is(Token::ValueName)) return expected("a result name such as '%y'");
      for (const Token &r : resultToks)
        if (r.text == tok.text) return error(tok, "value '" + tok.spelling + "' defined twice by one op");
      if (!defineName(tok)) return false;
      resultToks.push_back(tok);
      consume();
    } while (consumeIf(Token::Comma));
    if (!expect(Token::Equal)) return false;
  }
  Token kindTok = tok;
  if (!tok.is(Token::Word)) return expected("an op name");
  std::optional<OpKind> kind = parseOpKind(tok.spelling);
  if (!kind) {
    std::vector<llvm::StringRef> names;
    for (unsigned k = 0; k < unsigned(OpKind::NumOps); ++k) names.push_back(spelling(OpKind(k)));
    return error(tok, "unknown op '" + tok.spelling + "'" + didYouMean(closestMatch(tok.spelling, names)));
  }
  consume();

  std::vector<Value *> operands;
  if (!expect(Token::LParen)) return false;
  if (!tok.is(Token::RParen)) {
    do {
      Value *v;
      if (!parseOperand(v)) return false;
      operands.push_back(v);
    } while (consumeIf(Token::Comma));
  }
  if (!expect(Token::RParen)) return false;

  AttrMap attrs;
  if (tok.is(Token::LBrace) && !parseAttrDict(attrs)) return false;

  std::vector<TensorType> types;
  if (!resultToks.empty()) {
    if (!expect(Token::Colon)) return false;
    do {
      Token typeTok = tok;
      if (types.size() == resultToks.size())
        return error(typeTok, "more result types than results (" + llvm::Twine(resultToks.size()) + ")");
      types.emplace_back();
      if (!parseType(types.back())) return false;
    } while (consumeIf(Token::Comma));
    if (types.size() != resultToks.size())
      return expected("a type for each of the " + llvm::Twine(resultToks.size()) + " results");
  }

  Location loc;
  std::string path;
  bool seenPath = false, seenLoc = false;
  while (true) {
    if (tok.isWord("path")) {
      if (seenPath) return error(tok, "'path' given twice");
      seenPath = true;
      consume();
      if (!tok.is(Token::String)) return expected("a quoted path");
      path = tok.text;
      consume();
    } else if (tok.isWord("loc")) {
      if (seenLoc) return error(tok, "'loc' given twice");
      seenLoc = true;
      if (!parseLocation(loc)) return false;
    } else {
      break;
    }
  }

  std::string firstName = resultToks.empty() ? "" : resultToks[0].text;
  Op *op = module->append(*kind, std::move(operands), std::move(types), std::move(attrs), firstName);
  op->loc = std::move(loc);
  op->path = std::move(path);
  // append() names the results after the first one; give each its own name.
  // Every name is free (checked above), and renaming in order frees each
  // placeholder before a later result could want it.
  for (size_t i = 0; i < resultToks.size(); ++i)
    if (!module->rename(op->results[i], resultToks[i].text))
      return error(resultToks[i], "cannot name result '" + resultToks[i].spelling + "'");
  return true;
}

bool Parser::parseReturn() {
  consume(); // return
  if (!tok.is(Token::ValueName)) return true;
  do {
    Value *v;
    if (!parseOperand(v) || !expectWord("as")) return false;
    if (!tok.is(Token::String)) return expected("the output's name as a quoted string");
    module->outputs.push_back({tok.text, v});
    consume();
  } while (consumeIf(Token::Comma));
  // The text names the outputs only; their roles follow from the names.
  rolesFromNames(*module);
  return true;
}

bool Parser::parseType(TensorType &type) {
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

bool Parser::parseAxes(std::vector<MeshAxis> &axes) {
  do {
    std::optional<MeshAxis> axis = tok.is(Token::Word) ? parseMeshAxis(tok.spelling) : std::nullopt;
    if (!axis) return expected("a mesh axis (dp, pp, tp, cp or ep)");
    axes.push_back(*axis);
    consume();
  } while (consumeIf(Token::Plus));
  return true;
}

bool Parser::parseSharding(TensorType &type) {
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

bool Parser::parseAttrDict(AttrMap &attrs) {
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

bool Parser::parseInt(int64_t &value, const char *what) {
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

bool Parser::parseAttrValue(Attr &value) {
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
    consume();
    std::vector<int64_t> list;
    if (!tok.is(Token::RBracket)) {
      do {
        int64_t i;
        if (!parseInt(i, "an integer")) return false;
        list.push_back(i);
      } while (consumeIf(Token::Comma));
    }
    if (!expect(Token::RBracket)) return false;
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

bool Parser::parseLocation(Location &loc) {
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

} // namespace

llvm::Expected<std::unique_ptr<Module>> ir::parseIR(const llvm::SourceMgr &sm, unsigned bufferId) {
  return Parser(sm, bufferId).run();
}

llvm::Expected<std::unique_ptr<Module>> ir::parseIR(llvm::StringRef text, llvm::StringRef bufferName) {
  llvm::SourceMgr sm;
  unsigned id = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, bufferName), llvm::SMLoc());
  return parseIR(sm, id);
}
