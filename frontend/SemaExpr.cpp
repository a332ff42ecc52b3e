//===- frontend/SemaExpr.cpp - evaluating expressions to values ----------===//
//
// Integers are 64-bit with every operation overflow-checked; `/` on integers
// is exact division (a remainder is an error: `hidden / heads` must divide).
// Tensors combine with NumPy broadcasting: shapes are aligned at the right and
// each pair of dims must be equal or one of them 1.
//
//===----------------------------------------------------------------------===//

#include "frontend/SemaImpl.h"

#include <cmath>
#include <limits>
#include <set>

using namespace planc;
using namespace planc::sema;

namespace {

std::string binarySpelling(ast::BinaryExpr::Op op) { return ast::spelling(op); }

/// The innermost call under annotations and `as`, with what wraps it.
const ast::Expr *unwrap(const ast::Expr *e, CallAnnotations &annotations, std::string &name) {
  while (true) {
    if (auto *a = llvm::dyn_cast<ast::AnnotatedExpr>(e)) {
      annotations.list.insert(annotations.list.begin(), &a->annotation);
      e = a->inner.get();
    } else if (auto *n = llvm::dyn_cast<ast::NamedExpr>(e)) {
      if (name.empty()) name = n->name;
      e = n->inner.get();
    } else {
      return e;
    }
    if (!e) return nullptr;
  }
}

} // namespace

std::optional<int64_t> Elaborator::normalizeDim(int64_t dim, size_t rank, SMRange r) {
  int64_t d = dim < 0 ? dim + int64_t(rank) : dim;
  if (d < 0 || d >= int64_t(rank)) {
    report(DiagID::err_axis_out_of_range, r) << dim << int64_t(rank);
    return std::nullopt;
  }
  return d;
}

bool Elaborator::checkedMul(int64_t a, int64_t b, int64_t &out, SMRange r) {
  if (__builtin_mul_overflow(a, b, &out)) {
    report(DiagID::err_dim_overflow, r) << "multiplication";
    return false;
  }
  return true;
}

bool Elaborator::checkShard(const ast::Annotation &a, Value &target, const std::string &what, Scope &scope) {
  if (a.args.size() != 2) {
    report(DiagID::err_annotation_args, a.fullRange) << a.name << "a mesh axis and a dimension, as in @shard(tp, 1)";
    return false;
  }
  auto *axisName = llvm::dyn_cast<ast::NameExpr>(a.args[0].value.get());
  std::optional<MeshAxis> axis = axisName ? parseMeshAxis(axisName->name) : std::nullopt;
  if (!axis) {
    auto d = report(DiagID::err_unknown_mesh_axis, a.args[0].value->range);
    SMRange r = a.args[0].value->range; // what was written, where it is not a name: '2'
    d << (axisName ? axisName->name : std::string(r.Start.getPointer(), r.End.getPointer() - r.Start.getPointer()));
    if (axisName) {
      d.suggest(axisName->name, std::vector<std::string>{"dp", "tp", "pp", "cp", "ep"}, axisName->range);
    }
    return false;
  }
  Value dim = eval(a.args[1].value.get(), scope); // a constant: `@shard(tp, d)` with `let d = 1`
  if (dim.isError()) return false;
  if (dim.kind != Value::Kind::Int) {
    report(DiagID::err_annotation_args, a.args[1].value->range) << a.name << "an integer dimension";
    return false;
  }
  auto d = normalizeDim(dim.i, target.shape.size(), a.args[1].value->range);
  if (!d) return false;
  int64_t size = target.shape[*d];
  int64_t ways = config.parallel.size(*axis);
  if (size % ways != 0) {
    if (!callStack.empty() && !shardErrors.insert({callStack.back().id, *axis}).second) return false;
    std::string dimName = target.dimNames.size() > size_t(*d) && !target.dimNames[*d].empty()
                              ? "'" + target.dimNames[*d] + "'"
                              : "dimension " + std::to_string(*d) + " of " + what;
    auto diag = report(DiagID::err_shard_not_divisible, a.fullRange);
    diag << dimName << size << spelling(*axis) << ways;
    SMRange src = config.parallel.axisSource[unsigned(*axis)].range;
    if (src.isValid()) diag.note(DiagID::note_axis_size_here, src, {spelling(*axis), std::to_string(ways)});
    return false;
  }
  return true;
}

