//===- frontend/Parser.cpp - .plan text to AST (the one ANTLR file) ------===//
//
// Order of work, each step guarding the next:
//  1. the bytes (SourceBytes.cpp): NUL (a binary file) and invalid UTF-8,
//     which ANTLR's input stream would throw on;
//  2. the tokens: characters no rule matches, unterminated strings and comments,
//     and nesting deep enough to exhaust the recursive-descent parser's stack;
//  3. the parse: SLL first (fast), LL with planc's error reporting on failure;
//  4. the AST: built only from a parse without errors, with a depth limit.
//
//===----------------------------------------------------------------------===//

#include "frontend/Parser.h"
#include "frontend/SourceBytes.h"

#include "PlanLexer.h"
#include "PlanParser.h"
#include "antlr4-runtime.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SourceMgr.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

using namespace planc;
using planc::grammar::PlanLexer;
using planc::grammar::PlanParser;
using llvm::SMLoc;
using llvm::SMRange;

namespace {

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

private:
  llvm::StringRef text;
  const std::vector<uint32_t> &cp;
};

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
                   display == "'enum'" || display == "'input'" || display == "'param'"))
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
  }
  DiagnosticEngine &diags;
  const Positions &pos;
  unsigned lastLine = 0;
};

//===----------------------------------------------------------------------===//
// Token-level checks
//===----------------------------------------------------------------------===//

bool isOpen(const std::string &t) { return t == "(" || t == "[" || t == "{"; }
bool isClose(const std::string &t) { return t == ")" || t == "]" || t == "}"; }
std::string closerOf(const std::string &open) { return open == "(" ? ")" : open == "[" ? "]" : "}"; }

/// Reports what the lexer could not make sense of, brackets that do not pair
/// up (with a note at the opener, as clang does: ANTLR's recovery guesses
/// worse), and nesting that would exhaust the parser's stack. Returns false if
/// parsing must not go on.
bool checkTokens(antlr4::CommonTokenStream &tokens, const Positions &pos, DiagnosticEngine &diags,
                 const ParseLimits &limits) {
  bool ok = true;
  unsigned prefixRun = 0;
  std::vector<antlr4::Token *> open; // unclosed brackets, innermost last
  for (antlr4::Token *t : tokens.getTokens()) {
    if (t->getType() == antlr4::Token::EOF) {
      if (!open.empty() && ok) {
        std::string opener = open.back()->getText();
        diags.report(DiagID::err_unexpected_eof, pos.range(t))
            .note(DiagID::note_to_match, pos.range(open.back()), {opener})
            << ("'" + closerOf(opener) + "'");
        return false;
      }
      break;
    }
    std::string text = t->getText();
    if (t->getType() == PlanLexer::BLOCK_COMMENT) {
      if (text.size() < 4 || text.compare(text.size() - 2, 2, "*/") != 0) {
        SMRange r = pos.range(t);
        diags.report(DiagID::err_unterminated_comment, SMRange(r.Start, SMLoc::getFromPointer(r.Start.getPointer() + 2)));
        ok = false;
      }
      continue;
    }
    if (t->getType() == PlanLexer::BAD_CHAR) {
      if (text == "\"") {
        diags.report(DiagID::err_unterminated_string, pos.range(t));
      } else {
        std::string shown = text == "'" ? "\"'\"" : "'" + text + "'";
        diags.report(DiagID::err_invalid_character, pos.range(t)) << shown;
      }
      ok = false;
      if (diags.hitErrorLimit()) return false;
      continue;
    }
    if (isOpen(text)) {
      open.push_back(t);
      if (open.size() > limits.maxBracketDepth) {
        diags.report(DiagID::err_nesting_too_deep, pos.range(t)) << int64_t(limits.maxBracketDepth);
        return false;
      }
    } else if (isClose(text)) {
      if (open.empty()) {
        diags.report(DiagID::err_extraneous_token, pos.range(t)) << ("'" + text + "' with no opening bracket");
        return false;
      }
      std::string want = closerOf(open.back()->getText());
      if (text != want) {
        diags.report(DiagID::err_unexpected_token, pos.range(t))
            .note(DiagID::note_to_match, pos.range(open.back()), {open.back()->getText()})
            << ("'" + text + "'") << ("'" + want + "'");
        return false;
      }
      open.pop_back();
    }
    // Prefix operators recurse in the parser too: `- - - - x`.
    if (text == "-" || text == "not") {
      if (++prefixRun > limits.maxBracketDepth) {
        diags.report(DiagID::err_expr_too_deep, pos.range(t)) << int64_t(limits.maxBracketDepth);
        return false;
      }
    } else {
      prefixRun = 0;
    }
  }
  return ok;
}

