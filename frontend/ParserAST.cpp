//===- frontend/ParserAST.cpp - parse tree to AST ------------------------===//
//
// Runs only on a parse without syntax errors; what it still reports are the
// limits the grammar does not know: expression depth, integers too large,
// floats that are not finite.
//
//===----------------------------------------------------------------------===//

#include "frontend/ParserImpl.h"
#include "frontend/ParserLiterals.h"

#include "llvm/ADT/StringExtras.h"

#include <set>

using namespace planc;
using namespace planc::parser;

namespace {

/// A one-token rule's text (a name): the bytes of the source it spans,
/// where RuleContext's getText() builds it child by child and a token's
/// getText() converts it back from UTF-32 -- a measurable share of parsing a
/// plan of a hundred thousand statements.
std::string textOf(const Positions &pos, antlr4::ParserRuleContext *ctx) {
  antlr4::Token *start = ctx->getStart();
  return start && start == ctx->getStop() ? pos.textOf(start) : ctx->getText();
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
          decl.path += textOf(pos, n);
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
      else if (auto *n = top->namesDecl()) file->nameMaps.push_back(buildNames(n));
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
    m->name = textOf(pos, ctx->name());
    m->nameRange = pos.range(ctx->name());
    m->range = pos.range(ctx);
    m->body = buildBody(ctx->bodyItem());
    return m;
  }

  std::unique_ptr<ast::LayerDecl> buildLayer(PlanParser::LayerDeclContext *ctx) {
    auto l = std::make_unique<ast::LayerDecl>();
    l->name = textOf(pos, ctx->name());
    l->nameRange = pos.range(ctx->name());
    l->range = pos.range(ctx);
    for (auto *p : ctx->layerParam()) {
      ast::LayerParam param;
      param.name = textOf(pos, p->name());
      param.nameRange = pos.range(p->name());
      param.typeRange = pos.range(p->paramType());
      if (auto *t = dynamic_cast<PlanParser::TensorParamTypeContext *>(p->paramType())) {
        param.kind = ast::LayerParam::Kind::Tensor;
        param.tensorType = buildTensorType(t->tensorType());
      } else if (auto *e = dynamic_cast<PlanParser::EnumParamTypeContext *>(p->paramType())) {
        param.kind = ast::LayerParam::Kind::Enum;
        for (auto *n : e->name()) param.enumValues.push_back(textOf(pos, n));
      } else if (auto *s = dynamic_cast<PlanParser::ScalarParamTypeContext *>(p->paramType())) {
        param.typeName = textOf(pos, s->name());
        param.kind = scalarParamKind(param.typeName);
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
      t.dtype = textOf(pos, ctx->name());
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
        arg.name = textOf(pos, a->name());
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
          l->bindings.push_back({textOf(pos, b->name()), pos.range(b->name()), buildExpr(b->expr())});
        body.push_back(std::move(l));
      } else if (auto *in = item->inputDecl()) {
        auto i = std::make_unique<ast::InputItem>(pos.range(in));
        i->name = textOf(pos, in->name());
        i->nameRange = pos.range(in->name());
        i->type = buildTensorType(in->tensorType());
        i->annotations = buildAnnotations(in->annotation());
        body.push_back(std::move(i));
      } else if (auto *p = item->paramDecl()) {
        auto i = std::make_unique<ast::ParamItem>(pos.range(p));
        i->name = textOf(pos, p->name());
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
        s->names.push_back(textOf(pos, n));
        s->nameRanges.push_back(pos.range(n));
      }
      s->value = buildExpr(a->expr());
      return s;
    }
    if (auto *r = dynamic_cast<PlanParser::RepeatStmtContext *>(ctx)) {
      auto s = std::make_unique<ast::RepeatItem>(pos.range(r));
      s->count = buildExpr(r->expr());
      takeRepeatCountPostfix(*s);
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

  std::unique_ptr<ast::NamesDecl> buildNames(PlanParser::NamesDeclContext *ctx) {
    auto n = std::make_unique<ast::NamesDecl>();
    n->name = textOf(pos, ctx->name());
    n->nameRange = pos.range(ctx->name());
    n->range = pos.range(ctx);
    for (auto *item : ctx->namesItem()) {
      if (auto *r = dynamic_cast<PlanParser::NameRuleContext *>(item)) {
        ast::NameRule rule;
        rule.file = unescape(r->STRING()->getText());
        rule.fileRange = pos.range(r->STRING());
        rule.target = buildExpr(r->expr());
        rule.range = pos.range(r);
        n->rules.push_back(std::move(rule));
      } else if (auto *s = dynamic_cast<PlanParser::NamesSettingContext *>(item)) {
        n->settings.push_back(buildSetting(s->setting()));
      }
    }
    return n;
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
    reportLiteral(readNumber(text, *n), n->range, text);
    return n;
  }

  ast::ExprPtr buildQuantity(antlr4::tree::TerminalNode *node) {
    auto q = std::make_unique<ast::QuantityExpr>(pos.range(node));
    std::string text = node->getText();
    reportLiteral(readQuantity(text, *q), q->range, text);
    return q;
  }

  void reportLiteral(LiteralError error, SMRange range, const std::string &text) {
    if (error == LiteralError::None) return;
    diags.report(error == LiteralError::IntegerTooLarge ? DiagID::err_integer_too_large : DiagID::err_float_not_finite,
                 range)
        << text;
    failed = true;
  }

  ast::ExprPtr buildPrimary(PlanParser::PrimaryContext *ctx) {
    SMRange r = pos.range(ctx);
    if (auto *c = dynamic_cast<PlanParser::CallExprContext *>(ctx)) {
      auto call = std::make_unique<ast::CallExpr>(r);
      call->callee = textOf(pos, c->name());
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
      return std::make_unique<ast::NameExpr>(r, textOf(pos, n->name()));
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
        if (dynamic_cast<antlr4::tree::TerminalNode *>(child) && child->getText() == "(") parens = true;
      e->annotation = buildAnnotation(a->ANNOTATION(), a->arg(), a, parens);
      return e;
    }
    if (auto *n = dynamic_cast<PlanParser::NamedExprContext *>(ctx)) {
      auto e = std::make_unique<ast::NamedExpr>(r);
      e->inner = buildExpr(n->expr());
      e->name = textOf(pos, n->name());
      e->nameRange = pos.range(n->name());
      return e;
    }
    if (auto *m = dynamic_cast<PlanParser::MemberExprContext *>(ctx)) {
      auto e = std::make_unique<ast::MemberExpr>(r);
      e->base = buildExpr(m->expr());
      e->member = textOf(pos, m->name());
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

} // namespace

std::unique_ptr<ast::SourceFile> parser::buildFileAST(PlanParser::FileContext *ctx, const Positions &pos,
                                                      DiagnosticEngine &diags, const ParseLimits &limits) {
  ASTBuilder builder(pos, diags, limits);
  std::unique_ptr<ast::SourceFile> file = builder.buildFile(ctx);
  return builder.failed ? nullptr : std::move(file);
}

ast::ExprPtr parser::buildExprAST(PlanParser::ExprContext *ctx, const Positions &pos, DiagnosticEngine &diags,
                                  const ParseLimits &limits) {
  ASTBuilder builder(pos, diags, limits);
  ast::ExprPtr e = builder.buildExpr(ctx);
  return builder.failed ? nullptr : std::move(e);
}
