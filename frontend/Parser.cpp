//===- frontend/Parser.cpp - .plan text to AST ---------------------------===//
//
// Order of work, each step guarding the next:
//  1. the bytes (SourceBytes.cpp): NUL (a binary file) and invalid UTF-8,
//     which ANTLR's input stream would throw on;
//  2. the direct parser (DirectParser.cpp), the fast path: it builds the AST
//     of a text without errors straight from the tokens, and gives up,
//     reporting nothing, on anything else; then, for what it gave up on,
//  3. the tokens: characters no rule matches, unterminated strings and comments,
//     and nesting deep enough to exhaust the recursive-descent parser's stack;
//  4. the parse: SLL first (fast), LL with planc's error reporting on failure;
//  5. the AST: built only from a parse without errors, with a depth limit.
// The token checks are in ParserTokens.cpp, the AST builder in ParserAST.cpp.
//
//===----------------------------------------------------------------------===//

#include "frontend/Parser.h"
#include "frontend/DirectParser.h"
#include "frontend/FastLexer.h"
#include "frontend/ParserImpl.h"
#include "frontend/SourceBytes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdlib>
#include <set>

using namespace planc;
using namespace planc::parser;

namespace {

//===----------------------------------------------------------------------===//
// Token names for messages
//===----------------------------------------------------------------------===//

std::string describeToken(const antlr4::Token *t) {
  if (!t || t->getType() == antlr4::Token::EOF) return "end of file";
  std::string text = t->getText();
  if (text.size() > 32) text = text.substr(0, 29) + "...";
  switch (t->getType()) {
  case PlanLexer::IDENT: return "name '" + text + "'";
  case PlanLexer::NUMBER: return "number '" + text + "'";
  case PlanLexer::QUANTITY: return "quantity '" + text + "'";
  case PlanLexer::STRING: return "string " + text;
  case PlanLexer::ANNOTATION: return "annotation '" + text + "'";
  default: return "'" + text + "'";
  }
}

/// "'}' or a name" from ANTLR's expected set, collapsed so it stays readable.
std::string describeExpected(const antlr4::misc::IntervalSet &set, const antlr4::dfa::Vocabulary &vocab) {
  std::vector<ssize_t> types;
  for (ssize_t t : set.toList()) types.push_back(t);
  auto has = [&](ssize_t t) { return std::find(types.begin(), types.end(), t) != types.end(); };
  std::set<std::string> names;
  bool nameOk = has(PlanLexer::IDENT);
  bool exprOk = nameOk && has(PlanLexer::NUMBER) && has(PlanLexer::STRING);
  for (ssize_t t : types) {
    std::string display = vocab.getDisplayName(t);
    if (t == ssize_t(antlr4::Token::EOF)) { names.insert("end of file"); continue; }
    if (t == PlanLexer::IDENT) { names.insert(exprOk ? "an expression" : "a name"); continue; }
    if (exprOk && (t == PlanLexer::NUMBER || t == PlanLexer::QUANTITY || t == PlanLexer::STRING ||
                   display == "'('" || display == "'['" || display == "'-'" || display == "'not'" ||
                   display == "'true'" || display == "'false'"))
      continue;
    if (nameOk && (t == PlanLexer::SCHEDULE_1F1B || display == "'model'" || display == "'layer'" ||
                   display == "'train'" || display == "'cluster'" || display == "'parallel'" ||
                   display == "'enum'" || display == "'input'" || display == "'param'" ||
                   display == "'names'"))
      continue;
    if (t == PlanLexer::NUMBER) { names.insert("a number"); continue; }
    if (t == PlanLexer::QUANTITY) { names.insert("a quantity"); continue; }
    if (t == PlanLexer::STRING) { names.insert("a string"); continue; }
    if (t == PlanLexer::ANNOTATION) { names.insert("an annotation"); continue; }
    if (t == PlanLexer::BAD_CHAR) continue;
    names.insert(display);
  }
  if (names.empty()) return "something else";
  std::vector<std::string> list(names.begin(), names.end());
  if (list.size() > 6) {
    list.resize(5);
    list.push_back("...");
  }
  std::string out;
  for (size_t i = 0; i < list.size(); ++i) {
    if (i) out += i + 1 == list.size() ? " or " : ", ";
    out += list[i];
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Syntax errors as planc diagnostics
//===----------------------------------------------------------------------===//

/// ANTLR's recovery, with messages rewritten in planc's words and at most one
/// syntax error per line (a second one on a line is nearly always a cascade).
class PlanErrorStrategy : public antlr4::DefaultErrorStrategy {
public:
  PlanErrorStrategy(DiagnosticEngine &diags, const Positions &pos) : diags(diags), pos(pos) {}
  unsigned errors = 0;

protected:
  void reportNoViableAlternative(antlr4::Parser *p, const antlr4::NoViableAltException &e) override {
    emitUnexpected(p, e.getOffendingToken(), p->getExpectedTokens());
  }
  void reportInputMismatch(antlr4::Parser *p, const antlr4::InputMismatchException &e) override {
    emitUnexpected(p, e.getOffendingToken(), e.getExpectedTokens());
  }
  void reportFailedPredicate(antlr4::Parser *p, const antlr4::FailedPredicateException &e) override {
    emitUnexpected(p, e.getOffendingToken(), p->getExpectedTokens());
  }
  void reportUnwantedToken(antlr4::Parser *p) override {
    if (inErrorRecoveryMode(p)) return;
    beginErrorCondition(p);
    emitUnexpected(p, p->getCurrentToken(), getExpectedTokens(p));
  }
  void reportMissingToken(antlr4::Parser *p) override {
    if (inErrorRecoveryMode(p)) return;
    beginErrorCondition(p);
    antlr4::Token *current = p->getCurrentToken();
    antlr4::Token *previous = p->getTokenStream()->LT(-1);
    // The caret goes right after the previous token, where the missing one belongs.
    SMRange at = previous ? SMRange(pos.range(previous).End, pos.range(previous).End)
                          : pos.range(current);
    if (!allow(at)) return;
    diags.report(DiagID::err_missing_token, at)
        << describeExpected(getExpectedTokens(p), p->getVocabulary()) << describeToken(current);
    stopPastLimit();
  }

private:
  bool allow(SMRange at) {
    ++errors;
    if (!at.Start.isValid()) return true;
    auto &sm = diags.getSourceMgr();
    unsigned id = sm.FindBufferContainingLoc(at.Start);
    unsigned line = id ? sm.getLineAndColumn(at.Start, id).first : 0;
    if (line && line == lastLine) return false;
    lastLine = line;
    return true;
  }
  void emitUnexpected(antlr4::Parser *p, antlr4::Token *token, const antlr4::misc::IntervalSet &expected) {
    SMRange at = pos.range(token);
    if (!allow(at)) return;
    std::string want = describeExpected(expected, p->getVocabulary());
    if (!token || token->getType() == antlr4::Token::EOF) {
      diags.report(DiagID::err_unexpected_eof, at) << want;
      return;
    }
    diags.report(DiagID::err_unexpected_token, at) << describeToken(token) << want;
    stopPastLimit();
  }
  /// Past the error limit nothing more is reported, so recovering through the
  /// rest of the file (100k broken lines) would be time spent for nothing.
  void stopPastLimit() {
    if (diags.hitErrorLimit()) throw antlr4::ParseCancellationException();
  }
  DiagnosticEngine &diags;
  const Positions &pos;
  unsigned lastLine = 0;
};

/// Everything one parse needs, alive together (ANTLR objects refer to each
/// other). The input is lexed once, by frontend/FastLexer.h, into a list the
/// token stream reads; the generated lexer is the tokens' source (their
/// vocabulary, their text).
struct ParseSession {
  explicit ParseSession(llvm::StringRef text) : text(text), input(text.str()), lexer(&input) {
    lexer.removeErrorListeners();
  }

  /// Lexes the whole input, stopping at the token past `maxTokens` (then
  /// false, with that token in `over`): a 10 MB generated expression is
  /// refused after the limit, not after millions of token objects. Then the
  /// token stream and the parser over the tokens, the stream filled.
  bool lex(size_t maxTokens, std::unique_ptr<antlr4::Token> *over = nullptr) {
    std::vector<std::unique_ptr<antlr4::Token>> list;
    if (!lexFast(text, &lexer, &input, maxTokens, list)) {
      if (over) *over = std::move(list.back());
      return false;
    }
    source = std::make_unique<antlr4::ListTokenSource>(std::move(list));
    tokenStream = std::make_unique<antlr4::CommonTokenStream>(source.get());
    tokenStream->fill();
    planParser = std::make_unique<PlanParser>(tokenStream.get());
    planParser->removeErrorListeners();
    return true;
  }
  antlr4::CommonTokenStream &tokens() { return *tokenStream; }
  PlanParser &parser() { return *planParser; }

  llvm::StringRef text; // the UTF-8 the input holds as code points
  antlr4::ANTLRInputStream input;
  PlanLexer lexer;
  std::unique_ptr<antlr4::ListTokenSource> source;
  std::unique_ptr<antlr4::CommonTokenStream> tokenStream;
  std::unique_ptr<PlanParser> planParser;
};

/// Runs a parser entry point twice if needed: SLL with bail-out (fast, right
/// for nearly every input), then full LL with planc's error reporting.
template <typename Entry>
auto parseTwoStage(ParseSession &s, PlanErrorStrategy &strategy, Entry entry) -> decltype(entry(s.parser())) {
  PlanParser &parser = s.parser();
  parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(antlr4::atn::PredictionMode::SLL);
  try {
    return entry(parser);
  } catch (antlr4::ParseCancellationException &) {
  }
  s.tokens().seek(0);
  parser.reset();
  parser.setErrorHandler(std::shared_ptr<antlr4::ANTLRErrorStrategy>(&strategy, [](auto *) {}));
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(antlr4::atn::PredictionMode::LL);
  try {
    return entry(parser);
  } catch (antlr4::ParseCancellationException &) {
    return nullptr; // the error limit was reached (PlanErrorStrategy::stopPastLimit)
  }
}


/// `PLANC_PARSER=antlr` in the environment turns the direct parser off, so
/// that tests can compare its ASTs with the ANTLR path's on the same files
/// (tests/e2e/parser-agree.sh); every caller of parseFile, imports included,
/// then takes the same path.
bool directParserEnabled() {
  const char *choice = std::getenv("PLANC_PARSER");
  return !choice || llvm::StringRef(choice) != "antlr";
}

} // namespace

std::unique_ptr<ast::SourceFile> planc::parseFile(llvm::SourceMgr &sm, unsigned bufferId,
                                                  DiagnosticEngine &diags, ParseLimits limits) {
  const llvm::MemoryBuffer *buffer = sm.getMemoryBuffer(bufferId);
  llvm::StringRef text = buffer->getBuffer();
  std::vector<uint32_t> cp;
  if (!checkBytes(text, buffer->getBufferIdentifier(), diags, cp)) return nullptr;
  // The fast path: the direct parser builds the AST without ANTLR, or gives
  // the text back (having reported nothing) for the ANTLR path to report on.
  if (directParserEnabled()) {
    if (auto file = parseFileDirect(text, limits)) {
      file->fileName = buffer->getBufferIdentifier().str();
      file->bufferId = bufferId;
      return file;
    }
  }
  Positions pos(text, cp);
  try {
    ParseSession s(text);
    std::unique_ptr<antlr4::Token> over;
    if (!s.lex(limits.maxTokens, &over)) {
      diags.report(DiagID::err_too_many_tokens, pos.range(over.get())) << uint64_t(limits.maxTokens);
      return nullptr;
    }
    if (!checkTokens(s.tokens(), pos, diags, limits)) return nullptr;
    PlanErrorStrategy strategy(diags, pos);
    auto *tree = parseTwoStage(s, strategy, [](PlanParser &p) { return p.file(); });
    if (strategy.errors || diags.hitErrorLimit()) return nullptr;
    auto file = buildFileAST(tree, pos, diags, limits);
    if (!file) return nullptr;
    file->fileName = buffer->getBufferIdentifier().str();
    file->bufferId = bufferId;
    return file;
  } catch (std::exception &e) {
    // ANTLR throws only on internal trouble; report it at the file, never abort.
    diags.report(DiagID::err_file_unreadable, SMLoc::getFromPointer(text.data()))
        << buffer->getBufferIdentifier() << std::string("parser failure: ") + e.what();
    return nullptr;
  }
}

bool planc::dumpTokens(llvm::SourceMgr &sm, unsigned bufferId, DiagnosticEngine &diags, llvm::raw_ostream &os) {
  const llvm::MemoryBuffer *buffer = sm.getMemoryBuffer(bufferId);
  llvm::StringRef text = buffer->getBuffer();
  std::vector<uint32_t> cp;
  if (!checkBytes(text, buffer->getBufferIdentifier(), diags, cp)) return false;
  Positions pos(text, cp);
  ParseSession s(text);
  s.lex(SIZE_MAX);
  const antlr4::dfa::Vocabulary &vocab = s.lexer.getVocabulary();
  for (antlr4::Token *t : s.tokens().getTokens()) {
    SMRange r = pos.range(t);
    auto [line, col] = sm.getLineAndColumn(r.Start, bufferId);
    std::string kind = t->getType() == antlr4::Token::EOF ? "EOF" : vocab.getSymbolicName(t->getType());
    // Literal tokens have no symbolic name: `model`, `repeat`, ... are keywords, the rest punctuation.
    if (kind.empty()) kind = std::isalpha((unsigned char)t->getText()[0]) ? "KEYWORD" : "PUNCT";
    os << line << ":" << col << " " << kind;
    if (t->getType() != antlr4::Token::EOF) os << " '" << t->getText() << "'";
    os << "\n";
  }
  return checkTokens(s.tokens(), pos, diags, ParseLimits());
}

std::unique_ptr<SetOverride> planc::parseSetOverride(llvm::StringRef text, llvm::SourceMgr &sm,
                                                     DiagnosticEngine &diags) {
  std::string name = ("<--set " + text + ">").str();
  unsigned id = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, name), SMLoc());
  llvm::StringRef buf = sm.getMemoryBuffer(id)->getBuffer();
  SMRange whole(SMLoc::getFromPointer(buf.begin()), SMLoc::getFromPointer(buf.end()));
  size_t eq = buf.find('=');
  if (eq == llvm::StringRef::npos || eq == 0) {
    diags.report(DiagID::err_set_syntax, whole) << text;
    return nullptr;
  }
  llvm::StringRef lhs = buf.substr(0, eq).trim();
  llvm::SmallVector<llvm::StringRef, 4> parts;
  lhs.split(parts, '.');
  auto result = std::make_unique<SetOverride>();
  result->text = text.str();
  SMRange lhsRange(SMLoc::getFromPointer(lhs.begin()), SMLoc::getFromPointer(lhs.end()));
  if (parts.size() < 2 || parts.size() > 3 || llvm::any_of(parts, [](llvm::StringRef p) { return p.empty(); })) {
    diags.report(DiagID::err_set_syntax, lhsRange) << text;
    return nullptr;
  }
  llvm::StringRef block = parts[0];
  if (block == "train") result->block = ast::ConfigBlock::Kind::Train;
  else if (block == "cluster") result->block = ast::ConfigBlock::Kind::Cluster;
  else if (block == "parallel") result->block = ast::ConfigBlock::Kind::Parallel;
  else {
    SMRange br(SMLoc::getFromPointer(block.begin()), SMLoc::getFromPointer(block.end()));
    diags.report(DiagID::err_set_block, br) << block;
    return nullptr;
  }
  for (size_t i = 1; i < parts.size(); ++i) result->path.push_back(parts[i].str());