//===----------------------------------------------------------------------===//
// Parse tree -> AST
//===----------------------------------------------------------------------===//

std::string unescape(const std::string &quoted) {
  std::string out;
  for (size_t i = 1; i + 1 < quoted.size(); ++i) {
    char c = quoted[i];
    if (c == '\\' && i + 2 < quoted.size()) {
      char n = quoted[++i];
      out += n == 'n' ? '\n' : n == 't' ? '\t' : n;
    } else {
      out += c;
    }
  }
  return out;
}

/// Builds the AST; the tree is known to be free of syntax errors.
class ASTBuilder {
public:
  ASTBuilder(const Positions &pos, DiagnosticEngine &diags, ParseLimits limits)
      : pos(pos), diags(diags), limits(limits) {}
  bool failed = false;

  std::unique_ptr<ast::SourceFile> buildFile(PlanParser::FileContext *ctx) {
    auto file = std::make_unique<ast::SourceFile>();
    for (auto *imp : ctx->importDecl()) {
      ast::ImportDecl decl;
      decl.range = pos.range(imp);
      if (auto *dotted = dynamic_cast<PlanParser::DottedImportContext *>(imp->importPath())) {
        for (auto *n : dotted->name()) {
          if (!decl.path.empty()) decl.path += ".";
          decl.path += n->getText();
        }
      } else if (auto *f = dynamic_cast<PlanParser::FileImportContext *>(imp->importPath())) {
        decl.isFile = true;
        decl.path = unescape(f->STRING()->getText());
      }
      file->imports.push_back(std::move(decl));
    }
    for (auto *top : ctx->topDecl()) {
      if (auto *m = top->modelDecl()) file->models.push_back(buildModel(m));
      else if (auto *l = top->layerDecl()) file->layers.push_back(buildLayer(l));
      else if (auto *b = top->configBlock()) file->blocks.push_back(buildBlock(b));
    }
    return file;
  }

  ast::ExprPtr buildExpr(PlanParser::ExprContext *ctx) {
    if (!ctx) return nullptr;
    if (++depth > limits.maxExprDepth) {
      if (!failed) diags.report(DiagID::err_expr_too_deep, pos.range(ctx->getStart())) << int64_t(limits.maxExprDepth);
      failed = true;
      --depth;
      return nullptr;
    }
    ast::ExprPtr e = buildExprInner(ctx);
    --depth;
    return e;
  }

private:
  std::unique_ptr<ast::ModelDecl> buildModel(PlanParser::ModelDeclContext *ctx) {
    auto m = std::make_unique<ast::ModelDecl>();
    m->name = ctx->name()->getText();
    m->nameRange = pos.range(ctx->name());
    m->range = pos.range(ctx);
    m->body = buildBody(ctx->bodyItem());
    return m;
  }