void Elaborator::reportUnknownAnnotation(const ast::Annotation &a, Scope *scope) {
  auto d = report(DiagID::err_unknown_annotation, a.range);
  d << a.name;
  // `x @w` with a tensor w is a matmul without its space, whatever it resembles.
  if (a.args.empty() && scope && isTensorName(*scope, a.name))
    d.note(DiagID::note_matmul_needs_space, a.range, {a.name});
  else
    d.suggest(a.name, knownAnnotations(), a.range, "@");
}

Value Elaborator::eval(const ast::Expr *e, Scope &scope) {
  if (!e) return Value::error();
  using K = ast::Expr::Kind;
  switch (e->kind) {
  case K::Number: {
    auto *n = llvm::cast<ast::NumberExpr>(e);
    if (n->overflow) return Value::error();
    return n->isInteger ? Value::integer(n->intValue, e->range) : Value::real(n->floatValue, e->range);
  }
  case K::Quantity:
    report(DiagID::err_expected_kind, e->range) << "a plain number (units belong in cluster and parallel settings)"
                                                << ("'" + llvm::cast<ast::QuantityExpr>(e)->text + "'");
    return Value::error();
  case K::String: {
    Value v;
    v.kind = Value::Kind::String;
    v.s = llvm::cast<ast::StringExpr>(e)->value;
    v.origin = e->range;
    return v;
  }
  case K::Bool:
    return Value::boolean(llvm::cast<ast::BoolExpr>(e)->value, e->range);
  case K::Name: {
    auto *n = llvm::cast<ast::NameExpr>(e);
    if (Binding *b = scope.lookup(n->name)) return b->value;
    if (isDTypeName(n->name)) {
      Value v;
      v.kind = Value::Kind::DType;
      v.s = n->name;
      return v;
    }
    std::vector<std::string> names = scope.visibleNames();
    // The literals are keywords, not names, but are misspelt as names (`flase`).
    names.insert(names.end(), {"true", "false"});
    auto d = report(DiagID::err_unknown_name, e->range);
    d << n->name;
    d.suggest(n->name, names, e->range);
    // Bind it as an error so later uses of the same misspelling stay quiet.
    scope.define(n->name, {Value::error(), e->range, false, /*undeclared=*/true});
    return Value::error();
  }
  case K::Call:
  case K::Annotated:
  case K::Named: {
    CallAnnotations annotations;
    std::string name;
    const ast::Expr *inner = unwrap(e, annotations, name);
    if (!inner) return Value::error();
    if (auto *call = llvm::dyn_cast<ast::CallExpr>(inner)) return evalCall(*call, scope, name, annotations);
    if (!name.empty()) {
      report(DiagID::err_as_on_non_call, e->range);
      scope.define(name, {Value::error(), e->range, true}); // its uses stay quiet
      return Value::error();
    }
    // An annotation on a value: only @shard (a sharding constraint) means something there.
    Value v = eval(inner, scope);
    for (const ast::Annotation *a : annotations.list) {
      if (a->name != "shard") {
        if (llvm::is_contained(knownAnnotations(), a->name)) {
          report(DiagID::err_annotation_target, a->range) << a->name << "a value; annotate a layer call";
        } else {
          reportUnknownAnnotation(*a, &scope);
        }
        v = Value::error();
        continue;
      }
      if (v.isError()) continue;
      if (!v.isTensor()) {
        report(DiagID::err_annotation_target, a->range) << a->name << describe(v);
        v = Value::error();
        continue;
      }
      if (!checkShard(*a, v, "this value", scope)) v = Value::error();
      else if (lowering() && v.ir) constrainSharding(v, *a, scope);
    }
    return v;
  }
  case K::Member: {
    auto *m = llvm::cast<ast::MemberExpr>(e);
    Value base = eval(m->base.get(), scope);
    if (base.isError()) return base;
    if (base.kind != Value::Kind::Instance) {
      // The message quotes what was written ('e' in `e.weight`), not its value.
      SMRange r = m->base->range;
      report(DiagID::err_member_of_non_instance, r)
          << llvm::StringRef(r.Start.getPointer(), r.End.getPointer() - r.Start.getPointer());
      return Value::error();
    }
    auto it = base.instance->params.find(m->member);
    if (it == base.instance->params.end()) {
      std::vector<std::string> names;
      for (auto &[n, i] : base.instance->params) names.push_back(n);
      auto d = report(DiagID::err_unknown_member, m->memberRange);
      d << base.instance->path << m->member;
      d.suggest(m->member, names, m->memberRange);
      return Value::error();
    }
    const ParamInfo &p = model.params[it->second];
    Value v = Value::tensor(p.shape, p.dtype, e->range);
    v.param = it->second;
    if (lowering()) v.ir = paramValues[it->second];
    return v;
  }
  case K::Unary: {
    auto *u = llvm::cast<ast::UnaryExpr>(e);
    Value v = eval(u->operand.get(), scope);
    if (v.isError()) return v;
    if (u->op == ast::UnaryExpr::Op::Not) {
      if (v.kind != Value::Kind::Bool) {
        report(DiagID::err_expected_kind, u->operand->range) << "true or false" << describe(v);
        return Value::error();
      }
      return Value::boolean(!v.b, e->range);
    }
    if (v.kind == Value::Kind::Int) {
      if (v.i == INT64_MIN) {
        report(DiagID::err_dim_overflow, e->range) << "negation";
        return Value::error();
      }
      return Value::integer(-v.i, e->range);
    }
    if (v.kind == Value::Kind::Float) return Value::real(-v.f, e->range);
    if (v.isTensor()) {
      v.origin = e->range;
      v.param.reset();
      if (lowering()) v.ir = lowerNeg(v, e->range);
      return v;
    }
    report(DiagID::err_operand_kind, e->range) << "-" << describe(v) << "nothing";
    return Value::error();
  }
  case K::Binary: {
    auto *b = llvm::cast<ast::BinaryExpr>(e);
    Value l = eval(b->lhs.get(), scope);
    using Op = ast::BinaryExpr::Op;
    // `mode == column` compares with an enum value, which is a bare name.
    if ((b->op == Op::Eq || b->op == Op::Ne) && l.kind == Value::Kind::Enum) {
      if (auto *n = llvm::dyn_cast<ast::NameExpr>(b->rhs.get()); n && !scope.lookup(n->name)) {
        if (std::find(l.enumValues->begin(), l.enumValues->end(), n->name) == l.enumValues->end()) {
          std::string choices;
          for (auto &c : *l.enumValues) choices += (choices.empty() ? "" : ", ") + c;
          // Enum values come from a layer parameter, which is what the left side names.
          SMRange lr = b->lhs->range;
          report(DiagID::err_enum_value, n->range)
              << n->name << llvm::StringRef(lr.Start.getPointer(), lr.End.getPointer() - lr.Start.getPointer()) << choices;
          return Value::error();
        }
        return Value::boolean((l.s == n->name) == (b->op == Op::Eq), e->range);
      }
    }
    Value r = eval(b->rhs.get(), scope);
    if (l.isError() || r.isError()) return Value::error();
    if (b->op == Op::And || b->op == Op::Or) {
      if (l.kind != Value::Kind::Bool || r.kind != Value::Kind::Bool) {
        report(DiagID::err_operand_kind, b->opRange) << binarySpelling(b->op) << describe(l) << describe(r);
        return Value::error();
      }
      return Value::boolean(b->op == Op::And ? (l.b && r.b) : (l.b || r.b), e->range);
    }
    if (l.isTensor() || r.isTensor()) {
      Value out = b->op == Op::MatMul ? matmul(*b, l, r) : binaryTensorOp(*b, l, r);
      if (lowering() && out.isTensor())
        out.ir = b->op == Op::MatMul ? lowerMatmul(*b, l, r, out) : lowerBinary(*b, l, r, out);
      return out;
    }
    if (b->op == Op::Eq || b->op == Op::Ne) {
      bool eq;
      if (l.isNumber() && r.isNumber()) eq = l.f == r.f && (l.kind != Value::Kind::Int || r.kind != Value::Kind::Int || l.i == r.i);
      else if (l.kind == r.kind && (l.kind == Value::Kind::Bool)) eq = l.b == r.b;
      else if (l.kind == r.kind && (l.kind == Value::Kind::Enum || l.kind == Value::Kind::DType || l.kind == Value::Kind::String)) eq = l.s == r.s;
      else {
        report(DiagID::err_operand_kind, b->opRange) << binarySpelling(b->op) << describe(l) << describe(r);
        return Value::error();
      }
      return Value::boolean(eq == (b->op == Op::Eq), e->range);
    }
    if (!l.isNumber() || !r.isNumber() || b->op == Op::MatMul) {
      report(DiagID::err_operand_kind, b->opRange) << binarySpelling(b->op) << describe(l) << describe(r);
      return Value::error();
    }
    if (b->op == Op::Lt || b->op == Op::Le || b->op == Op::Gt || b->op == Op::Ge) {
      bool both = l.kind == Value::Kind::Int && r.kind == Value::Kind::Int;
      double x = l.f, y = r.f;
      bool res = b->op == Op::Lt ? (both ? l.i < r.i : x < y)
                 : b->op == Op::Le ? (both ? l.i <= r.i : x <= y)
                 : b->op == Op::Gt ? (both ? l.i > r.i : x > y)
                                   : (both ? l.i >= r.i : x >= y);
      return Value::boolean(res, e->range);
    }
    if (l.kind == Value::Kind::Int && r.kind == Value::Kind::Int) {
      int64_t out = 0;
      switch (b->op) {
      case Op::Add:
        if (__builtin_add_overflow(l.i, r.i, &out)) { report(DiagID::err_dim_overflow, e->range) << "addition"; return Value::error(); }
        break;
      case Op::Sub:
        if (__builtin_sub_overflow(l.i, r.i, &out)) { report(DiagID::err_dim_overflow, e->range) << "subtraction"; return Value::error(); }
        break;
      case Op::Mul:
        if (!checkedMul(l.i, r.i, out, e->range)) return Value::error();
        break;
      case Op::Div:
      case Op::Mod:
        if (r.i == 0) { report(DiagID::err_division_by_zero, b->rhs->range); return Value::error(); }
        if (l.i == INT64_MIN && r.i == -1) { report(DiagID::err_dim_overflow, e->range) << "division"; return Value::error(); }
        if (b->op == Op::Mod) { out = l.i % r.i; break; }
        if (l.i % r.i != 0) {
          auto name = [](const ast::Expr *x, int64_t v) {
            auto *n = llvm::dyn_cast<ast::NameExpr>(x);
            return n ? "'" + n->name + "' (" + std::to_string(v) + ")" : std::to_string(v);
          };
          report(DiagID::err_inexact_division, e->range) << name(b->lhs.get(), l.i) << name(b->rhs.get(), r.i);
          return Value::error();
        }
        out = l.i / r.i;
        break;
      default:
        break;
      }
      return Value::integer(out, e->range);
    }
    double x = l.f, y = r.f, out = 0;
    switch (b->op) {
    case Op::Add: out = x + y; break;
    case Op::Sub: out = x - y; break;
    case Op::Mul: out = x * y; break;
    case Op::Div:
      if (y == 0) { report(DiagID::err_division_by_zero, b->rhs->range); return Value::error(); }
      out = x / y;
      break;
    case Op::Mod:
      if (y == 0) { report(DiagID::err_division_by_zero, b->rhs->range); return Value::error(); }
      out = std::fmod(x, y);
      break;
    default: break;
    }
    if (!std::isfinite(out)) {
      // Named by what was written: "number '1e300 * 1e300' is out of range".
      report(DiagID::err_float_not_finite, e->range)
          << llvm::StringRef(e->range.Start.getPointer(), e->range.End.getPointer() - e->range.Start.getPointer());
      return Value::error();
    }
    // A product or quotient of non-zero numbers that underflows (to 0 or a
    // subnormal) is reported like an overflow, never a silent zero.
    if ((b->op == Op::Mul || b->op == Op::Div) && x != 0 && (b->op == Op::Div || y != 0) &&
        std::fabs(out) < std::numeric_limits<double>::min()) {
      report(DiagID::err_float_not_finite, e->range)
          << llvm::StringRef(e->range.Start.getPointer(), e->range.End.getPointer() - e->range.Start.getPointer());
      return Value::error();
    }
    return Value::real(out, e->range);
  }
  case K::Tuple:
  case K::List: {
    Value v;
    v.kind = e->kind == K::Tuple ? Value::Kind::Tuple : Value::Kind::List;
    v.origin = e->range;
    const auto &elems = e->kind == K::Tuple ? llvm::cast<ast::TupleExpr>(e)->elements : llvm::cast<ast::ListExpr>(e)->elements;
    for (const auto &x : elems) {
      Value ev = eval(x.get(), scope);
      if (ev.isError()) return Value::error();
      v.elements.push_back(ev);
    }
    return v;
  }
  }
  return Value::error();
}

