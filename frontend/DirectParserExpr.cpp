//===- frontend/DirectParserExpr.cpp - the direct parser's expressions ---===//
//
// ANTLR's rewrite of the left-recursive `expr` rule, as precedence climbing:
// alternative k of n gets precedence n - k + 1 (annotation 11 ... or 2); a
// prefix operator's operand is parsed at the operator's own precedence, a
// binary operator's right operand at one above its own (left-associative),
// and a postfix or binary operator applies while its precedence is at least
// the one the caller asked for.
//
//===----------------------------------------------------------------------===//

#include "frontend/DirectParserImpl.h"
#include "frontend/ParserLiterals.h"

using namespace planc;
using namespace planc::parser;
using namespace planc::parser::direct;

namespace {

/// A binary operator's precedence and AST operator, from its text.
bool binaryOpOf(llvm::StringRef t, unsigned &prec, ast::BinaryExpr::Op &op) {
  using Op = ast::BinaryExpr::Op;
  static const struct { const char *text; unsigned prec; Op op; } table[] = {
      {"*", PrecMul, Op::Mul}, {"/", PrecMul, Op::Div}, {"%", PrecMul, Op::Mod}, {"@", PrecMul, Op::MatMul},
      {"+", PrecAdd, Op::Add}, {"-", PrecAdd, Op::Sub}, {"==", PrecCmp, Op::Eq}, {"!=", PrecCmp, Op::Ne},
      {"<", PrecCmp, Op::Lt},  {"<=", PrecCmp, Op::Le}, {">", PrecCmp, Op::Gt},  {">=", PrecCmp, Op::Ge},
      {"and", PrecAnd, Op::And}, {"or", PrecOr, Op::Or},
  };
  for (const auto &row : table)
    if (t == row.text) {
      prec = row.prec;
      op = row.op;
      return true;
    }
  return false;
}

} // namespace

/// `(arg (',' arg)* ','?)? ')'`, the '(' taken; `height` the deepest argument.
std::vector<ast::Arg> DirectParser::argList(unsigned &height) {
  std::vector<ast::Arg> args;
  while (!punct(")")) {
    args.push_back(arg(height));
    if (!punct(",")) break;
    ++i;
  }
  expectPunct(")");
  return args;
}

ast::Arg DirectParser::arg(unsigned &height) {
  ast::Arg a;
  if (isName() && punct("=", 1)) {
    std::tie(a.name, a.nameRange) = name();
    ++i;
  }
  Built b = expr(0);
  height = std::max(height, b.height);
  a.value = std::move(b.expr);
  return a;
}


/// ANTLR's `expr(minPrec)`.
Built DirectParser::expr(unsigned minPrec) {
  // Each level of recursion is a level of the builder's depth: past the
  // limit the ANTLR path reports it, and this parser's stack stays bounded.
  if (++recursion > limits.maxExprDepth) throw NotHandled();
  size_t start = i;
  Built lhs;
  if (punct("-") || keyword("not")) {
    bool neg = punct("-");
    ++i;
    Built operand = expr(neg ? PrecNeg : PrecNot);
    auto u = std::make_unique<ast::UnaryExpr>(spanFrom(start), neg ? ast::UnaryExpr::Op::Neg : ast::UnaryExpr::Op::Not);
    u->operand = std::move(operand.expr);
    lhs = {std::move(u), operand.height + 1};
  } else {
    lhs = primary();
  }
  for (;;) {
    const RawToken &t = peek();
    if (t.kind == RawToken::Annotation && PrecAnnotated >= minPrec) {
      auto e = std::make_unique<ast::AnnotatedExpr>(SMRange());
      unsigned argHeight = 0;
      e->annotation = annotation(argHeight);
      e->range = spanFrom(start);
      e->inner = std::move(lhs.expr);
      lhs = {std::move(e), std::max(lhs.height, argHeight) + 1};
    } else if (t.kind == RawToken::Keyword && textOf(t) == "as" && PrecNamed >= minPrec) {
      ++i;
      auto e = std::make_unique<ast::NamedExpr>(SMRange());
      std::tie(e->name, e->nameRange) = name();
      e->range = spanFrom(start);
      e->inner = std::move(lhs.expr);
      lhs = {std::move(e), lhs.height + 1};
    } else if (t.kind == RawToken::Punct && textOf(t) == "." && PrecMember >= minPrec) {
      ++i;
      auto e = std::make_unique<ast::MemberExpr>(SMRange());
      std::tie(e->member, e->memberRange) = name();
      e->range = spanFrom(start);
      e->base = std::move(lhs.expr);
      lhs = {std::move(e), lhs.height + 1};
    } else {
      unsigned prec = 0;
      ast::BinaryExpr::Op op;
      if ((t.kind != RawToken::Punct && t.kind != RawToken::Keyword) || !binaryOpOf(textOf(t), prec, op) ||
          prec < minPrec)
        break;
      SMRange opRange = rangeOf(t);
      ++i;
      Built rhs = expr(prec + 1);
      auto b = std::make_unique<ast::BinaryExpr>(spanFrom(start), op);
      b->opRange = opRange;
      b->lhs = std::move(lhs.expr);
      b->rhs = std::move(rhs.expr);
      lhs = {std::move(b), std::max(lhs.height, rhs.height) + 1};
    }
  }
  --recursion;
  return lhs;
}