  std::unique_ptr<ast::LayerDecl> buildLayer(PlanParser::LayerDeclContext *ctx) {
    auto l = std::make_unique<ast::LayerDecl>();
    l->name = ctx->name()->getText();
    l->nameRange = pos.range(ctx->name());
    l->range = pos.range(ctx);
    for (auto *p : ctx->layerParam()) {
      ast::LayerParam param;
      param.name = p->name()->getText();
      param.nameRange = pos.range(p->name());
      param.typeRange = pos.range(p->paramType());
      if (auto *t = dynamic_cast<PlanParser::TensorParamTypeContext *>(p->paramType())) {
        param.kind = ast::LayerParam::Kind::Tensor;
        param.tensorType = buildTensorType(t->tensorType());
      } else if (auto *e = dynamic_cast<PlanParser::EnumParamTypeContext *>(p->paramType())) {
        param.kind = ast::LayerParam::Kind::Enum;
        for (auto *n : e->name()) param.enumValues.push_back(n->getText());
      } else if (auto *s = dynamic_cast<PlanParser::ScalarParamTypeContext *>(p->paramType())) {
        param.typeName = s->name()->getText();
        using K = ast::LayerParam::Kind;
        param.kind = param.typeName == "int" ? K::Int
                     : param.typeName == "float" ? K::Float
                     : param.typeName == "bool" ? K::Bool
                     : param.typeName == "dtype" ? K::DType
                                                 : K::Unknown;
      }
      if (p->expr()) param.defaultValue = buildExpr(p->expr());
      l->params.push_back(std::move(param));
    }
    l->body = buildBody(ctx->bodyItem());
    return l;
  }

  ast::TensorType buildTensorType(PlanParser::TensorTypeContext *ctx) {
    ast::TensorType t;
    t.range = pos.range(ctx);
    if (ctx->name()) {
      t.dtype = ctx->name()->getText();
      t.dtypeRange = pos.range(ctx->name());
    }
    for (auto *d : ctx->dimItem()) {
      ast::DimItem item;
      item.range = pos.range(d);
      if (d->expr()) item.expr = buildExpr(d->expr());
      else item.ellipsis = true;
      t.dims.push_back(std::move(item));
    }
    return t;
  }

  std::vector<ast::Annotation> buildAnnotations(const std::vector<PlanParser::AnnotationContext *> &list) {
    std::vector<ast::Annotation> out;
    for (auto *a : list) out.push_back(buildAnnotation(a->ANNOTATION(), a->arg(), a, a->getText().find('(') != std::string::npos));
    return out;
  }

  ast::Annotation buildAnnotation(antlr4::tree::TerminalNode *token, const std::vector<PlanParser::ArgContext *> &args,
                                  antlr4::ParserRuleContext *whole, bool hasParens) {
    ast::Annotation a;
    a.name = token->getText().substr(1);
    a.range = pos.range(token);
    a.fullRange = SMRange(a.range.Start, args.empty() ? a.range.End : pos.range(whole).End);
    a.args = buildArgs(args);
    a.hasParens = hasParens;
    return a;
  }

  std::vector<ast::Arg> buildArgs(const std::vector<PlanParser::ArgContext *> &list) {
    std::vector<ast::Arg> out;
    for (auto *a : list) {
      ast::Arg arg;
      if (a->name()) {
        arg.name = a->name()->getText();
        arg.nameRange = pos.range(a->name());
      }
      arg.value = buildExpr(a->expr());
      out.push_back(std::move(arg));
    }
    return out;
  }