Value Elaborator::binaryTensorOp(const ast::BinaryExpr &e, const Value &l, const Value &r) {
  using Op = ast::BinaryExpr::Op;
  std::string op = binarySpelling(e.op);
  if (e.op != Op::Add && e.op != Op::Sub && e.op != Op::Mul && e.op != Op::Div) {
    report(DiagID::err_operand_kind, e.opRange) << op << describe(l) << describe(r);
    return Value::error();
  }
  // A number combines with any tensor; its dtype follows the tensor.
  if (!l.isTensor() || !r.isTensor()) {
    const Value &t = l.isTensor() ? l : r;
    const Value &s = l.isTensor() ? r : l;
    // An integer tensor stays integer: a fraction cannot scale or shift it.
    if (!s.isNumber() || (!isFloatDType(t.dtype) && s.kind == Value::Kind::Float)) {
      report(DiagID::err_operand_kind, e.opRange) << op << describe(l) << describe(r);
      return Value::error();
    }
    Value out = t;
    out.param.reset();
    out.origin = e.range;
    return out;
  }
  if (l.dtype != r.dtype) {
    report(DiagID::err_dtype_mismatch, e.opRange)
        .range(e.lhs->range)
        .range(e.rhs->range)
        .note(DiagID::note_operand_from, l.origin, {"left", l.dtype + formatShape(l.shape)})
        .note(DiagID::note_operand_from, r.origin, {"right", r.dtype + formatShape(r.shape)})
        << op << l.dtype << r.dtype;
    return Value::error();
  }
  size_t rank = std::max(l.shape.size(), r.shape.size());
  Value out = Value::tensor(Shape(rank, 1), l.dtype, e.range);
  for (size_t i = 0; i < rank; ++i) {
    // Align at the right, as NumPy does.
    size_t li = i + l.shape.size(), ri = i + r.shape.size();
    bool hasL = li >= rank, hasR = ri >= rank;
    int64_t a = hasL ? l.shape[li - rank] : 1, b = hasR ? r.shape[ri - rank] : 1;
    if (a != b && a != 1 && b != 1) {
      report(DiagID::err_broadcast, e.opRange)
          .range(e.lhs->range)
          .range(e.rhs->range)
          .note(DiagID::note_operand_from, l.origin, {"left", formatShape(l.shape)})
          .note(DiagID::note_operand_from, r.origin, {"right", formatShape(r.shape)})
          << op << formatShape(l.shape) << formatShape(r.shape) << int64_t(i) << a << b;
      return Value::error();
    }
    out.shape[i] = a == 1 ? b : a;
    const std::string &ln = hasL ? l.dimNames[li - rank] : std::string();
    const std::string &rn = hasR ? r.dimNames[ri - rank] : std::string();
    out.dimNames[i] = a == 1 ? rn : ln;
  }
  return out;
}

