//===- frontend/SemaDecl.cpp - inputs, parameters and their shapes -------===//
//
// The declarations of a model or layer body: `input` (dtype required) and
// `param` (dtype defaulting to the plan's master dtype, an initialiser, and
// @shard / @frozen), with shapes folded to positive dims whose element count
// fits in 2^62.
//
//===----------------------------------------------------------------------===//

#include "frontend/SemaImpl.h"
#include "support/Plural.h"

#include <cmath>

using namespace planc;
using namespace planc::sema;
//===----------------------------------------------------------------------===//
// Declarations
//===----------------------------------------------------------------------===//

Shape Elaborator::evalShape(const ast::TensorType &t, Scope &scope, std::vector<std::string> &names, bool &ok) {
  Shape shape;
  ok = true;
  for (const ast::DimItem &d : t.dims) {
    if (d.ellipsis) {
      report(DiagID::err_expected_kind, d.range) << "a dimension" << "'...' (only layer parameters match any dims)";
      ok = false;
      continue;
    }
    Value v = eval(d.expr.get(), scope);
    if (v.isError()) {
      ok = false;
      continue;
    }
    if (v.kind != Value::Kind::Int || v.i <= 0) {
      report(DiagID::err_dim_not_positive, d.range) << describe(v);
      ok = false;
      continue;
    }
    shape.push_back(v.i);
    auto *n = llvm::dyn_cast<ast::NameExpr>(d.expr.get());
    names.push_back(n ? n->name : "");
  }
  if (ok) {
    int64_t numel = 1;
    for (int64_t dim : shape)
      if (__builtin_mul_overflow(numel, dim, &numel) || numel > (int64_t(1) << 62)) {
        report(DiagID::err_too_many_elements, t.range) << formatShape(shape);
        ok = false;
        break;
      }
  }
  return shape;
}

void Elaborator::declareInput(const ast::InputItem &in, Scope &scope) {
  if (Binding *prev = scope.lookupLocal(in.name); prev && !prev->undeclared) {
    report(DiagID::err_redeclared_name, in.nameRange).noteAt(DiagID::note_previous_definition, prev->declRange) << in.name;
    return;
  }
  std::vector<std::string> names;
  bool ok;
  Shape shape = evalShape(in.type, scope, names, ok);
  std::string dtype = in.type.dtype;
  if (dtype.empty()) {
    report(DiagID::err_expected_kind, in.type.range) << "a dtype before the shape, as in i32[batch, seq]" << "none";
    ok = false;
  } else if (!isDTypeName(dtype)) {
    auto d = report(DiagID::err_unknown_dtype, in.type.dtypeRange);
    d << dtype;
    d.suggest(dtype, dtypeNames(), in.type.dtypeRange);
    ok = false;
  }
  Value v = ok ? Value::tensor(shape, dtype, in.nameRange) : Value::error();
  if (ok) v.dimNames = names;
  for (const ast::Annotation &a : in.annotations) {
    if (a.name == "shard") {
      if (ok) checkShard(a, v, "input '" + in.name + "'", scope);
    } else {
      report(DiagID::err_annotation_target, a.range) << a.name << "an input";
    }
  }
  if (ok) {
    model.inputs.push_back({in.name, shape, dtype, in.range});
    if (lowering()) v.ir = lowerInput(model.inputs.back(), in.nameRange);
  }
  scope.define(in.name, {v, in.nameRange, true});
}

std::vector<int64_t> Elaborator::evalColumns(const ast::Annotation &a, const Shape &shape, Scope &scope) {
  if (a.args.size() < 2) {
    report(DiagID::err_annotation_args, a.fullRange) << a.name << "two or more integer factors of the last dim";
    return {};
  }
  std::vector<int64_t> factors;
  int64_t product = 1;
  for (const ast::Arg &arg : a.args) {
    Value f = eval(arg.value.get(), scope);
    if (f.isError()) return {};
    if (!arg.name.empty() || f.kind != Value::Kind::Int || f.i < 1) {
      report(DiagID::err_annotation_args, arg.value->range) << a.name << "positive integer factors of the last dim";
      return {};
    }
    factors.push_back(f.i);
    product = f.i > 0 && product > INT64_MAX / f.i ? 0 : product * f.i;
  }
  if (shape.empty() || product != shape.back()) {
    std::string dims;
    for (int64_t f : factors) dims += (dims.empty() ? "" : " x ") + std::to_string(f);
    report(DiagID::err_columns_product, a.fullRange) << dims << formatShape(shape);
    return {};
  }
  return factors;
}