  ast::Body buildBody(const std::vector<PlanParser::BodyItemContext *> &items) {
    ast::Body body;
    // Building goes on after a bad literal so that every one in the file is reported;
    // the tree itself is dropped when `failed` is set.
    for (auto *item : items) {
      if (auto *let = item->letDecl()) {
        auto l = std::make_unique<ast::LetItem>(pos.range(let));
        for (auto *b : let->letBinding())
          l->bindings.push_back({b->name()->getText(), pos.range(b->name()), buildExpr(b->expr())});
        body.push_back(std::move(l));
      } else if (auto *in = item->inputDecl()) {
        auto i = std::make_unique<ast::InputItem>(pos.range(in));
        i->name = in->name()->getText();
        i->nameRange = pos.range(in->name());
        i->type = buildTensorType(in->tensorType());
        i->annotations = buildAnnotations(in->annotation());
        body.push_back(std::move(i));
      } else if (auto *p = item->paramDecl()) {
        auto i = std::make_unique<ast::ParamItem>(pos.range(p));
        i->name = p->name()->getText();
        i->nameRange = pos.range(p->name());
        i->type = buildTensorType(p->tensorType());
        if (p->expr()) i->init = buildExpr(p->expr());
        // `= normal(0.02) @shard(tp, 1)`: the expression grammar takes postfix
        // annotations, so those written after an initialiser belong to the param.
        std::vector<ast::Annotation> trailing;
        while (auto *a = llvm::dyn_cast_or_null<ast::AnnotatedExpr>(i->init.get())) {
          trailing.insert(trailing.begin(), std::move(a->annotation));
          ast::ExprPtr inner = std::move(a->inner);
          i->init = std::move(inner);
        }
        i->annotations = buildAnnotations(p->annotation());
        i->annotations.insert(i->annotations.begin(), std::make_move_iterator(trailing.begin()),
                              std::make_move_iterator(trailing.end()));
        body.push_back(std::move(i));
      } else if (auto *s = item->stmt()) {
        if (auto stmt = buildStmt(s)) body.push_back(std::move(stmt));
      }
    }
    return body;
  }

  ast::ItemPtr buildStmt(PlanParser::StmtContext *ctx) {
    if (++depth > limits.maxExprDepth) {
      if (!failed) diags.report(DiagID::err_expr_too_deep, pos.range(ctx->getStart())) << int64_t(limits.maxExprDepth);
      failed = true;
      --depth;
      return nullptr;
    }
    ast::ItemPtr out = buildStmtInner(ctx);
    --depth;
    return out;
  }

  ast::ItemPtr buildStmtInner(PlanParser::StmtContext *ctx) {
    if (auto *a = dynamic_cast<PlanParser::AssignStmtContext *>(ctx)) {
      auto s = std::make_unique<ast::AssignItem>(pos.range(a));
      for (auto *n : a->name()) {
        s->names.push_back(n->getText());
        s->nameRanges.push_back(pos.range(n));
      }
      s->value = buildExpr(a->expr());
      return s;
    }
    if (auto *r = dynamic_cast<PlanParser::RepeatStmtContext *>(ctx)) {
      auto s = std::make_unique<ast::RepeatItem>(pos.range(r));
      s->count = buildExpr(r->expr());
      if (r->name()) {
        s->label = r->name()->getText();
        s->labelRange = pos.range(r->name());
      }
      s->annotations = buildAnnotations(r->annotation());
      // `repeat 12 as blocks @recompute { }`: the expression grammar takes a postfix
      // `as name` and annotations, so those written after the count belong to the repeat.
      std::vector<ast::Annotation> trailing;
      while (s->count) {
        if (auto *a = llvm::dyn_cast<ast::AnnotatedExpr>(s->count.get())) {
          trailing.insert(trailing.begin(), std::move(a->annotation));
          ast::ExprPtr inner = std::move(a->inner);
          s->count = std::move(inner);
        } else if (auto *n = llvm::dyn_cast<ast::NamedExpr>(s->count.get()); n && s->label.empty()) {
          s->label = n->name;
          s->labelRange = n->nameRange;
          ast::ExprPtr inner = std::move(n->inner);
          s->count = std::move(inner);
        } else {
          break;
        }
      }
      s->annotations.insert(s->annotations.begin(), std::make_move_iterator(trailing.begin()),
                            std::make_move_iterator(trailing.end()));
      s->body = buildBody(r->bodyItem());
      return s;
    }
    if (auto *i = dynamic_cast<PlanParser::IfStmtContext *>(ctx)) {
      auto s = std::make_unique<ast::IfItem>(pos.range(i));
      s->condition = buildExpr(i->expr());
      s->thenBody = buildBody(i->bodyItem());
      if (auto *e = i->elseClause()) {
        if (e->stmt()) {
          if (auto nested = buildStmt(e->stmt())) s->elseBody.push_back(std::move(nested));
        } else {
          s->elseBody = buildBody(e->bodyItem());
        }
      }
      return s;
    }
    if (auto *r = dynamic_cast<PlanParser::ReturnStmtContext *>(ctx)) {
      auto s = std::make_unique<ast::ReturnItem>(pos.range(r));
      for (auto *e : r->expr()) s->values.push_back(buildExpr(e));
      return s;
    }
    return nullptr;
  }

