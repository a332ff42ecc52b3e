//===- frontend/Sema.cpp - model elaboration: statements and layer calls --===//
//
// The model body runs once, top to bottom, like a program whose values are
// types: `repeat` unrolls, `if` picks a branch, a layer call binds its
// arguments (tensor parameters are shape patterns) and runs the layer body in a
// fresh scope. Parameters are collected with their layer paths on the way.
//
//===----------------------------------------------------------------------===//

#include "frontend/SemaImpl.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <set>

using namespace planc;
using namespace planc::sema;
using llvm::SMLoc;

namespace {
constexpr unsigned kMaxCallDepth = 64;
constexpr int64_t kMaxRepeat = 100000;
} // namespace

std::string planc::formatShape(const Shape &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

uint64_t ParamInfo::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= uint64_t(d);
  return n;
}

uint64_t ModelInfo::totalParams() const {
  uint64_t n = 0;
  for (const ParamInfo &p : params) n += p.numel();
  return n;
}

uint64_t ModelInfo::trainableParams() const {
  uint64_t n = 0;
  for (const ParamInfo &p : params)
    if (!p.frozen) n += p.numel();
  return n;
}

std::string sema::describe(const Value &v) {
  switch (v.kind) {
  case Value::Kind::Error: return "an invalid value";
  case Value::Kind::Int: return "the integer " + std::to_string(v.i);
  case Value::Kind::Float: {
    // %g, as the diagnostics print numbers: 1.5 and 1e-05, not 1.500000e+00; a whole
    // number keeps its ".0" (2.0, not 2) so that it is not mistaken for an integer.
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v.f);
    std::string text = buf;
    if (text.find_first_not_of("-0123456789") == std::string::npos) text += ".0";
    return "the number " + text;
  }
  case Value::Kind::Bool: return v.b ? "true" : "false";
  case Value::Kind::String: return "a string";
  case Value::Kind::DType: return "the dtype " + v.s;
  case Value::Kind::Enum: return "'" + v.s + "'";
  case Value::Kind::Tensor: return "a tensor " + v.dtype + formatShape(v.shape);
  case Value::Kind::Tuple: return "a tuple of " + std::to_string(v.elements.size());
  case Value::Kind::List: return "a list";
  case Value::Kind::Instance: return "the layer instance '" + (v.instance ? v.instance->path : "") + "'";
  }
  return "a value";
}

DiagBuilder Elaborator::report(DiagID id, SMRange range) {
  DiagBuilder d = diags.report(id, range);
  // A fault inside a layer body is shown with the calls that led there, innermost first.
  std::vector<Diagnostic> notes;
  for (auto it = callStack.rbegin(); it != callStack.rend(); ++it) {
    Diagnostic n;
    n.id = DiagID::note_in_layer_call;
    n.severity = Severity::Note;
    n.loc = it->callRange.Start;
    if (it->callRange.isValid()) n.ranges.push_back(it->callRange);
    n.message = formatDiagnostic(diagFormat(n.id), {it->layer});
    notes.push_back(std::move(n));
  }
  d.trailingNotes(notes);
  return d;
}

std::string Elaborator::currentPath(const std::string &leaf) const {
  std::string path;
  for (const std::string &s : pathStack) path += s + ".";
  return path + leaf;
}

//===----------------------------------------------------------------------===//
// Model
//===----------------------------------------------------------------------===//

void Elaborator::elaborateModel(const ast::ModelDecl &decl) {
  model.name = decl.name;
  model.nameRange = decl.nameRange;
  Scope scope;
  // `batch` is the micro-batch: the per-rank, per-step batch a model call sees.
  scope.define("batch", {Value::integer(config.train.microBatch), config.train.microBatchSource.range, true});
  Value ignored;
  bool didReturn = false;
  execBody(decl.body, scope, /*inLayer=*/false, &ignored, &didReturn);
  if (diags.hitErrorLimit() || outOfSteps) return;
  Binding *loss = scope.lookupLocal("loss");
  if (!loss) {
    report(DiagID::err_model_no_loss, decl.nameRange) << decl.name;
  } else if (loss->value.isTensor() && !loss->value.shape.empty()) {
    report(DiagID::err_loss_not_scalar, loss->declRange) << describe(loss->value);
  } else if (!loss->value.isError() && !loss->value.isTensor()) {
    report(DiagID::err_loss_not_scalar, loss->declRange) << describe(loss->value);
  } else if (lowering() && loss->value.ir) {
    builder->module.outputs.push_back({"loss", loss->value.ir, ir::OutputRole::Loss});
  }
}

