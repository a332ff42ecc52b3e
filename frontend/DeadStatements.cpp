//===- frontend/DeadStatements.cpp - statements lowering can leave out ----===//

#include "frontend/DeadStatements.h"

using namespace planc;
using namespace planc::sema;

namespace {

using Names = std::unordered_set<std::string>;

void readsOf(const ast::Expr *e, Names &out);
void readsOf(const ast::Body &body, Names &out);

void readsOf(const std::vector<ast::Arg> &args, Names &out) {
  for (const ast::Arg &a : args) readsOf(a.value.get(), out);
}

void readsOf(const ast::TensorType &t, Names &out) {
  for (const ast::DimItem &d : t.dims) readsOf(d.expr.get(), out);
}

void readsOf(const std::vector<ast::Annotation> &annotations, Names &out) {
  for (const ast::Annotation &a : annotations) readsOf(a.args, out);
}

void readsOf(const ast::Expr *e, Names &out) {
  // An explicit stack: a chain of 400 `+` is within the limits and the walk
  // must not be what runs out of stack.
  std::vector<const ast::Expr *> stack{e};
  while (!stack.empty()) {
    const ast::Expr *x = stack.back();
    stack.pop_back();
    if (!x) continue;
    using K = ast::Expr::Kind;
    switch (x->kind) {
    case K::Number:
    case K::Quantity:
    case K::String:
    case K::Bool: break;
    case K::Name: out.insert(llvm::cast<ast::NameExpr>(x)->name); break;
    case K::Call: {
      auto *c = llvm::cast<ast::CallExpr>(x);
      out.insert(c->callee);
      for (const ast::Arg &a : c->args) stack.push_back(a.value.get());
      break;
    }
    case K::Member: stack.push_back(llvm::cast<ast::MemberExpr>(x)->base.get()); break;
    case K::Named: stack.push_back(llvm::cast<ast::NamedExpr>(x)->inner.get()); break;
    case K::Annotated: {
      auto *a = llvm::cast<ast::AnnotatedExpr>(x);
      stack.push_back(a->inner.get());
      for (const ast::Arg &arg : a->annotation.args) stack.push_back(arg.value.get());
      break;
    }
    case K::Unary: stack.push_back(llvm::cast<ast::UnaryExpr>(x)->operand.get()); break;
    case K::Binary: {
      auto *b = llvm::cast<ast::BinaryExpr>(x);
      stack.push_back(b->lhs.get());
      stack.push_back(b->rhs.get());
      break;
    }
    case K::Tuple:
      for (const auto &el : llvm::cast<ast::TupleExpr>(x)->elements) stack.push_back(el.get());
      break;
    case K::List:
      for (const auto &el : llvm::cast<ast::ListExpr>(x)->elements) stack.push_back(el.get());
      break;
    }
  }
}

void readsOf(const ast::Body &body, Names &out) {
  for (const auto &item : body) {
    if (auto *l = llvm::dyn_cast<ast::LetItem>(item.get()))
      for (const auto &b : l->bindings) readsOf(b.value.get(), out);
    else if (auto *in = llvm::dyn_cast<ast::InputItem>(item.get())) {
      readsOf(in->type, out);
      readsOf(in->annotations, out);
    } else if (auto *p = llvm::dyn_cast<ast::ParamItem>(item.get())) {
      readsOf(p->type, out);
      readsOf(p->init.get(), out);
      readsOf(p->annotations, out);
    } else if (auto *a = llvm::dyn_cast<ast::AssignItem>(item.get()))
      readsOf(a->value.get(), out);
    else if (auto *r = llvm::dyn_cast<ast::RepeatItem>(item.get())) {
      readsOf(r->count.get(), out);
      readsOf(r->annotations, out);
      readsOf(r->body, out);
    } else if (auto *i = llvm::dyn_cast<ast::IfItem>(item.get())) {
      readsOf(i->condition.get(), out);
      readsOf(i->thenBody, out);
      readsOf(i->elseBody, out);
    } else if (auto *ret = llvm::dyn_cast<ast::ReturnItem>(item.get()))
      for (const auto &v : ret->values) readsOf(v.get(), out);
  }
}

/// Names, literals and operators only: nothing that declares, draws or names.
bool isPure(const ast::Expr *e) {
  std::vector<const ast::Expr *> stack{e};
  while (!stack.empty()) {
    const ast::Expr *x = stack.back();
    stack.pop_back();
    if (!x) return false;
    using K = ast::Expr::Kind;
    switch (x->kind) {
    case K::Number:
    case K::Quantity:
    case K::Bool:
    case K::Name: break;
    case K::Unary: stack.push_back(llvm::cast<ast::UnaryExpr>(x)->operand.get()); break;
    case K::Binary: {
      auto *b = llvm::cast<ast::BinaryExpr>(x);
      stack.push_back(b->lhs.get());
      stack.push_back(b->rhs.get());
      break;
    }
    default: return false;
    }
  }
  return true;
}

} // namespace

DeadStatements::DeadStatements(const Program &program) {
  if (program.model) readsOf(program.model->body, read);
  for (const auto &[name, layer] : program.layers) {
    if (!layer) continue;
    for (const ast::LayerParam &p : layer->params) {
      readsOf(p.tensorType, read);
      readsOf(p.defaultValue.get(), read);
    }
    readsOf(layer->body, read);
  }
}

bool DeadStatements::isDead(const ast::Item &item) const {
  auto *a = llvm::dyn_cast<ast::AssignItem>(&item);
  if (!a || a->names.empty() || !isPure(a->value.get())) return false;
  for (const std::string &name : a->names)
    if (name == "loss" || read.count(name)) return false;
  return true;
}