  std::unique_ptr<ast::ConfigBlock> buildBlock(PlanParser::ConfigBlockContext *ctx) {
    auto b = std::make_unique<ast::ConfigBlock>();
    std::string kw = ctx->kind->getText();
    b->kind = kw == "train" ? ast::ConfigBlock::Kind::Train
              : kw == "cluster" ? ast::ConfigBlock::Kind::Cluster
                                : ast::ConfigBlock::Kind::Parallel;
    b->keywordRange = pos.range(ctx->kind);
    b->range = pos.range(ctx);
    for (auto *s : ctx->setting()) b->settings.push_back(buildSetting(s));
    return b;
  }

public:
  ast::SettingPtr buildSetting(PlanParser::SettingContext *ctx) {
    auto s = std::make_unique<ast::Setting>();
    s->range = pos.range(ctx);
    PlanParser::NameContext *key = nullptr;
    if (auto *a = dynamic_cast<PlanParser::AssignSettingContext *>(ctx)) {
      key = a->name();
      s->form = ast::Setting::Form::Assign;
      s->value = buildExpr(a->expr());
    } else if (auto *w = dynamic_cast<PlanParser::WordSettingContext *>(ctx)) {
      key = w->name();
      s->form = ast::Setting::Form::Word;
      s->value = buildExpr(w->expr());
    } else if (auto *g = dynamic_cast<PlanParser::ArgsSettingContext *>(ctx)) {
      key = g->name();
      s->form = ast::Setting::Form::Args;
      s->args = buildArgs(g->arg());
    } else if (auto *n = dynamic_cast<PlanParser::NestedSettingContext *>(ctx)) {
      key = n->name();
      s->form = ast::Setting::Form::Nested;
      if (n->expr()) s->value = buildExpr(n->expr());
      for (auto *inner : n->setting()) s->nested.push_back(buildSetting(inner));
    }
    if (key) {
      s->key = key->getText();
      s->keyRange = pos.range(key);
    }
    return s;
  }

private:
  ast::ExprPtr buildNumber(antlr4::tree::TerminalNode *node) {
    auto n = std::make_unique<ast::NumberExpr>(pos.range(node));
    std::string text = node->getText();
    n->text = text;
    std::string digits;
    for (char c : text)
      if (c != '_') digits += c;
    bool isInt = digits.find_first_of(".eE") == std::string::npos;
    if (isInt) {
      n->isInteger = true;
      errno = 0;
      char *end = nullptr;
      unsigned long long v = std::strtoull(digits.c_str(), &end, 10);
      if (errno == ERANGE || v > uint64_t(INT64_MAX)) {
        n->overflow = true;
        diags.report(DiagID::err_integer_too_large, n->range) << text;
        failed = true;
      }
      n->intValue = int64_t(std::min<unsigned long long>(v, uint64_t(INT64_MAX)));
      n->floatValue = double(n->intValue);
    } else {
      n->floatValue = std::strtod(digits.c_str(), nullptr);
      if (!std::isfinite(n->floatValue)) {
        diags.report(DiagID::err_float_not_finite, n->range) << text;
        failed = true;
        n->floatValue = 0;
      }
    }
    return n;
  }