void Elaborator::execBody(const ast::Body &body, Scope &scope, bool inLayer, Value *returned, bool *didReturn) {
  const ast::Item *previous = nullptr;
  for (const auto &item : body) {
    if (diags.hitErrorLimit() || outOfSteps) return;
    // Every statement is a step; a plan that needs millions is a mistake, reported once.
    if (++steps > kMaxSteps) {
      outOfSteps = true;
      report(DiagID::err_too_many_steps, item->range) << kMaxSteps;
      return;
    }
    if (*didReturn) {
      // Text right after a `return` never runs; after an `if` that returned it
      // merely did not run this time.
      if (previous && llvm::isa<ast::ReturnItem>(previous)) report(DiagID::err_code_after_return, item->range);
      return;
    }
    execItem(*item, scope, inLayer, returned, didReturn);
    previous = item.get();
  }
}

void Elaborator::bindAsErrors(const ast::Body &body, Scope &scope) {
  auto bind = [&](const std::string &name, SMRange r) {
    if (!scope.lookup(name)) scope.define(name, {Value::error(), r, false, /*undeclared=*/true});
  };
  for (const auto &item : body) {
    if (auto *l = llvm::dyn_cast<ast::LetItem>(item.get()))
      for (const auto &b : l->bindings) bind(b.name, b.nameRange);
    else if (auto *p = llvm::dyn_cast<ast::ParamItem>(item.get())) bind(p->name, p->nameRange);
    else if (auto *in = llvm::dyn_cast<ast::InputItem>(item.get())) bind(in->name, in->nameRange);
    else if (auto *a = llvm::dyn_cast<ast::AssignItem>(item.get()))
      for (size_t i = 0; i < a->names.size(); ++i) bind(a->names[i], a->nameRanges[i]);
    else if (auto *r = llvm::dyn_cast<ast::RepeatItem>(item.get())) bindAsErrors(r->body, scope);
    else if (auto *f = llvm::dyn_cast<ast::IfItem>(item.get())) {
      bindAsErrors(f->thenBody, scope);
      bindAsErrors(f->elseBody, scope);
    }
  }
}