void Elaborator::declareParam(const ast::ParamItem &p, Scope &scope) {
  if (Binding *prev = scope.lookupLocal(p.name); prev && !prev->undeclared) {
    report(DiagID::err_redeclared_name, p.nameRange).noteAt(DiagID::note_previous_definition, prev->declRange) << p.name;
    return;
  }
  std::vector<std::string> names;
  bool ok;
  Shape shape = evalShape(p.type, scope, names, ok);
  std::string dtype = p.type.dtype.empty() ? config.train.precision.master : p.type.dtype;
  if (!p.type.dtype.empty() && !isDTypeName(dtype)) {
    auto d = report(DiagID::err_unknown_dtype, p.type.dtypeRange);
    d << dtype;
    d.suggest(dtype, dtypeNames(), p.type.dtypeRange);
    ok = false;
  }
  ParamInfo info;
  info.path = currentPath(p.name);
  info.shape = shape;
  info.dtype = dtype;
  info.layerKind = callStack.empty() ? model.name : callStack.back().layer;
  info.range = p.range;
  info.frozen = frozenDepth > 0;
  if (!weightDecayScopes.empty()) info.weightDecay = weightDecayScopes.back();
  if (!callStack.empty()) info.callRange = callStack.front().callRange;
  // The initialiser: normal(std), scaled_normal(std), zeros, ones.
  if (const ast::Expr *init = p.init.get()) {
    std::string name;
    const ast::CallExpr *call = llvm::dyn_cast<ast::CallExpr>(init);
    if (call) name = call->callee;
    else if (auto *n = llvm::dyn_cast<ast::NameExpr>(init)) name = n->name;
    else name = std::string(init->range.Start.getPointer(), init->range.End.getPointer() - init->range.Start.getPointer());
    SMRange nameRange = call ? call->calleeRange : init->range;
    if (!call && (name == "normal" || name == "scaled_normal")) {
      report(DiagID::err_arg_kind, init->range) << "std" << name << "a positive number, as in normal(0.02)" << "none";
      ok = false;
    } else if (name == "zeros" || name == "ones") {
      info.init = name == "zeros" ? InitKind::Zeros : InitKind::Ones;
      if (call && !call->args.empty()) report(DiagID::err_too_many_args, call->range) << name << counted(0, "argument") << int64_t(call->args.size());
    } else if (call && (name == "normal" || name == "scaled_normal")) {
      info.init = name == "normal" ? InitKind::Normal : InitKind::ScaledNormal;
      Value stdv = call->args.size() == 1 ? eval(call->args[0].value.get(), scope) : Value::error();
      if (call->args.size() != 1) {
        report(DiagID::err_arg_kind, call->range) << "std" << name << "one positive number" << counted(int64_t(call->args.size()), "argument");
        ok = false;
      } else if (!stdv.isError() && (!stdv.isNumber() || stdv.f <= 0)) {
        report(DiagID::err_arg_kind, call->args[0].value->range) << "std" << name << "a positive number" << describe(stdv);
        ok = false;
      } else if (!stdv.isError()) {
        info.initStd = stdv.f;
        // GPT-2's residual scaling: std / sqrt(2 L) with L the depth of the innermost repeat.
        if (info.init == InitKind::ScaledNormal && !repeatCounts.empty())
          info.initStd = stdv.f / std::sqrt(2.0 * double(repeatCounts.back()));
      }
    } else {
      auto d = report(DiagID::err_unknown_init, nameRange);
      d << name;
      d.suggest(name, std::vector<std::string>{"normal", "scaled_normal", "zeros", "ones"}, nameRange);
      ok = false;
    }
  }
  Value v = ok ? Value::tensor(shape, dtype, p.nameRange) : Value::error();
  if (ok) v.dimNames = names;
  std::set<std::string> seenAnnotations;
  for (const ast::Annotation &a : p.annotations) {
    if (!seenAnnotations.insert(a.name).second) {
      report(DiagID::err_duplicate_annotation, a.range) << a.name;
      continue;
    }
    if (a.name == "shard") {
      if (ok && checkShard(a, v, "parameter '" + p.name + "'", scope)) {
        auto axis = parseMeshAxis(llvm::dyn_cast<ast::NameExpr>(a.args[0].value.get())->name);
        Value dimv = eval(a.args[1].value.get(), scope);
        info.shards.push_back({*axis, *normalizeDim(dimv.i, shape.size(), a.fullRange), a.fullRange});
      }
    } else if (a.name == "frozen") {
      if (!a.args.empty()) report(DiagID::err_annotation_args, a.fullRange) << a.name << "no arguments";
      info.frozen = true;
    } else if (a.name == "columns") {
      if (ok) info.columns = evalColumns(a, shape, scope);
    } else if (isWeightDecayAnnotation(a.name)) {
      if (!a.args.empty()) report(DiagID::err_annotation_args, a.fullRange) << a.name << "no arguments";
      if (seenAnnotations.count(oppositeWeightDecay(a.name)))
        report(DiagID::err_conflicting_annotations, a.range) << oppositeWeightDecay(a.name) << a.name;
      else
        info.weightDecay = a.name == "weight_decay"; // the parameter's own choice beats its calls'
    } else if (a.name == "precision") {
      report(DiagID::err_annotation_target, a.range) << a.name << "a parameter; set its dtype in its type";
    } else {
      if (llvm::is_contained(knownAnnotations(), a.name)) {
        report(DiagID::err_annotation_target, a.range) << a.name << "a parameter";
      } else {
        reportUnknownAnnotation(a, &scope);
      }
    }
  }
  // Two calls named alike (`as p` twice, or `as linear_1` beside unnamed
  // linears) would make two parameters with one path.
  if (ok) {
    auto [it, fresh] = paramPaths.emplace(info.path, info.callRange.isValid() ? info.callRange : p.nameRange);
    if (!fresh) {
      // Once per call: its other parameters collide for the same reason. The
      // error is at the user's call already, so no call backtrace either.
      SMRange at = info.callRange.isValid() ? info.callRange : p.nameRange;
      if (duplicatePathCalls.insert(at.Start.getPointer()).second)
        diags.report(DiagID::err_duplicate_param_path, at).note(DiagID::note_previous_definition, it->second)
            << info.path;
      ok = false;
    }
  }
  if (ok) {
    v.param = model.params.size();
    model.params.push_back(std::move(info));
    if (lowering()) v.ir = lowerParam(model.params.back(), p.nameRange);
  }
  scope.define(p.name, {v, p.nameRange, true});
}