  ast::ExprPtr buildQuantity(antlr4::tree::TerminalNode *node) {
    auto q = std::make_unique<ast::QuantityExpr>(pos.range(node));
    std::string text = node->getText();
    q->text = text;
    size_t unitStart = text.size();
    while (unitStart > 0 && (std::isalpha((unsigned char)text[unitStart - 1]) || text[unitStart - 1] == '/'))
      --unitStart;
    q->unit = text.substr(unitStart);
    std::string digits;
    for (char c : text.substr(0, unitStart))
      if (c != '_' && c != ' ' && c != '\t') digits += c;
    q->number = std::strtod(digits.c_str(), nullptr);
    if (!std::isfinite(q->number)) {
      diags.report(DiagID::err_float_not_finite, q->range) << text;
      failed = true;
      q->number = 0;
    }
    return q;
  }

  ast::ExprPtr buildPrimary(PlanParser::PrimaryContext *ctx) {
    SMRange r = pos.range(ctx);
    if (auto *c = dynamic_cast<PlanParser::CallExprContext *>(ctx)) {
      auto call = std::make_unique<ast::CallExpr>(r);
      call->callee = c->name()->getText();
      call->calleeRange = pos.range(c->name());
      call->args = buildArgs(c->arg());
      return call;
    }
    if (auto *q = dynamic_cast<PlanParser::QuantityLitContext *>(ctx)) return buildQuantity(q->QUANTITY());
    if (auto *n = dynamic_cast<PlanParser::NumberLitContext *>(ctx)) return buildNumber(n->NUMBER());
    if (auto *s = dynamic_cast<PlanParser::StringLitContext *>(ctx)) {
      auto str = std::make_unique<ast::StringExpr>(r);
      str->value = unescape(s->STRING()->getText());
      return str;
    }
    if (dynamic_cast<PlanParser::BoolLitContext *>(ctx))
      return std::make_unique<ast::BoolExpr>(r, ctx->getText() == "true");
    if (auto *n = dynamic_cast<PlanParser::NameRefContext *>(ctx))
      return std::make_unique<ast::NameExpr>(r, n->name()->getText());
    if (auto *p = dynamic_cast<PlanParser::ParenExprContext *>(ctx)) {
      ast::ExprPtr inner = buildExpr(p->expr());
      if (inner) inner->range = r; // keep the parentheses in the range, as clang does
      return inner;
    }
    if (auto *t = dynamic_cast<PlanParser::TupleExprContext *>(ctx)) {
      auto tuple = std::make_unique<ast::TupleExpr>(r);
      for (auto *e : t->expr()) tuple->elements.push_back(buildExpr(e));
      return tuple;
    }
    if (auto *l = dynamic_cast<PlanParser::ListExprContext *>(ctx)) {
      auto list = std::make_unique<ast::ListExpr>(r);
      for (auto *e : l->expr()) list->elements.push_back(buildExpr(e));
      return list;
    }
    return nullptr;
  }

  static ast::BinaryExpr::Op binaryOp(const std::string &t) {
    using Op = ast::BinaryExpr::Op;
    if (t == "+") return Op::Add;
    if (t == "-") return Op::Sub;
    if (t == "*") return Op::Mul;
    if (t == "/") return Op::Div;
    if (t == "%") return Op::Mod;
    if (t == "@") return Op::MatMul;
    if (t == "==") return Op::Eq;
    if (t == "!=") return Op::Ne;
    if (t == "<") return Op::Lt;
    if (t == "<=") return Op::Le;
    if (t == ">") return Op::Gt;
    if (t == ">=") return Op::Ge;
    if (t == "and") return Op::And;
    return Op::Or;
  }

  ast::ExprPtr binary(PlanParser::ExprContext *ctx, antlr4::Token *opToken, PlanParser::ExprContext *l,
                      PlanParser::ExprContext *r) {
    auto b = std::make_unique<ast::BinaryExpr>(pos.range(ctx), binaryOp(opToken->getText()));
    b->opRange = pos.range(opToken);
    b->lhs = buildExpr(l);
    b->rhs = buildExpr(r);
    return b;
  }

