//===- frontend/BuiltinRules.cpp - the shape rules of the primitive operations ===//

#include "frontend/BuiltinRules.h"
#include "support/Plural.h"

#include <cmath>
#include <map>
#include <set>

using namespace planc;
using namespace planc::sema;

Value BuiltinRules::apply() {
  // A constant argument folds (exp(2.0)); on a tensor the same names are ops.
  static const std::set<std::string> unaryMath{"exp", "log", "sqrt", "rsqrt", "tanh", "abs"};
  if (unaryMath.count(name) && args[0].isNumber()) return foldMath();
  using Rule = Value (BuiltinRules::*)();
  static const std::map<std::string, Rule> rules = {
      {"min", &BuiltinRules::minMax},
      {"max", &BuiltinRules::minMax},
      {"exp", &BuiltinRules::activation},
      {"log", &BuiltinRules::activation},
      {"sqrt", &BuiltinRules::activation},
      {"rsqrt", &BuiltinRules::activation},
      {"tanh", &BuiltinRules::activation},
      {"abs", &BuiltinRules::activation},
      {"relu", &BuiltinRules::activation},
      {"gelu", &BuiltinRules::activation},
      {"silu", &BuiltinRules::activation},
      {"sigmoid", &BuiltinRules::activation},
      {"pow", &BuiltinRules::pow},
      {"sum", &BuiltinRules::reduction},
      {"mean", &BuiltinRules::reduction},
      {"amax", &BuiltinRules::reduction},
      {"softmax", &BuiltinRules::softmax},
      {"log_softmax", &BuiltinRules::softmax},
      {"layer_norm", &BuiltinRules::norm},
      {"rms_norm", &BuiltinRules::norm},
      {"gather", &BuiltinRules::gather},
      {"dropout", &BuiltinRules::dropout},
      {"rope", &BuiltinRules::rope},
      {"causal_mask", &BuiltinRules::causalMask},
      {"reshape", &BuiltinRules::reshape},
      {"transpose", &BuiltinRules::transpose},
      {"slice", &BuiltinRules::slice},
      {"concat", &BuiltinRules::concat},
      {"cast", &BuiltinRules::cast},
      {"repeat_interleave", &BuiltinRules::repeatInterleave},
      {"cross_entropy", &BuiltinRules::crossEntropy},
  };
  auto it = rules.find(name);
  return it == rules.end() ? Value::error() : (this->*it->second)();
}

Value BuiltinRules::result(Value v) const {
  v.origin = call.range;
  v.param.reset();
  return v;
}

bool BuiltinRules::needFloat(size_t i) {
  if (!isFloatDType(args[i].dtype)) {
    report(DiagID::err_dtype_expected, ranges[i]) << name << "a floating-point tensor" << describe(args[i]);
    return false;
  }
  return true;
}

std::optional<int64_t> BuiltinRules::dimArg(size_t tensor, size_t dim) {
  return sema.normalizeDim(args[dim].i, args[tensor].shape.size(), ranges[dim]);
}

Value BuiltinRules::pow() { return needFloat(0) ? result(args[0]) : Value::error(); }

/// exp(2.0), abs(-3): a constant folds at compile time.
Value BuiltinRules::foldMath() {
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

/// min and max of two constants.
Value BuiltinRules::minMax() {
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

/// The unary math and activations on a tensor.
Value BuiltinRules::activation() {
  if (!args[0].isTensor()) {
    report(DiagID::err_arg_kind, ranges[0]) << "x" << name << "a tensor or a number" << describe(args[0]);
    return Value::error();
  }
  if (!needFloat(0)) return Value::error();
  return result(args[0]);
}

/// sum, mean, amax along one dim, which stays (keepdim) as 1 or goes.
Value BuiltinRules::reduction() {
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

/// softmax and log_softmax along a dim.
Value BuiltinRules::softmax() {
  if (!needFloat(0) || !dimArg(0, 1)) return Value::error();
  return result(args[0]);
}

/// layer_norm (x, weight, bias, eps) and rms_norm (x, weight, eps): weight and bias of the last dim.
Value BuiltinRules::norm() {
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

/// An embedding lookup: rows of a [vocab, h] table at integer indices.
Value BuiltinRules::gather() {
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

Value BuiltinRules::dropout() {
  if (!needFloat(0)) return Value::error();
  if (args[1].f < 0 || args[1].f >= 1) {
    report(DiagID::err_op_arg_value, ranges[1]) << "p" << name << "in [0, 1)" << describe(args[1]);
    return Value::error();
  }
  return result(args[0]);
}

/// Rotary positions on [b, heads, s, d], d even.
Value BuiltinRules::rope() {
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

Value BuiltinRules::causalMask() {
  const Shape &s = args[0].shape;
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2]) {
    report(DiagID::err_op_arg_value, ranges[0]) << "x" << name << "square in its last two dimensions" << formatShape(s);
    return Value::error();
  }
  return needFloat(0) ? result(args[0]) : Value::error();
}

/// A target shape with at most one -1; the names of its dims kept as written.
Value BuiltinRules::reshape() {
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
    if (!sema.checkedMul(known, d, known, ranges[1])) return Value::error();
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

Value BuiltinRules::transpose() {
  auto a = dimArg(0, 1), b = dimArg(0, 2);
  if (!a || !b) return Value::error();
  Value out = args[0];
  std::swap(out.shape[*a], out.shape[*b]);
  std::swap(out.dimNames[*a], out.dimNames[*b]);
  return result(out);
}

Value BuiltinRules::slice() {
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

/// Tensors alike but along the dim, joined along it.
Value BuiltinRules::concat() {
  if (tensors.size() < 2) {
    report(DiagID::err_missing_arg, call.range) << "a second tensor" << name;
    return Value::error();
  }
  auto d = sema.normalizeDim(args[0].i, tensors[0].shape.size(), ranges[0]);
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

Value BuiltinRules::cast() {
  Value out = args[0];
  out.dtype = args[1].s;
  return result(out);
}

Value BuiltinRules::repeatInterleave() {
  auto d = dimArg(0, 2);
  if (!d) return Value::error();
  if (args[1].i <= 0) {
    report(DiagID::err_op_arg_value, ranges[1]) << "n" << name << "positive" << describe(args[1]);
    return Value::error();
  }
  Value out = args[0];
  if (!sema.checkedMul(out.shape[*d], args[1].i, out.shape[*d], call.range)) return Value::error();
  out.dimNames[*d] = "";
  return result(out);
}

/// The mean loss of logits [..., V] against integer targets [...].
Value BuiltinRules::crossEntropy() {
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