void Elaborator::execItem(const ast::Item &item, Scope &scope, bool inLayer, Value *returned, bool *didReturn) {
  if (auto *let = llvm::dyn_cast<ast::LetItem>(&item)) {
    for (const auto &b : let->bindings) {
      Value v = eval(b.value.get(), scope);
      // A name used before this line is bound as `undeclared`: that use was the error, not this.
      if (Binding *prev = scope.lookupLocal(b.name); prev && !prev->undeclared) {
        report(DiagID::err_redeclared_name, b.nameRange)
            .noteAt(DiagID::note_previous_definition, prev->declRange)
            << b.name;
        continue;
      }
      if (!v.isError() && v.kind != Value::Kind::Int && v.kind != Value::Kind::Float &&
          v.kind != Value::Kind::Bool) {
        report(DiagID::err_expected_kind, b.value->range) << "a constant" << describe(v);
        v = Value::error();
      }
      // --dim name=value replaces a model-level integer dim (a smaller model
      // for `planc verify`); the frontend checked that the name is one.
      if (!inLayer)
        if (auto it = config.dimOverrides.find(b.name); it != config.dimOverrides.end()) {
          if (v.kind == Value::Kind::Int) v = Value::integer(it->second, v.origin);
          else if (!v.isError()) report(DiagID::err_dim_unknown, b.nameRange) << model.name << b.name;
        }
      scope.define(b.name, {v, b.nameRange, true});
    }
    return;
  }
  if (auto *in = llvm::dyn_cast<ast::InputItem>(&item)) {
    if (inLayer) {
      report(DiagID::err_input_in_layer, in->range) << (callStack.empty() ? "" : callStack.back().layer);
      return;
    }
    declareInput(*in, scope);
    return;
  }
  if (auto *p = llvm::dyn_cast<ast::ParamItem>(&item)) {
    declareParam(*p, scope);
    return;
  }
  if (auto *a = llvm::dyn_cast<ast::AssignItem>(&item)) {
    Value v = eval(a->value.get(), scope);
    if (a->names.size() > 1) {
      if (!v.isError() && (v.kind != Value::Kind::Tuple || v.elements.size() != a->names.size())) {
        report(DiagID::err_return_count, a->value->range)
            << int64_t(a->names.size()) << int64_t(v.kind == Value::Kind::Tuple ? v.elements.size() : 1);
        v = Value::error();
      }
    }
    for (size_t i = 0; i < a->names.size(); ++i) {
      Value part = a->names.size() == 1 ? v : v.isError() ? Value::error() : v.elements[i];
      Binding *existing = scope.lookup(a->names[i]);
      if (existing && existing->constant) {
        auto d = report(DiagID::err_assign_to_dim, a->nameRanges[i]);
        d << a->names[i];
        // `batch` without a train block is declared nowhere in the text: no note then.
        if (existing->declRange.isValid()) d.note(DiagID::note_declared_here, existing->declRange, {a->names[i]});
        continue;
      }
      // Reassignment updates the binding where it lives (x = x + f(x) inside a repeat).
      if (existing) {
        existing->value = part;
      } else {
        scope.define(a->names[i], {part, a->nameRanges[i], false});
      }
    }
    return;
  }
  if (auto *r = llvm::dyn_cast<ast::RepeatItem>(&item)) {
    Value count = eval(r->count.get(), scope);
    bool countOk = !count.isError() && count.kind == Value::Kind::Int && count.i > 0 && count.i <= kMaxRepeat;
    if (!countOk) {
      if (count.kind == Value::Kind::Int && count.i > kMaxRepeat)
        report(DiagID::err_repeat_too_large, r->count->range) << count.i << kMaxRepeat;
      else if (!count.isError())
        report(DiagID::err_repeat_count, r->count->range) << describe(count);
      bindAsErrors(r->body, scope);
      return;
    }
    // Nested repeats multiply: 1000 x 1000 x 1000 is no model, it is a hang.
    int64_t unrolled = count.i;
    for (int64_t outer : repeatCounts)
      if (__builtin_mul_overflow(unrolled, outer, &unrolled) || unrolled > kMaxRepeat) {
        report(DiagID::err_repeat_nested_too_large, r->count->range) << kMaxRepeat;
        bindAsErrors(r->body, scope);
        return;
      }
    CallAnnotations annotations;
    for (const auto &a : r->annotations) annotations.list.push_back(&a);
    applyCallAnnotations(annotations, r->range, &scope);
    bool topLevel = atModelTopLevel && !inLayer;
    if (topLevel) {
      model.numLayers += count.i;
      if (!model.layersRange.isValid()) model.layersRange = r->range;
    }
    bool frozen = llvm::any_of(r->annotations, [](const ast::Annotation &a) { return a.name == "frozen"; });
    if (frozen) ++frozenDepth;
    bool wasTop = atModelTopLevel;
    atModelTopLevel = false;
    repeatCounts.push_back(count.i);
    size_t pushed = lowering() ? pushAnnotationAttrs(annotations, scope) : 0;
    std::string label = r->label.empty() ? "blocks" : r->label;
    for (int64_t i = 0; i < count.i; ++i) {
      unsigned errorsBefore = diags.getNumErrors();
      Scope iteration(&scope);
      pathStack.push_back(label);
      pathStack.push_back(std::to_string(i));
      execBody(r->body, iteration, inLayer, returned, didReturn);
      pathStack.pop_back();
      pathStack.pop_back();
      // Every iteration runs the same text: once it failed, the rest would only repeat it.
      if (diags.getNumErrors() != errorsBefore || diags.hitErrorLimit()) break;
    }
    annotationAttrs.resize(annotationAttrs.size() - pushed);
    repeatCounts.pop_back();
    atModelTopLevel = wasTop;
    if (frozen) --frozenDepth;
    return;
  }
  if (auto *i = llvm::dyn_cast<ast::IfItem>(&item)) {
    Value c = eval(i->condition.get(), scope);
    if (c.isError() || c.kind != Value::Kind::Bool) {
      if (!c.isError()) report(DiagID::err_condition_not_bool, i->condition->range) << describe(c);
      bindAsErrors(i->thenBody, scope);
      bindAsErrors(i->elseBody, scope);
      return;
    }
    execBody(c.b ? i->thenBody : i->elseBody, scope, inLayer, returned, didReturn);
    return;
  }
  if (auto *r = llvm::dyn_cast<ast::ReturnItem>(&item)) {
    if (!inLayer) {
      report(DiagID::err_return_in_model, r->range);
      return;
    }
    std::vector<Value> values;
    for (const auto &e : r->values) values.push_back(eval(e.get(), scope));
    if (values.size() == 1) {
      *returned = values[0];
    } else {
      Value t;
      t.kind = Value::Kind::Tuple;
      for (auto &v : values)
        if (v.isError()) t.kind = Value::Kind::Error;
      if (!t.isError()) t.elements = std::move(values);
      *returned = t;
    }
    *didReturn = true;
    return;
  }
}

