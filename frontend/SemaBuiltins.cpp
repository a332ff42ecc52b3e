//===- frontend/SemaBuiltins.cpp - calls of the primitive operations -------===//
//
// Each primitive's arguments are bound against Builtins.cpp's table here,
// then its shape rule runs (BuiltinRules.cpp) and lowering emits its op.
//
//===----------------------------------------------------------------------===//

#include "frontend/BuiltinRules.h"
#include "frontend/SemaImpl.h"
#include "frontend/StdlibLayers.h"
#include "support/Plural.h"

#include <cmath>
#include <set>

using namespace planc;
using namespace planc::sema;

namespace {

Value literal(const char *text) {
  llvm::StringRef t(text);
  if (t == "true" || t == "false") return Value::boolean(t == "true");
  if (t.contains('.') || t.contains('e')) return Value::real(std::strtod(text, nullptr));
  return Value::integer(std::strtoll(text, nullptr, 10));
}

/// What a value of `kind` must be, or null where `v` is one (a number
/// given for a float parameter becomes a float).
const char *kindMismatch(BuiltinParamKind kind, Value &v) {
  switch (kind) {
  case BuiltinParamKind::Tensor: return v.isTensor() ? nullptr : "a tensor";
  case BuiltinParamKind::Int: return v.kind == Value::Kind::Int ? nullptr : "an integer";
  case BuiltinParamKind::Float:
    if (!v.isNumber()) return "a number";
    v = Value::real(v.f, v.origin);
    return nullptr;
  case BuiltinParamKind::Bool: return v.kind == Value::Kind::Bool ? nullptr : "true or false";
  case BuiltinParamKind::DType: return v.kind == Value::Kind::DType ? nullptr : "a dtype";
  case BuiltinParamKind::IntList:
    if (v.kind != Value::Kind::List && v.kind != Value::Kind::Tuple) return "a list of integers, as in [b, s, h]";
    for (const Value &e : v.elements)
      if (e.kind != Value::Kind::Int) return "a list of integers, as in [b, s, h]";
    return nullptr;
  case BuiltinParamKind::Any: return nullptr;
  }
  return nullptr;
}

} // namespace

Value Elaborator::builtinArg(const BuiltinOp &op, const BuiltinParam &param, const ast::Arg &arg, Scope &scope) {
  Value v;
  auto *bare = llvm::dyn_cast<ast::NameExpr>(arg.value.get());
  if (param.kind == BuiltinParamKind::DType && bare && !scope.lookup(bare->name)) {
    // A dtype written bare (f32), unless a binding of that name shadows it.
    if (!isDTypeName(bare->name)) {
      auto d = report(DiagID::err_unknown_dtype, bare->range);
      d << bare->name;
      d.suggest(bare->name, dtypeNames(), bare->range);
      return Value::error();
    }
    v.kind = Value::Kind::DType;
    v.s = bare->name;
  } else {
    v = eval(arg.value.get(), scope);
  }
  if (v.isError()) return v;
  if (const char *want = kindMismatch(param.kind, v)) {
    report(DiagID::err_arg_kind, arg.value->range) << param.name << op.name << want << describe(v);
    return Value::error();
  }
  return v;
}

std::optional<size_t> Elaborator::builtinParamNamed(const BuiltinOp &op, const ast::Arg &arg) {
  std::vector<std::string> names;
  std::optional<size_t> index;
  for (size_t i = 0; i < op.params.size(); ++i) {
    names.push_back(op.params[i].name);
    if (arg.name == op.params[i].name) index = i;
  }
  if (!index) {
    auto d = report(DiagID::err_unknown_named_arg, arg.nameRange);
    d << op.name << arg.name;
    d.suggest(arg.name, names, arg.nameRange);
    d.note(DiagID::note_builtin_signature, SMRange(), {op.name, signatureOf(op)});
  }
  return index;
}