  llvm::StringRef valueText = buf.substr(eq + 1);
  std::vector<uint32_t> cp;
  if (!checkBytes(buf, name, diags, cp)) return nullptr;
  // Parse the value alone, then shift its positions: the value starts after '='.
  size_t valueStartCp = 0;
  if (!cp.empty()) {
    while (valueStartCp < cp.size() && cp[valueStartCp] < eq + 1) ++valueStartCp;
  } else {
    valueStartCp = eq + 1;
  }
  std::vector<uint32_t> valueCp;
  if (!cp.empty())
    for (size_t i = valueStartCp; i < cp.size(); ++i) valueCp.push_back(cp[i] - uint32_t(eq + 1));
  Positions pos(valueText, valueCp);
  try {
    ParseSession s(valueText);
    s.lex(SIZE_MAX);
    if (!checkTokens(s.tokens(), pos, diags, ParseLimits())) return nullptr;
    PlanErrorStrategy strategy(diags, pos);
    auto *tree = parseTwoStage(s, strategy, [](PlanParser &p) { return p.singleExpr(); });
    if (strategy.errors) return nullptr;
    auto setting = std::make_unique<ast::Setting>();
    setting->form = ast::Setting::Form::Assign;
    setting->key = result->path.back();
    setting->keyRange = SMRange(SMLoc::getFromPointer(parts.back().begin()), SMLoc::getFromPointer(parts.back().end()));
    setting->range = whole;
    setting->origin = "--set";
    setting->value = buildExprAST(tree->expr(), pos, diags, ParseLimits());
    if (!setting->value) return nullptr;
    result->setting = std::move(setting);
    return result;
  } catch (std::exception &e) {
    diags.report(DiagID::err_set_syntax, whole) << text;
    return nullptr;
  }
}