//===----------------------------------------------------------------------===//
// Layer calls
//===----------------------------------------------------------------------===//

bool Elaborator::bindTensorPattern(const ast::LayerParam &param, const Value &arg, SMRange argRange,
                                   Scope &layerScope, const std::string &layerName, SMRange callRange) {
  const ast::TensorType &pattern = param.tensorType;
  if (!pattern.dtype.empty() && pattern.dtype != arg.dtype) {
    report(DiagID::err_arg_kind, argRange)
        .note(DiagID::note_declared_here, param.nameRange, {param.name})
        << param.name << layerName
        // "an f32 tensor", "an i32 tensor", "a bf16 tensor", "a u8 tensor": the article follows the sound.
        << ((pattern.dtype[0] == 'f' || pattern.dtype[0] == 'i' ? "an " : "a ") + pattern.dtype + " tensor")
        << describe(arg);
    return false;
  }
  size_t ellipsis = pattern.dims.size();
  for (size_t i = 0; i < pattern.dims.size(); ++i)
    if (pattern.dims[i].ellipsis) {
      if (ellipsis != pattern.dims.size()) return false; // two: reported with the layer
      ellipsis = i;
    }
  size_t fixed = pattern.dims.size() - (ellipsis < pattern.dims.size() ? 1 : 0);
  if (ellipsis == pattern.dims.size() ? arg.shape.size() != fixed : arg.shape.size() < fixed) {
    DiagID id = ellipsis == pattern.dims.size() ? DiagID::err_rank_mismatch : DiagID::err_rank_at_least;
    report(id, argRange).note(DiagID::note_declared_here, param.nameRange, {param.name})
        << param.name << layerName << int64_t(fixed) << formatShape(arg.shape);
    return false;
  }
  // Dims before the ellipsis match from the front, those after it from the back.
  for (size_t i = 0; i < pattern.dims.size(); ++i) {
    if (i == ellipsis) continue;
    size_t argIndex = i < ellipsis ? i : arg.shape.size() - (pattern.dims.size() - i);
    int64_t size = arg.shape[argIndex];
    const ast::DimItem &d = pattern.dims[i];
    auto *name = llvm::dyn_cast<ast::NameExpr>(d.expr.get());
    if (name && !layerScope.lookup(name->name)) {
      layerScope.define(name->name, {Value::integer(size, argRange), d.range, true});
      continue;
    }
    Value expected;
    {
      BindingFrame frame(*this, layerName, callRange);
      expected = eval(d.expr.get(), layerScope);
      if (expected.isError()) return false;
      if (expected.kind != Value::Kind::Int) {
        report(DiagID::err_dim_not_positive, d.range) << describe(expected);
        return false;
      }
    }
    if (expected.i != size) {
      // A dim written as an expression is named by its text: "dimension '3 * h' of argument 'w'".
      std::string dimName = name ? name->name
                                 : std::string(d.range.Start.getPointer(), d.range.End.getPointer() - d.range.Start.getPointer());
      auto diag = report(DiagID::err_dim_mismatch, argRange);
      diag << dimName << param.name << size << expected.i;
      if (name) {
        if (Binding *b = layerScope.lookup(name->name)) diag.note(DiagID::note_dim_bound_here, b->declRange, {name->name, std::to_string(expected.i)});
      } else {
        diag.note(DiagID::note_declared_here, d.range, {param.name});
      }
      return false;
    }
  }
  return true;
}