bool Elaborator::bindBuiltinArgs(const BuiltinOp &op, const ast::CallExpr &call, Scope &scope, BuiltinRules &bound) {
  const std::string name = op.name;
  std::vector<Value> &args = bound.args;
  args.assign(op.params.size(), Value());
  bound.ranges.assign(op.params.size(), call.range);
  std::vector<bool> given(op.params.size(), false);
  bool ok = true, sawNamed = false;
  size_t positional = 0;
  for (const ast::Arg &arg : call.args) {
    size_t index;
    if (arg.name.empty()) {
      if (sawNamed) {
        report(DiagID::err_positional_after_named, arg.value->range);
        ok = false;
        continue;
      }
      if (op.variadicTensors) { // concat's operands
        Value v = eval(arg.value.get(), scope);
        if (v.isError()) { ok = false; continue; }
        if (!v.isTensor()) {
          report(DiagID::err_arg_kind, arg.value->range) << "operand" << name << "a tensor" << describe(v);
          ok = false;
          continue;
        }
        bound.tensors.push_back(v);
        bound.tensorRanges.push_back(arg.value->range);
        continue;
      }
      if (positional >= op.params.size()) {
        report(DiagID::err_too_many_args, arg.value->range)
            << name << counted(int64_t(op.params.size()), "argument") << int64_t(call.args.size());
        ok = false;
        break;
      }
      index = positional++;
    } else {
      sawNamed = true;
      std::optional<size_t> named = builtinParamNamed(op, arg);
      if (!named) {
        ok = false;
        continue;
      }
      index = *named;
      if (given[index]) {
        report(DiagID::err_duplicate_arg, arg.nameRange) << arg.name;
        ok = false;
        continue;
      }
    }
    given[index] = true;
    bound.ranges[index] = arg.value->range;
    Value v = builtinArg(op, op.params[index], arg, scope);
    if (v.isError()) { ok = false; continue; }
    args[index] = v;
  }
  for (size_t i = 0; i < op.params.size(); ++i) {
    if (given[i]) continue;
    if (op.params[i].defaultValue) {
      args[i] = literal(op.params[i].defaultValue);
    } else if (ok) {
      report(DiagID::err_missing_arg, call.range) << op.params[i].name << name;
      ok = false;
    } else {
      ok = false;
    }
  }
  return ok;
}

Value Elaborator::callBuiltin(const BuiltinOp &op, const ast::CallExpr &call, Scope &scope) {
  BuiltinRules rules(*this, call, op.name);
  if (!bindBuiltinArgs(op, call, scope, rules)) return Value::error();
  // The shape rule of the primitive; lowering (when on) then emits its op.
  Value v = rules.apply();
  if (lowering() && v.isTensor()) v.ir = lowerBuiltin(op.name, rules.args, rules.tensors, v, call);
  return v;
}

//===----------------------------------------------------------------------===//
// Layers no call reached
//===----------------------------------------------------------------------===//

