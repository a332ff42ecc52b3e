//===- ir/Parser.cpp - reading the textual IR ----------------------------===//
//
// Recursive descent over the grammar in docs/ir.md. The grammar has no
// nesting deeper than a list inside an op line, so no function here recurses
// and input size alone bounds the work. Types, attributes and locations are
// read by ir/TextParser.h, which other text forms share.
//
//===----------------------------------------------------------------------===//

#include "ir/Parser.h"
#include "ir/StepOutputs.h"
#include "ir/TextParser.h"
#include "support/Plural.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

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

class Parser : public TextParser {
public:
  Parser(const llvm::SourceMgr &sm, unsigned bufferId) : TextParser(sm, bufferId) {}

  llvm::Expected<std::unique_ptr<Module>> run() {
    if (!parseModule()) return llvm::make_error<IRParseError>(std::move(diags));
    return std::move(module);
  }

private:
  bool parseModule();
  bool parseMesh();
  bool parseParam();
  bool parseInput();
  bool parseOp();
  bool parseReturn();
  bool parseOperand(Value *&v);
  bool defineName(const Token &nameTok);

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
  bool seenInit = false, seenFrozen = false, seenDecay = false, seenPath = false, seenLoc = false;
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
    } else if (tok.isWord("weight_decay") || tok.isWord("no_weight_decay")) {
      if (seenDecay) return error(tok, "'weight_decay' or 'no_weight_decay' given twice");
      seenDecay = true;
      p->weightDecay = tok.isWord("weight_decay");
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
      return expected("a type for each of the " + counted(int64_t(resultToks.size()), "result"));
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

} // namespace

llvm::Expected<std::unique_ptr<Module>> ir::parseIR(const llvm::SourceMgr &sm, unsigned bufferId) {
  return Parser(sm, bufferId).run();
}

llvm::Expected<std::unique_ptr<Module>> ir::parseIR(llvm::StringRef text, llvm::StringRef bufferName) {
  llvm::SourceMgr sm;
  unsigned id = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, bufferName), llvm::SMLoc());
  return parseIR(sm, id);
}