Value Elaborator::instantiateLayer(const ast::LayerDecl &layer, const ast::CallExpr &call, Scope &scope,
                                   const std::string &segment, const CallAnnotations &annotations,
                                   std::shared_ptr<Instance> &instance) {
  for (const Frame &f : callStack)
    if (f.layer == layer.name) {
      report(DiagID::err_recursive_layer, call.calleeRange).note(DiagID::note_declared_here, layer.nameRange, {layer.name})
          << layer.name;
      return Value::error();
    }
  if (callStack.size() >= kMaxCallDepth) {
    report(DiagID::err_call_too_deep, call.calleeRange) << int64_t(kMaxCallDepth);
    return Value::error();
  }
  // Bind arguments: positional first, then named; defaults fill the rest.
  std::vector<const ast::Arg *> bound(layer.params.size(), nullptr);
  bool ok = true, sawNamed = false;
  size_t positional = 0;
  for (const ast::Arg &arg : call.args) {
    if (arg.name.empty()) {
      if (sawNamed) {
        report(DiagID::err_positional_after_named, arg.value->range);
        ok = false;
        continue;
      }
      if (positional >= layer.params.size()) {
        report(DiagID::err_too_many_args, arg.value->range)
            .note(DiagID::note_declared_here, layer.nameRange, {layer.name})
            << layer.name << int64_t(layer.params.size()) << int64_t(call.args.size());
        ok = false;
        break;
      }
      bound[positional++] = &arg;
      continue;
    }
    sawNamed = true;
    size_t index = layer.params.size();
    for (size_t i = 0; i < layer.params.size(); ++i)
      if (layer.params[i].name == arg.name) index = i;
    if (index == layer.params.size()) {
      std::vector<std::string> names;
      for (auto &p : layer.params) names.push_back(p.name);
      auto d = report(DiagID::err_unknown_named_arg, arg.nameRange);
      d << layer.name << arg.name;
      d.suggest(arg.name, names, arg.nameRange);
      ok = false;
      continue;
    }
    if (bound[index]) {
      report(DiagID::err_duplicate_arg, arg.nameRange) << arg.name;
      ok = false;
      continue;
    }
    bound[index] = &arg;
  }
  Scope layerScope; // layers see their parameters and nothing of the caller
  for (size_t i = 0; i < layer.params.size(); ++i) {
    const ast::LayerParam &param = layer.params[i];
    const ast::Expr *expr = bound[i] ? bound[i]->value.get() : param.defaultValue.get();
    if (!expr) {
      if (ok)
        report(DiagID::err_missing_arg, call.range).note(DiagID::note_declared_here, param.nameRange, {param.name})
            << param.name << layer.name;
      ok = false;
      continue;
    }
    // Defaults are evaluated in the layer's scope (they may use earlier parameters).
    Scope &evalScope = bound[i] ? scope : layerScope;
    std::optional<BindingFrame> frame;
    if (!bound[i]) frame.emplace(*this, layer.name, call.range);
    using K = ast::LayerParam::Kind;
    Value v;
    auto *bare = llvm::dyn_cast<ast::NameExpr>(expr);
    if (param.kind == K::Enum && bare && !evalScope.lookup(bare->name)) {
      if (std::find(param.enumValues.begin(), param.enumValues.end(), bare->name) == param.enumValues.end()) {
        std::string choices;
        for (auto &e : param.enumValues) choices += (choices.empty() ? "" : ", ") + e;
        report(DiagID::err_enum_value, expr->range) << bare->name << param.name << choices;
        ok = false;
        continue;
      }
      v.kind = Value::Kind::Enum;
      v.s = bare->name;
      v.enumValues = &param.enumValues;
    } else if (param.kind == K::DType && bare && !evalScope.lookup(bare->name)) {
      if (!isDTypeName(bare->name)) {
        report(DiagID::err_unknown_dtype, expr->range) << bare->name;
        ok = false;
        continue;
      }
      v.kind = Value::Kind::DType;
      v.s = bare->name;
    } else {
      v = eval(expr, evalScope);
    }
    if (v.isError()) {
      ok = false;
      continue;
    }
    auto mismatch = [&](const char *want) {
      report(DiagID::err_arg_kind, expr->range).note(DiagID::note_declared_here, param.nameRange, {param.name})
          << param.name << layer.name << want << describe(v);
      ok = false;
    };
    switch (param.kind) {
    case K::Tensor:
      if (!v.isTensor()) { mismatch("a tensor"); continue; }
      if (!bindTensorPattern(param, v, expr->range, layerScope, layer.name, call.range)) { ok = false; continue; }
      break;
    case K::Int:
      if (v.kind != Value::Kind::Int) { mismatch("an integer"); continue; }
      break;
    case K::Float:
      if (!v.isNumber()) { mismatch("a number"); continue; }
      v = Value::real(v.f, v.origin);
      break;
    case K::Bool:
      if (v.kind != Value::Kind::Bool) { mismatch("true or false"); continue; }
      break;
    case K::DType:
      if (v.kind != Value::Kind::DType) { mismatch("a dtype"); continue; }
      break;
    case K::Enum:
      if (v.kind != Value::Kind::Enum || v.enumValues != &param.enumValues) { mismatch("one of its enum values"); continue; }
      break;
    case K::Unknown:
      ok = false; // reported when the layer was checked
      continue;
    }
    if (Binding *prev = layerScope.lookupLocal(param.name)) {
      // A dim of an earlier tensor pattern with the same name: the values must agree.
      if (prev->value.kind == Value::Kind::Int && v.kind == Value::Kind::Int && prev->value.i != v.i) {
        report(DiagID::err_dim_mismatch, expr->range).note(DiagID::note_dim_bound_here, prev->declRange, {param.name, std::to_string(prev->value.i)})
            << param.name << param.name << v.i << prev->value.i;
        ok = false;
      }
      continue;
    }
    layerScope.define(param.name, {v, param.nameRange, true});
  }
  if (!ok) return Value::error();

  callStack.push_back({layer.name, call.range, nextFrameId++});
  pathStack.push_back(segment);
  instance = std::make_shared<Instance>();
  instance->layer = layer.name;
  instance->path = currentPath("");
  if (!instance->path.empty()) instance->path.pop_back();
  size_t firstParam = model.params.size();
  bool frozen = llvm::any_of(annotations.list, [](const ast::Annotation *a) { return a->name == "frozen"; });
  if (frozen) ++frozenDepth;
  bool wasTop = atModelTopLevel;
  atModelTopLevel = false;

  Value returned;
  bool didReturn = false;
  unsigned errorsBefore = diags.getNumErrors();
  execBody(layer.body, layerScope, /*inLayer=*/true, &returned, &didReturn);
  if (!didReturn && diags.getNumErrors() == errorsBefore)
    report(DiagID::err_no_return, layer.nameRange) << layer.name;

  atModelTopLevel = wasTop;
  if (frozen) --frozenDepth;
  std::string prefix = instance->path + ".";
  for (size_t i = firstParam; i < model.params.size(); ++i) {
    const std::string &path = model.params[i].path;
    // Only the layer's own parameters are members; nested layers' stay reachable by path.
    std::string rest = path.substr(prefix.size());
    if (rest.find('.') == std::string::npos) instance->params[rest] = i;
  }
  pathStack.pop_back();
  callStack.pop_back();
  return didReturn ? returned : Value::error();
}