namespace {
struct NameCollector {
  std::set<std::string> declared;
  void body(const ast::Body &b) {
    for (const auto &item : b) {
      if (auto *l = llvm::dyn_cast<ast::LetItem>(item.get()))
        for (auto &x : l->bindings) declared.insert(x.name);
      else if (auto *p = llvm::dyn_cast<ast::ParamItem>(item.get())) declared.insert(p->name);
      else if (auto *in = llvm::dyn_cast<ast::InputItem>(item.get())) declared.insert(in->name);
      else if (auto *a = llvm::dyn_cast<ast::AssignItem>(item.get())) {
        for (auto &n : a->names) declared.insert(n);
        expr(a->value.get());
      } else if (auto *r = llvm::dyn_cast<ast::RepeatItem>(item.get())) body(r->body);
      else if (auto *i = llvm::dyn_cast<ast::IfItem>(item.get())) {
        body(i->thenBody);
        body(i->elseBody);
      }
    }
  }
  void expr(const ast::Expr *e) {
    if (!e) return;
    if (auto *n = llvm::dyn_cast<ast::NamedExpr>(e)) {
      declared.insert(n->name);
      expr(n->inner.get());
    } else if (auto *a = llvm::dyn_cast<ast::AnnotatedExpr>(e)) expr(a->inner.get());
    else if (auto *b = llvm::dyn_cast<ast::BinaryExpr>(e)) {
      expr(b->lhs.get());
      expr(b->rhs.get());
    } else if (auto *c = llvm::dyn_cast<ast::CallExpr>(e))
      for (auto &arg : c->args) expr(arg.value.get());
  }
};

/// Reports uses of names that nothing in the layer declares, and unknown callees.
struct LayerLinter {
  Elaborator &sema;
  const std::set<std::string> &declared;
  void body(const ast::Body &b) {
    for (const auto &item : b) {
      if (auto *l = llvm::dyn_cast<ast::LetItem>(item.get()))
        for (auto &x : l->bindings) expr(x.value.get());
      else if (auto *p = llvm::dyn_cast<ast::ParamItem>(item.get())) {
        for (auto &d : p->type.dims) expr(d.expr.get());
      } else if (auto *a = llvm::dyn_cast<ast::AssignItem>(item.get())) expr(a->value.get());
      else if (auto *r = llvm::dyn_cast<ast::RepeatItem>(item.get())) {
        expr(r->count.get());
        body(r->body);
      } else if (auto *i = llvm::dyn_cast<ast::IfItem>(item.get())) {
        expr(i->condition.get());
        body(i->thenBody);
        body(i->elseBody);
      } else if (auto *ret = llvm::dyn_cast<ast::ReturnItem>(item.get()))
        for (auto &v : ret->values) expr(v.get());
    }
  }
  void expr(const ast::Expr *e) {
    if (!e) return;
    if (auto *n = llvm::dyn_cast<ast::NameExpr>(e)) {
      if (!declared.count(n->name) && !isDTypeName(n->name)) {
        std::vector<std::string> names(declared.begin(), declared.end());
        auto d = sema.report(DiagID::err_unknown_name, n->range);
        d << n->name;
        d.suggest(n->name, names, n->range);
      }
    } else if (auto *c = llvm::dyn_cast<ast::CallExpr>(e)) {
      if (!sema.program.layers.count(c->callee) && !isBuiltinOp(c->callee)) {
        std::vector<std::string> names;
        for (auto &[k, l] : sema.program.layers) names.push_back(k);
        for (const BuiltinOp &op : builtinOps()) names.push_back(op.name);
        auto d = sema.report(DiagID::err_unknown_callee, c->calleeRange);
        d << c->callee;
        if (std::string module = stdModuleDeclaring(c->callee); !module.empty())
          d.note(DiagID::note_add_import, c->calleeRange, {c->callee, module});
        else
          d.suggest(c->callee, names, c->calleeRange);
      }
      for (auto &arg : c->args) {
        // A bare name passed as an argument may be an enum value or a dtype of the callee.
        if (llvm::isa<ast::NameExpr>(arg.value.get()) && !arg.name.empty()) continue;
        expr(arg.value.get());
      }
    } else if (auto *b = llvm::dyn_cast<ast::BinaryExpr>(e)) {
      expr(b->lhs.get());
      // `mode == column`: the right side may be an enum value.
      if (!((b->op == ast::BinaryExpr::Op::Eq || b->op == ast::BinaryExpr::Op::Ne) && llvm::isa<ast::NameExpr>(b->rhs.get())))
        expr(b->rhs.get());
    } else if (auto *u = llvm::dyn_cast<ast::UnaryExpr>(e)) expr(u->operand.get());
    else if (auto *a = llvm::dyn_cast<ast::AnnotatedExpr>(e)) expr(a->inner.get());
    else if (auto *n2 = llvm::dyn_cast<ast::NamedExpr>(e)) expr(n2->inner.get());
    else if (auto *m = llvm::dyn_cast<ast::MemberExpr>(e)) expr(m->base.get());
    else if (auto *t = llvm::dyn_cast<ast::TupleExpr>(e))
      for (auto &x : t->elements) expr(x.get());
    else if (auto *l = llvm::dyn_cast<ast::ListExpr>(e))
      for (auto &x : l->elements) expr(x.get());
  }
};
} // namespace

void Elaborator::checkLayerAlone(const ast::LayerDecl &layer) {
  NameCollector names;
  std::set<std::string> params;
  for (const ast::LayerParam &p : layer.params) {
    if (!params.insert(p.name).second)
      report(DiagID::err_duplicate_layer_param, p.nameRange) << p.name;
    if (p.kind == ast::LayerParam::Kind::Unknown) {
      auto d = report(DiagID::err_unknown_param_type, p.typeRange);
      d << p.typeName;
      d.suggest(p.typeName, std::vector<std::string>{"int", "float", "bool", "dtype"}, p.typeRange);
    }
    names.declared.insert(p.name);
    const ast::DimItem *firstEllipsis = nullptr;
    for (const ast::DimItem &d : p.tensorType.dims) {
      if (!d.ellipsis) continue;
      if (firstEllipsis)
        report(DiagID::err_two_ellipses, d.range).note(DiagID::note_previous_definition, firstEllipsis->range) << p.name;
      else
        firstEllipsis = &d;
    }
    for (const ast::DimItem &d : p.tensorType.dims)
      if (auto *n = llvm::dyn_cast_or_null<ast::NameExpr>(d.expr.get())) names.declared.insert(n->name);
    for (const std::string &e : p.enumValues) names.declared.insert(e);
  }
  names.body(layer.body);
  LayerLinter lint{*this, names.declared};
  lint.body(layer.body);
}
