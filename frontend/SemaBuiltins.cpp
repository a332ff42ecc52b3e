//===- frontend/SemaBuiltins.cpp - shape rules of the primitive operations ===//
//
// Each primitive's arguments are bound against Builtins.cpp's table, then its
// shape rule runs here. The rules mirror what the IR ops will compute; the
// IR verifier checks the same facts again after lowering.
//
//===----------------------------------------------------------------------===//

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

} // namespace

Value Elaborator::callBuiltin(const BuiltinOp &op, const ast::CallExpr &call, Scope &scope) {
  const std::string name = op.name;
  std::vector<Value> args(op.params.size());
  std::vector<SMRange> ranges(op.params.size(), call.range);
  std::vector<bool> given(op.params.size(), false);
  std::vector<Value> tensors; // concat's operands
  std::vector<SMRange> tensorRanges;
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
      if (op.variadicTensors) {
        Value v = eval(arg.value.get(), scope);
        if (v.isError()) { ok = false; continue; }
        if (!v.isTensor()) {
          report(DiagID::err_arg_kind, arg.value->range) << "operand" << name << "a tensor" << describe(v);
          ok = false;
          continue;
        }
        tensors.push_back(v);
        tensorRanges.push_back(arg.value->range);
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
      index = op.params.size();
      std::vector<std::string> names;
      for (size_t i = 0; i < op.params.size(); ++i) {
        names.push_back(op.params[i].name);
        if (arg.name == op.params[i].name) index = i;
      }
      if (index == op.params.size()) {
        auto d = report(DiagID::err_unknown_named_arg, arg.nameRange);
        d << name << arg.name;
        d.suggest(arg.name, names, arg.nameRange);
        d.note(DiagID::note_builtin_signature, SMRange(), {name, signatureOf(op)});
        ok = false;
        continue;
      }
      if (given[index]) {
        report(DiagID::err_duplicate_arg, arg.nameRange) << arg.name;
        ok = false;
        continue;
      }
    }
    given[index] = true;
    ranges[index] = arg.value->range;
    const BuiltinParam &param = op.params[index];
    Value v;
    auto *bare = llvm::dyn_cast<ast::NameExpr>(arg.value.get());
    if (param.kind == BuiltinParamKind::DType && bare && !scope.lookup(bare->name)) {
      if (!isDTypeName(bare->name)) {
        auto d = report(DiagID::err_unknown_dtype, bare->range);
        d << bare->name;
        d.suggest(bare->name, dtypeNames(), bare->range);
        ok = false;
        continue;
      }
      v.kind = Value::Kind::DType;
      v.s = bare->name;
    } else {
      v = eval(arg.value.get(), scope);
    }
    if (v.isError()) { ok = false; continue; }
    const char *want = nullptr;
    switch (param.kind) {
    case BuiltinParamKind::Tensor: if (!v.isTensor()) want = "a tensor"; break;
    case BuiltinParamKind::Int: if (v.kind != Value::Kind::Int) want = "an integer"; break;
    case BuiltinParamKind::Float:
      if (!v.isNumber()) want = "a number";
      else v = Value::real(v.f, v.origin);
      break;
    case BuiltinParamKind::Bool: if (v.kind != Value::Kind::Bool) want = "true or false"; break;
    case BuiltinParamKind::DType: if (v.kind != Value::Kind::DType) want = "a dtype"; break;
    case BuiltinParamKind::IntList:
      if (v.kind != Value::Kind::List && v.kind != Value::Kind::Tuple) want = "a list of integers, as in [b, s, h]";
      else
        for (const Value &e : v.elements)
          if (e.kind != Value::Kind::Int) want = "a list of integers, as in [b, s, h]";
      break;
    case BuiltinParamKind::Any: break;
    }
    if (want) {
      report(DiagID::err_arg_kind, arg.value->range) << param.name << name << want << describe(v);
      ok = false;
      continue;
    }
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
  if (!ok) return Value::error();

  auto result = [&](Value v) {
    v.origin = call.range;
    v.param.reset();
    return v;
  };
  auto needFloat = [&](size_t i) {
    if (!isFloatDType(args[i].dtype)) {
      report(DiagID::err_dtype_expected, ranges[i]) << name << "a floating-point tensor" << describe(args[i]);
      return false;
    }
    return true;
  };
  auto dimArg = [&](size_t tensor, size_t dim) -> std::optional<int64_t> {
    return normalizeDim(args[dim].i, args[tensor].shape.size(), ranges[dim]);
  };

  // The shape rule of each primitive; lowering (when on) then emits its op.
  auto rule = [&]() -> Value {
    // ---- constants: unary math and min/max fold at compile time
    static const std::set<std::string> unaryMath{"exp", "log", "sqrt", "rsqrt", "tanh", "abs"};
    if (unaryMath.count(name) && args[0].isNumber()) {
      double x = args[0].f, out = 0;
      if (name == "exp") out = std::exp(x);
      else if (name == "log") out = std::log(x);
      else if (name == "sqrt") out = std::sqrt(x);
      else if (name == "rsqrt") out = 1.0 / std::sqrt(x);
      else if (name == "tanh") out = std::tanh(x);
      else if (name == "abs") {
        if (args[0].kind == Value::Kind::Int) {
          if (args[0].i == INT64_MIN) {
            report(DiagID::err_dim_overflow, call.range) << "abs";
            return Value::error();
          }
          return Value::integer(args[0].i < 0 ? -args[0].i : args[0].i, call.range);
        }
        out = std::fabs(x);
      }
      if (std::isnan(out) || (std::isinf(out) && (name == "log" || name == "rsqrt"))) {
        // log(0), log(-1), sqrt(-1), rsqrt(0): the argument is outside the function's domain.
        report(DiagID::err_op_arg_value, ranges[0]) << "x" << name << "in its domain" << describe(args[0]);
        return Value::error();
      }
      if (!std::isfinite(out)) { // exp(1000): a fine argument, a result too large for a number
        std::string text(call.range.Start.getPointer(), call.range.End.getPointer() - call.range.Start.getPointer());
        report(DiagID::err_float_not_finite, call.range) << text;
        return Value::error();
      }
      return Value::real(out, call.range);
    }
    if (name == "min" || name == "max") {
      if (!args[0].isNumber() || !args[1].isNumber()) {
        report(DiagID::err_arg_kind, call.range) << "a" << name << "two constants (for tensors use amax)"
                                                 << describe(args[0].isNumber() ? args[1] : args[0]);
        return Value::error();
      }
      bool pickFirst = name == "min" ? args[0].f <= args[1].f : args[0].f >= args[1].f;
      if (args[0].kind == Value::Kind::Int && args[1].kind == Value::Kind::Int)
        pickFirst = name == "min" ? args[0].i <= args[1].i : args[0].i >= args[1].i;
      return result(pickFirst ? args[0] : args[1]);
    }
    if (unaryMath.count(name) || name == "relu" || name == "gelu" || name == "silu" || name == "sigmoid") {
      if (!args[0].isTensor()) {
        report(DiagID::err_arg_kind, ranges[0]) << "x" << name << "a tensor or a number" << describe(args[0]);
        return Value::error();
      }
      if (!needFloat(0)) return Value::error();
      return result(args[0]);
    }
    if (name == "pow") return needFloat(0) ? result(args[0]) : Value::error();

    if (name == "sum" || name == "mean" || name == "amax") {
      if (name != "amax" && !needFloat(0)) return Value::error();
      auto d = dimArg(0, 1);
      if (!d) return Value::error();
      Value out = args[0];
      if (args[2].b) {
        out.shape[*d] = 1;
        out.dimNames[*d] = "";
      } else {
        out.shape.erase(out.shape.begin() + *d);
        out.dimNames.erase(out.dimNames.begin() + *d);
      }
      return result(out);
    }
    if (name == "softmax" || name == "log_softmax") {
      if (!needFloat(0) || !dimArg(0, 1)) return Value::error();
      return result(args[0]);
    }
    if (name == "layer_norm" || name == "rms_norm") {
      if (!needFloat(0)) return Value::error();
      if (args[0].shape.empty()) {
        report(DiagID::err_rank_at_least, ranges[0]) << "x" << name << int64_t(1) << formatShape(args[0].shape);
        return Value::error();
      }
      Shape want{args[0].shape.back()};
      size_t last = name == "layer_norm" ? 2 : 1;
      for (size_t i = 1; i <= last; ++i) {
        if (args[i].shape != want) {
          report(DiagID::err_shape_mismatch, ranges[i]) << name << formatShape(want) << formatShape(args[i].shape);
          return Value::error();
        }
        if (args[i].dtype != args[0].dtype) {
          report(DiagID::err_dtype_mismatch, ranges[i]) << name << args[0].dtype << args[i].dtype;
          return Value::error();
        }
      }
      if (args[last + 1].f <= 0) {
        report(DiagID::err_op_arg_value, ranges[last + 1]) << "eps" << name << "positive" << describe(args[last + 1]);
        return Value::error();
      }
      return result(args[0]);
    }
    if (name == "gather") {
      const Value &table = args[0], &idx = args[1];
      if (table.shape.size() != 2) {
        report(DiagID::err_rank_mismatch, ranges[0]) << "table" << name << int64_t(2) << formatShape(table.shape);
        return Value::error();
      }
      if (!isIntDType(idx.dtype)) {
        report(DiagID::err_dtype_expected, ranges[1]) << name << "integer indices" << describe(idx);
        return Value::error();
      }
      Value out = Value::tensor(idx.shape, table.dtype, call.range);
      out.dimNames = idx.dimNames;
      out.shape.push_back(table.shape[1]);
      out.dimNames.push_back(table.dimNames[1]);
      return out;
    }
    if (name == "dropout") {
      if (!needFloat(0)) return Value::error();
      if (args[1].f < 0 || args[1].f >= 1) {
        report(DiagID::err_op_arg_value, ranges[1]) << "p" << name << "in [0, 1)" << describe(args[1]);
        return Value::error();
      }
      return result(args[0]);
    }
    if (name == "rope") {
      if (!needFloat(0)) return Value::error();
      if (args[0].shape.size() != 4) {
        report(DiagID::err_rank_mismatch, ranges[0]) << "x" << name << int64_t(4) << formatShape(args[0].shape);
        return Value::error();
      }
      if (args[0].shape.back() % 2 != 0) {
        report(DiagID::err_op_arg_value, ranges[0]) << "head dimension" << name << "even" << ("odd (" + std::to_string(args[0].shape.back()) + ")");
        return Value::error();
      }
      if (args[1].f <= 0) {
        report(DiagID::err_op_arg_value, ranges[1]) << "theta" << name << "positive" << describe(args[1]);
        return Value::error();
      }
      return result(args[0]);
    }
    if (name == "causal_mask") {
      const Shape &s = args[0].shape;
      if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2]) {
        report(DiagID::err_op_arg_value, ranges[0]) << "x" << name << "square in its last two dimensions" << formatShape(s);
        return Value::error();
      }
      return needFloat(0) ? result(args[0]) : Value::error();
    }
    if (name == "reshape") {
      Shape target;
      std::vector<std::string> names;
      int inferred = -1;
      int64_t known = 1, total = 1;
      for (int64_t d : args[0].shape) total *= d; // Sema bounded every tensor to 2^62 elements
      auto *list = llvm::dyn_cast<ast::ListExpr>(call.args[1].value.get());
      for (size_t i = 0; i < args[1].elements.size(); ++i) {
        int64_t d = args[1].elements[i].i;
        auto *n = list && i < list->elements.size() ? llvm::dyn_cast<ast::NameExpr>(list->elements[i].get()) : nullptr;
        names.push_back(n ? n->name : "");
        if (d == -1 && inferred < 0) {
          inferred = int(i);
          target.push_back(1);
          continue;
        }
        if (d <= 0) {
          report(DiagID::err_dim_not_positive, ranges[1]) << describe(args[1].elements[i]);
          return Value::error();
        }
        if (!checkedMul(known, d, known, ranges[1])) return Value::error();
        target.push_back(d);
      }
      if (inferred >= 0) {
        if (known == 0 || total % known != 0) {
          // Show the shape as written, with its -1: "[-1, 3] (a multiple of 3 elements)".
          target[inferred] = -1;
          report(DiagID::err_reshape_elements, call.range)
              << formatShape(args[0].shape) << counted(total, "element") << formatShape(target)
              << ("a multiple of " + std::to_string(known) + " elements");
          return Value::error();
        }
        target[inferred] = total / known;
        known = total;
      }
      if (known != total) {
        report(DiagID::err_reshape_elements, call.range)
            << formatShape(args[0].shape) << counted(total, "element") << formatShape(target) << counted(known, "element");
        return Value::error();
      }
      Value out = Value::tensor(target, args[0].dtype, call.range);
      out.dimNames = names;
      return out;
    }
    if (name == "transpose") {
      auto a = dimArg(0, 1), b = dimArg(0, 2);
      if (!a || !b) return Value::error();
      Value out = args[0];
      std::swap(out.shape[*a], out.shape[*b]);
      std::swap(out.dimNames[*a], out.dimNames[*b]);
      return result(out);
    }
    if (name == "slice") {
      auto d = dimArg(0, 1);
      if (!d) return Value::error();
      int64_t size = args[0].shape[*d], start = args[2].i, end = args[3].i;
      if (start < 0 || end > size || start >= end) {
        report(DiagID::err_op_arg_value, call.range) << "start..end" << name
            << ("within 0.." + std::to_string(size) + " and non-empty")
            << (std::to_string(start) + ".." + std::to_string(end));
        return Value::error();
      }
      Value out = args[0];
      out.shape[*d] = end - start;
      out.dimNames[*d] = "";
      return result(out);
    }
    if (name == "concat") {
      if (tensors.size() < 2) {
        report(DiagID::err_missing_arg, call.range) << "a second tensor" << name;
        return Value::error();
      }
      auto d = normalizeDim(args[0].i, tensors[0].shape.size(), ranges[0]);
      if (!d) return Value::error();
      Value out = tensors[0];
      for (size_t t = 1; t < tensors.size(); ++t) {
        const Value &v = tensors[t];
        if (v.dtype != out.dtype) {
          report(DiagID::err_dtype_mismatch, tensorRanges[t]) << name << out.dtype << v.dtype;
          return Value::error();
        }
        bool same = v.shape.size() == out.shape.size();
        for (size_t i = 0; same && i < v.shape.size(); ++i)
          if (int64_t(i) != *d && v.shape[i] != out.shape[i]) same = false;
        if (!same) {
          report(DiagID::err_shape_mismatch, tensorRanges[t]) << name << formatShape(tensors[0].shape) << formatShape(v.shape);
          return Value::error();
        }
        if (__builtin_add_overflow(out.shape[*d], v.shape[*d], &out.shape[*d])) {
          report(DiagID::err_dim_overflow, call.range) << "concat";
          return Value::error();
        }
      }
      out.dimNames[*d] = "";
      return result(out);
    }
    if (name == "cast") {
      Value out = args[0];
      out.dtype = args[1].s;
      return result(out);
    }
    if (name == "repeat_interleave") {
      auto d = dimArg(0, 2);
      if (!d) return Value::error();
      if (args[1].i <= 0) {
        report(DiagID::err_op_arg_value, ranges[1]) << "n" << name << "positive" << describe(args[1]);
        return Value::error();
      }
      Value out = args[0];
      if (!checkedMul(out.shape[*d], args[1].i, out.shape[*d], call.range)) return Value::error();
      out.dimNames[*d] = "";
      return result(out);
    }
    if (name == "cross_entropy") {
      const Value &logits = args[0], &targets = args[1];
      if (!needFloat(0)) return Value::error();
      if (!isIntDType(targets.dtype)) {
        report(DiagID::err_dtype_expected, ranges[1]) << name << "integer targets" << describe(targets);
        return Value::error();
      }
      Shape lead(logits.shape.begin(), logits.shape.empty() ? logits.shape.end() : logits.shape.end() - 1);
      if (logits.shape.empty() || lead != targets.shape) {
        report(DiagID::err_shape_mismatch, call.range) << name << ("logits " + formatShape(logits.shape))
                                                       << ("targets " + formatShape(targets.shape));
        return Value::error();
      }
      return Value::tensor({}, "f32", call.range);
    }
    return Value::error();
  };
  Value v = rule();
  if (lowering() && v.isTensor()) v.ir = lowerBuiltin(name, args, tensors, v, call);
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
