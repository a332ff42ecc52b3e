//===- frontend/SemaCall.cpp - model elaboration: layer calls ------------===//
//
// A layer call binds its arguments (tensor parameters are shape patterns
// that bind the dims they name), runs the layer body in a fresh scope under
// the call's annotations, and names the instance when it has `as`.
//
//===----------------------------------------------------------------------===//

#include "frontend/SemaImpl.h"
#include "frontend/StdlibLayers.h"
#include "support/Plural.h"

#include <algorithm>
#include <cctype>
#include <set>

using namespace planc;
using namespace planc::sema;

namespace {
constexpr unsigned kMaxCallDepth = 64;

/// "x: [b, s, h], heads: int, causal: bool = true": the layer's parameters
/// as written (each one's text, spaces and line breaks run together).
std::string layerSignature(const ast::LayerDecl &layer) {
  std::string out;
  for (const ast::LayerParam &p : layer.params) {
    const char *begin = p.nameRange.Start.getPointer(), *end = p.nameRange.End.getPointer();
    if (!begin || !end) return "...";
    if (p.typeRange.isValid()) end = std::max(end, p.typeRange.End.getPointer());
    if (p.defaultValue && p.defaultValue->range.isValid()) end = std::max(end, p.defaultValue->range.End.getPointer());
    if (!out.empty()) out += ", ";
    bool space = false;
    for (const char *c = begin; c < end; ++c) {
      if (std::isspace(static_cast<unsigned char>(*c))) {
        space = true;
        continue;
      }
      if (space && !out.empty() && out.back() != ' ') out += ' ';
      space = false;
      out += *c;
    }
  }
  return out;
}
} // namespace

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
            << layer.name << counted(int64_t(layer.params.size()), "argument") << int64_t(call.args.size());
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
      d.noteAt(DiagID::note_layer_signature, layer.nameRange, {layer.name, layerSignature(layer)});
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
  std::optional<bool> decay = weightDecayChoice(annotations);
  if (decay) weightDecayScopes.push_back(*decay);
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
  if (decay) weightDecayScopes.pop_back();
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

std::optional<bool> Elaborator::weightDecayChoice(const CallAnnotations &annotations) {
  bool on = false, off = false;
  for (const ast::Annotation *a : annotations.list) {
    on |= a->name == "weight_decay";
    off |= a->name == "no_weight_decay";
  }
  if (on == off) return std::nullopt; // neither, or both: an error
  return on;
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
        report(DiagID::err_annotation_args, a->fullRange) << a->name << "at most one policy: none, selective or full";
        continue;
      }
      if (a->args.size() == 1) {
        auto *n = llvm::dyn_cast<ast::NameExpr>(a->args[0].value.get());
        std::string policy = n ? n->name : "";
        if (policy == "auto") {
          // `auto` would choose from the memory budget; until then it is selective under another name.
          report(DiagID::err_not_supported_yet, a->args[0].value->range)
              << "recompute policy 'auto'" << "use selective or full";
        } else if (policy != "none" && policy != "selective" && policy != "full") {
          auto d = report(DiagID::err_recompute_policy, a->args[0].value->range);
          SMRange r = a->args[0].value->range;
          d << (n ? policy : std::string(r.Start.getPointer(), r.End.getPointer() - r.Start.getPointer()));
          d.suggest(policy, std::vector<std::string>{"none", "selective", "full"}, a->args[0].value->range);
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
            << k.i << counted(stages, "stage");
        continue;
      }
      model.stages.push_back({k.i, a->fullRange});
    } else if (a->name == "frozen") {
      if (!a->args.empty()) report(DiagID::err_annotation_args, a->fullRange) << a->name << "no arguments";
    } else if (isWeightDecayAnnotation(a->name)) {
      if (!a->args.empty()) report(DiagID::err_annotation_args, a->fullRange) << a->name << "no arguments";
      if (seen.count(oppositeWeightDecay(a->name)))
        report(DiagID::err_conflicting_annotations, a->range) << oppositeWeightDecay(a->name) << a->name;
    } else if (a->name == "shard") {
      report(DiagID::err_annotation_target, a->range) << a->name << "a layer call or a repeat; annotate its parameters or its result";
    } else if (a->name == "columns") {
      report(DiagID::err_annotation_target, a->range) << a->name << "a layer call or a repeat; annotate a parameter";
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
      // On a primitive, @shard constrains the result; @stage, @frozen and
      // @(no_)weight_decay need a layer (a built-in has no parameters).
      CallAnnotations rest;
      for (const ast::Annotation *a : annotations.list) {
        if (a->name == "shard") {
          if (!v.isError() && !checkShard(*a, v, "the result of '" + call.callee + "'", scope)) v = Value::error();
          else if (lowering() && v.ir) constrainSharding(v, *a, scope);
        } else if (a->name == "stage" || a->name == "frozen" || a->name == "columns" ||
                   isWeightDecayAnnotation(a->name)) {
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
    // A layer of the standard library that the plan did not import: the
    // way out is the import, not the nearest name in scope.
    if (std::string module = stdModuleDeclaring(call.callee); !module.empty())
      d.note(DiagID::note_add_import, call.calleeRange, {call.callee, module});
    else
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