void Elaborator::applyCallAnnotations(const CallAnnotations &annotations, SMRange callRange, Scope *scope) {
  std::set<std::string> seen;
  for (const ast::Annotation *a : annotations.list) {
    if (!seen.insert(a->name).second) {
      report(DiagID::err_duplicate_annotation, a->range) << a->name;
      continue;
    }
    if (a->name == "recompute") {
      if (a->args.size() > 1) {
        report(DiagID::err_annotation_args, a->fullRange) << a->name << "at most one policy: none, selective, full or auto";
        continue;
      }
      if (a->args.size() == 1) {
        auto *n = llvm::dyn_cast<ast::NameExpr>(a->args[0].value.get());
        std::string policy = n ? n->name : "";
        if (policy != "none" && policy != "selective" && policy != "full" && policy != "auto") {
          auto d = report(DiagID::err_recompute_policy, a->args[0].value->range);
          SMRange r = a->args[0].value->range;
          d << (n ? policy : std::string(r.Start.getPointer(), r.End.getPointer() - r.Start.getPointer()));
          d.suggest(policy, std::vector<std::string>{"none", "selective", "full", "auto"}, a->args[0].value->range);
        }
      }
    } else if (a->name == "precision") {
      auto *n = a->args.size() == 1 ? llvm::dyn_cast<ast::NameExpr>(a->args[0].value.get()) : nullptr;
      if (!n) {
        report(DiagID::err_annotation_args, a->fullRange) << a->name << "one dtype, as in @precision(f32)";
      } else if (!isFloatDType(n->name)) {
        auto d = report(DiagID::err_unknown_dtype, n->range);
        d << n->name;
        d.suggest(n->name, dtypeNames(), n->range);
      }
    } else if (a->name == "stage") {
      Scope empty;
      Value k = a->args.size() == 1 ? eval(a->args[0].value.get(), scope ? *scope : empty) : Value::error();
      if (a->args.size() != 1 || (!k.isError() && k.kind != Value::Kind::Int)) {
        report(DiagID::err_annotation_args, a->fullRange) << a->name << "one integer stage index";
        continue;
      }
      if (k.isError()) continue;
      int64_t stages = config.parallel.size(MeshAxis::PP) * config.parallel.virtualStages;
      if (k.i < 0 || k.i >= stages) {
        report(DiagID::err_stage_out_of_range, a->fullRange)
            .noteAt(DiagID::note_axis_size_here, config.parallel.axisSource[unsigned(MeshAxis::PP)].range,
                  {"pp", std::to_string(config.parallel.size(MeshAxis::PP))})
            << k.i << stages;
        continue;
      }
      model.stages.push_back({k.i, a->fullRange});
    } else if (a->name == "frozen") {
      if (!a->args.empty()) report(DiagID::err_annotation_args, a->fullRange) << a->name << "no arguments";
    } else if (a->name == "shard") {
      report(DiagID::err_annotation_target, a->range) << a->name << "a layer call or a repeat; annotate its parameters or its result";
    } else {
      reportUnknownAnnotation(*a, scope);
    }
  }
  (void)callRange;
}