  ast::ExprPtr buildExprInner(PlanParser::ExprContext *ctx) {
    SMRange r = pos.range(ctx);
    if (auto *p = dynamic_cast<PlanParser::PrimaryExprContext *>(ctx)) return buildPrimary(p->primary());
    if (auto *m = dynamic_cast<PlanParser::MulExprContext *>(ctx)) return binary(ctx, m->op, m->expr(0), m->expr(1));
    if (auto *a = dynamic_cast<PlanParser::AddExprContext *>(ctx)) return binary(ctx, a->op, a->expr(0), a->expr(1));
    if (auto *c = dynamic_cast<PlanParser::CmpExprContext *>(ctx)) return binary(ctx, c->op, c->expr(0), c->expr(1));
    if (auto *a = dynamic_cast<PlanParser::AndExprContext *>(ctx)) {
      auto *tok = dynamic_cast<antlr4::tree::TerminalNode *>(a->children[1]);
      return binary(ctx, tok->getSymbol(), a->expr(0), a->expr(1));
    }
    if (auto *o = dynamic_cast<PlanParser::OrExprContext *>(ctx)) {
      auto *tok = dynamic_cast<antlr4::tree::TerminalNode *>(o->children[1]);
      return binary(ctx, tok->getSymbol(), o->expr(0), o->expr(1));
    }
    if (auto *n = dynamic_cast<PlanParser::NegExprContext *>(ctx)) {
      auto u = std::make_unique<ast::UnaryExpr>(r, ast::UnaryExpr::Op::Neg);
      u->operand = buildExpr(n->expr());
      return u;
    }
    if (auto *n = dynamic_cast<PlanParser::NotExprContext *>(ctx)) {
      auto u = std::make_unique<ast::UnaryExpr>(r, ast::UnaryExpr::Op::Not);
      u->operand = buildExpr(n->expr());
      return u;
    }
    if (auto *a = dynamic_cast<PlanParser::AnnotatedExprContext *>(ctx)) {
      auto e = std::make_unique<ast::AnnotatedExpr>(r);
      e->inner = buildExpr(a->expr());
      bool parens = false;
      for (auto *child : a->children)
        if (child->getText() == "(") parens = true;
      e->annotation = buildAnnotation(a->ANNOTATION(), a->arg(), a, parens);
      return e;
    }
    if (auto *n = dynamic_cast<PlanParser::NamedExprContext *>(ctx)) {
      auto e = std::make_unique<ast::NamedExpr>(r);
      e->inner = buildExpr(n->expr());
      e->name = n->name()->getText();
      e->nameRange = pos.range(n->name());
      return e;
    }
    if (auto *m = dynamic_cast<PlanParser::MemberExprContext *>(ctx)) {
      auto e = std::make_unique<ast::MemberExpr>(r);
      e->base = buildExpr(m->expr());
      e->member = m->name()->getText();
      e->memberRange = pos.range(m->name());
      return e;
    }
    return nullptr;
  }

  const Positions &pos;
  DiagnosticEngine &diags;
  const ParseLimits limits; // a copy: callers pass temporaries
  unsigned depth = 0;
};

/// Everything one parse needs, alive together (ANTLR objects refer to each other).
struct ParseSession {
  ParseSession(llvm::StringRef text) : input(text.str()), lexer(&input), tokens(&lexer), parser(&tokens) {
    lexer.removeErrorListeners();
    parser.removeErrorListeners();
  }
  antlr4::ANTLRInputStream input;
  PlanLexer lexer;
  antlr4::CommonTokenStream tokens;
  PlanParser parser;
};

/// Lexes once without keeping the tokens, stopping past the limit: a 10 MB
/// generated expression is refused in milliseconds instead of first being
/// turned into millions of token objects. Rewinds the lexer for the real pass.
bool countTokens(ParseSession &s, const Positions &pos, DiagnosticEngine &diags, const ParseLimits &limits) {
  size_t count = 0;
  for (;;) {
    std::unique_ptr<antlr4::Token> t = s.lexer.nextToken();
    if (t->getType() == antlr4::Token::EOF) break;
    if (++count > limits.maxTokens) {
      diags.report(DiagID::err_too_many_tokens, pos.range(t.get())) << uint64_t(limits.maxTokens);
      return false;
    }
  }
  s.input.reset();
  s.lexer.reset();
  return true;
}