/// A `primary` as the expression context around it (one level).
Built DirectParser::primary() {
  size_t start = i;
  const RawToken &t = peek();
  switch (t.kind) {
  case RawToken::Quantity: {
    ++i;
    auto q = std::make_unique<ast::QuantityExpr>(rangeOf(t));
    if (readQuantity(textOf(t), *q) != LiteralError::None) throw NotHandled();
    return {std::move(q), 1};
  }
  case RawToken::Number: {
    ++i;
    auto n = std::make_unique<ast::NumberExpr>(rangeOf(t));
    if (readNumber(textOf(t), *n) != LiteralError::None) throw NotHandled();
    return {std::move(n), 1};
  }
  case RawToken::String: {
    ++i;
    auto s = std::make_unique<ast::StringExpr>(rangeOf(t));
    s->value = unescape(textOf(t));
    return {std::move(s), 1};
  }
  default: break;
  }
  if (keyword("true") || keyword("false")) {
    ++i;
    return {std::make_unique<ast::BoolExpr>(rangeOf(t), textOf(t) == "true"), 1};
  }
  if (isName()) {
    auto [n, r] = name();
    if (!punct("(")) return {std::make_unique<ast::NameExpr>(r, std::move(n)), 1};
    ++i;
    unsigned height = 0;
    auto call = std::make_unique<ast::CallExpr>(SMRange());
    call->args = argList(height);
    call->callee = std::move(n);
    call->calleeRange = r;
    call->range = spanFrom(start);
    return {std::move(call), height + 1};
  }
  if (punct("(")) {
    ++i;
    Built first = expr(0);
    if (punct(")")) {
      ++i;
      // parenExpr: the inner expression, its range widened to the parentheses.
      first.expr->range = spanFrom(start);
      return {std::move(first.expr), first.height + 1};
    }
    // tupleExpr: '(' expr ',' (expr (',' expr)*)? ','? ')'
    expectPunct(",");
    auto tuple = std::make_unique<ast::TupleExpr>(SMRange());
    unsigned height = first.height;
    tuple->elements.push_back(std::move(first.expr));
    if (!punct(")") && !punct(",")) {
      for (;;) {
        Built e = expr(0);
        height = std::max(height, e.height);
        tuple->elements.push_back(std::move(e.expr));
        if (!punct(",") || punct(")", 1)) break;
        ++i;
      }
    }
    if (punct(",")) ++i;
    expectPunct(")");
    tuple->range = spanFrom(start);
    return {std::move(tuple), height + 1};
  }
  if (punct("[")) {
    ++i;
    auto list = std::make_unique<ast::ListExpr>(SMRange());
    unsigned height = 0;
    while (!punct("]")) {
      Built e = expr(0);
      height = std::max(height, e.height);
      list->elements.push_back(std::move(e.expr));
      if (!punct(",")) break;
      ++i;
    }
    expectPunct("]");
    list->range = spanFrom(start);
    return {std::move(list), height + 1};
  }
  throw NotHandled();
}