Value Elaborator::evalCall(const ast::CallExpr &call, Scope &scope, const std::string &instanceName,
                           const CallAnnotations &annotations) {
  auto it = program.layers.find(call.callee);
  if (it == program.layers.end()) {
    // No layer, so no instance: a name given with `as` is bound to an error, and its uses stay quiet.
    if (!instanceName.empty()) scope.define(instanceName, {Value::error(), call.range, true});
    if (const BuiltinOp *op = findBuiltinOp(call.callee)) {
      if (!instanceName.empty()) report(DiagID::err_as_on_non_call, call.range);
      Value v = callBuiltin(*op, call, scope);
      // On a primitive, @shard constrains the result; @stage and @frozen need a layer.
      CallAnnotations rest;
      for (const ast::Annotation *a : annotations.list) {
        if (a->name == "shard") {
          if (!v.isError() && !checkShard(*a, v, "the result of '" + call.callee + "'", scope)) v = Value::error();
          else if (lowering() && v.ir) constrainSharding(v, *a, scope);
        } else if (a->name == "stage" || a->name == "frozen") {
          report(DiagID::err_annotation_target, a->range) << a->name << ("the built-in operation '" + call.callee + "'");
        } else {
          rest.list.push_back(a);
        }
      }
      applyCallAnnotations(rest, call.range, &scope);
      return v;
    }
    std::vector<std::string> names;
    for (auto &[n, l] : program.layers) names.push_back(n);
    for (const BuiltinOp &op : builtinOps()) names.push_back(op.name);
    auto d = report(DiagID::err_unknown_callee, call.calleeRange);
    d << call.callee;
    d.suggest(call.callee, names, call.calleeRange);
    return Value::error();
  }
  applyCallAnnotations(annotations, call.range, &scope);
  if (!instanceName.empty())
    if (Binding *prev = scope.lookup(instanceName); prev && !prev->undeclared) {
      auto d = report(DiagID::err_redeclared_name, call.range);
      d << instanceName;
      if (prev->declRange.isValid()) d.noteAt(DiagID::note_previous_definition, prev->declRange);
      return Value::error();
    }
  std::string segment = instanceName;
  if (segment.empty()) {
    unsigned n = scope.callCounts[call.callee]++;
    segment = n == 0 ? call.callee : call.callee + "_" + std::to_string(n);
  }
  std::shared_ptr<Instance> instance;
  size_t pushed = lowering() ? pushAnnotationAttrs(annotations, scope) : 0;
  Value v = instantiateLayer(*it->second, call, scope, segment, annotations, instance);
  annotationAttrs.resize(annotationAttrs.size() - pushed);
  // A layer's result comes from its call, as a primitive's does: notes about
  // operands then point at the caller's text, not inside the layer.
  if (v.isTensor()) v.origin = call.range;
  for (Value &e : v.elements)
    if (v.kind == Value::Kind::Tuple && e.isTensor()) e.origin = call.range;
  if (!instanceName.empty()) {
    // A call that failed still declares its name, as an error: `wte.weight` later is quiet.
    Value inst;
    if (instance) {
      inst.kind = Value::Kind::Instance;
      inst.instance = instance;
    }
    scope.define(instanceName, {inst, call.range, true});
  }
  return v;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

void Elaborator::crossCheck() {
  const ParallelConfig &par = config.parallel;
  int64_t pp = par.size(MeshAxis::PP);
  if (pp > 1 && model.numLayers > 0 && model.stages.empty()) {
    // Every chunk needs a layer. Past that the pipeline pass cuts any count:
    // by FLOPs unevenly by design; by layers with the remainder on the first
    // chunks, which is legal but leaves those stages a layer slower.
    int64_t chunks = pp * par.virtualStages, L = model.numLayers;
    SMRange at = par.scheduleSource.isDefault() ? par.axisSource[unsigned(MeshAxis::PP)].range : par.scheduleSource.range;
    if (L < chunks) {
      report(DiagID::err_layers_pp, at).note(DiagID::note_declared_here, model.layersRange, {"layers"})
          << L << pp << par.virtualStages;
    } else if (L % chunks != 0 && par.balance == StageBalance::Layers) {
      report(DiagID::warn_layers_uneven, at).note(DiagID::note_declared_here, model.layersRange, {"layers"})
          << L << pp << par.virtualStages << L % chunks << L / chunks + 1 << L / chunks;
    }
  }
}

bool planc::runSema(const Program &program, const PlanConfig &config, DiagnosticEngine &diags, ModelInfo &model) {
  unsigned before = diags.getNumErrors();
  Elaborator e(program, config, diags, model);
  if (program.model) {
    e.elaborateModel(*program.model);
    if (!diags.hitErrorLimit()) e.crossCheck();
  }
  // Every layer gets its parameter types and names checked, also where no call
  // reached it, and in imported files too: a call of a layer whose parameter type
  // is unknown fails without a message of its own and relies on this one.
  for (const auto &file : program.files)
    for (const auto &layer : file->layers)
      if (!diags.hitErrorLimit()) e.checkLayerAlone(*layer);
  return diags.getNumErrors() == before;
}