/// Runs a parser entry point twice if needed: SLL with bail-out (fast, right
/// for nearly every input), then full LL with planc's error reporting.
template <typename Entry>
auto parseTwoStage(ParseSession &s, PlanErrorStrategy &strategy, Entry entry) -> decltype(entry(s.parser)) {
  s.parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
  s.parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(antlr4::atn::PredictionMode::SLL);
  try {
    return entry(s.parser);
  } catch (antlr4::ParseCancellationException &) {
  }
  s.tokens.seek(0);
  s.parser.reset();
  s.parser.setErrorHandler(std::shared_ptr<antlr4::ANTLRErrorStrategy>(&strategy, [](auto *) {}));
  s.parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(antlr4::atn::PredictionMode::LL);
  return entry(s.parser);
}

} // namespace

std::unique_ptr<ast::SourceFile> planc::parseFile(llvm::SourceMgr &sm, unsigned bufferId,
                                                  DiagnosticEngine &diags, ParseLimits limits) {
  const llvm::MemoryBuffer *buffer = sm.getMemoryBuffer(bufferId);
  llvm::StringRef text = buffer->getBuffer();
  std::vector<uint32_t> cp;
  if (!checkBytes(text, buffer->getBufferIdentifier(), diags, cp)) return nullptr;
  Positions pos(text, cp);
  try {
    ParseSession s(text);
    if (!countTokens(s, pos, diags, limits)) return nullptr;
    s.tokens.fill();
    if (!checkTokens(s.tokens, pos, diags, limits)) return nullptr;
    PlanErrorStrategy strategy(diags, pos);
    auto *tree = parseTwoStage(s, strategy, [](PlanParser &p) { return p.file(); });
    if (strategy.errors || diags.hitErrorLimit()) return nullptr;
    ASTBuilder builder(pos, diags, limits);
    auto file = builder.buildFile(tree);
    if (builder.failed) return nullptr;
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
  s.tokens.fill();
  const antlr4::dfa::Vocabulary &vocab = s.lexer.getVocabulary();
  for (antlr4::Token *t : s.tokens.getTokens()) {
    SMRange r = pos.range(t);
    auto [line, col] = sm.getLineAndColumn(r.Start, bufferId);
    std::string kind = t->getType() == antlr4::Token::EOF ? "EOF" : vocab.getSymbolicName(t->getType());
    // Literal tokens have no symbolic name: `model`, `repeat`, ... are keywords, the rest punctuation.
    if (kind.empty()) kind = std::isalpha((unsigned char)t->getText()[0]) ? "KEYWORD" : "PUNCT";
    os << line << ":" << col << " " << kind;
    if (t->getType() != antlr4::Token::EOF) os << " '" << t->getText() << "'";
    os << "\n";
  }
  return checkTokens(s.tokens, pos, diags, ParseLimits());
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
    s.tokens.fill();
    if (!checkTokens(s.tokens, pos, diags, ParseLimits())) return nullptr;
    PlanErrorStrategy strategy(diags, pos);
    auto *tree = parseTwoStage(s, strategy, [](PlanParser &p) { return p.singleExpr(); });
    if (strategy.errors) return nullptr;
    ASTBuilder builder(pos, diags, ParseLimits());
    auto setting = std::make_unique<ast::Setting>();
    setting->form = ast::Setting::Form::Assign;
    setting->key = result->path.back();
    setting->keyRange = SMRange(SMLoc::getFromPointer(parts.back().begin()), SMLoc::getFromPointer(parts.back().end()));
    setting->range = whole;
    setting->origin = "--set";
    setting->value = builder.buildExpr(tree->expr());
    if (builder.failed || !setting->value) return nullptr;
    result->setting = std::move(setting);
    return result;
  } catch (std::exception &e) {
    diags.report(DiagID::err_set_syntax, whole) << text;
    return nullptr;
  }
}