Value Elaborator::matmul(const ast::BinaryExpr &e, const Value &l, const Value &r) {
  if (!l.isTensor() || !r.isTensor()) {
    report(DiagID::err_operand_kind, e.opRange) << "@" << describe(l) << describe(r);
    return Value::error();
  }
  if (l.shape.empty() || r.shape.empty()) {
    report(DiagID::err_matmul_rank, l.shape.empty() ? e.lhs->range : e.rhs->range) << int64_t(0);
    return Value::error();
  }
  if (l.dtype != r.dtype) {
    report(DiagID::err_dtype_mismatch, e.opRange)
        .range(e.lhs->range)
        .range(e.rhs->range)
        .note(DiagID::note_operand_from, l.origin, {"left", l.dtype + formatShape(l.shape)})
        .note(DiagID::note_operand_from, r.origin, {"right", r.dtype + formatShape(r.shape)})
        << "@" << l.dtype << r.dtype;
    return Value::error();
  }
  // NumPy matmul: a vector operand gains a unit dim that is dropped afterwards.
  Shape a = l.shape, b = r.shape;
  std::vector<std::string> an = l.dimNames, bn = r.dimNames;
  bool vecL = a.size() == 1, vecR = b.size() == 1;
  if (vecL) { a.insert(a.begin(), 1); an.insert(an.begin(), ""); }
  if (vecR) { b.push_back(1); bn.push_back(""); }
  int64_t k1 = a.back(), k2 = b[b.size() - 2];
  if (k1 != k2) {
    report(DiagID::err_matmul_inner, e.opRange)
        .range(e.lhs->range)
        .range(e.rhs->range)
        .note(DiagID::note_operand_from, l.origin, {"left", formatShape(l.shape)})
        .note(DiagID::note_operand_from, r.origin, {"right", formatShape(r.shape)})
        << formatShape(l.shape) << formatShape(r.shape) << k1 << k2;
    return Value::error();
  }
  Shape batchA(a.begin(), a.end() - 2), batchB(b.begin(), b.end() - 2);
  size_t rank = std::max(batchA.size(), batchB.size());
  Value out = Value::tensor({}, l.dtype, e.range);
  out.dimNames.clear();
  for (size_t i = 0; i < rank; ++i) {
    size_t ia = i + batchA.size(), ib = i + batchB.size();
    int64_t x = ia >= rank ? batchA[ia - rank] : 1, y = ib >= rank ? batchB[ib - rank] : 1;
    if (x != y && x != 1 && y != 1) {
      report(DiagID::err_broadcast, e.opRange)
          .range(e.lhs->range)
          .range(e.rhs->range)
          .note(DiagID::note_operand_from, l.origin, {"left", formatShape(l.shape)})
          .note(DiagID::note_operand_from, r.origin, {"right", formatShape(r.shape)})
          << "@" << formatShape(l.shape) << formatShape(r.shape) << int64_t(i) << x << y;
      return Value::error();
    }
    out.shape.push_back(x == 1 ? y : x);
    out.dimNames.push_back(x == 1 ? (ib >= rank ? bn[ib - rank] : "") : (ia >= rank ? an[ia - rank] : ""));
  }
  if (!vecL) { out.shape.push_back(a[a.size() - 2]); out.dimNames.push_back(an[an.size() - 2]); }
  if (!vecR) { out.shape.push_back(b.back()); out.dimNames.push_back(bn.back()); }
  return out;
}
