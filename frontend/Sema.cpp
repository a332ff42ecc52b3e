//===- frontend/Sema.cpp - model elaboration: the model and its statements -===//
//
// The model body runs once, top to bottom, like a program whose values are
// types: `repeat` unrolls, `if` picks a branch, a layer call binds its
// arguments (tensor parameters are shape patterns) and runs the layer body in a
// fresh scope. Parameters are collected with their layer paths on the way.
// Layer calls are in SemaCall.cpp.
//
//===----------------------------------------------------------------------===//

#include "frontend/DeadStatements.h"
#include "frontend/SemaImpl.h"
#include "support/Plural.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>

using namespace planc;
using namespace planc::sema;
using llvm::SMLoc;

namespace {
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
    // Checked already: lowering leaves out what nothing reads, once per
    // statement rather than once per op per iteration (DeadStatements.h).
    if (dead && lowering() && dead->isDead(*item)) continue;
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
            << counted(int64_t(a->names.size()), "name")
            << counted(int64_t(v.kind == Value::Kind::Tuple ? v.elements.size() : 1), "value");
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
    std::optional<bool> decay = weightDecayChoice(annotations);
    if (decay) weightDecayScopes.push_back(*decay);
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
    if (decay) weightDecayScopes.pop_back();
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
          << counted(L, "layer") << pp << par.virtualStages;
    } else if (L % chunks != 0 && par.balance == StageBalance::Layers) {
      report(DiagID::warn_layers_uneven, at).note(DiagID::note_declared_here, model.layersRange, {"layers"})
          << L << pp << par.virtualStages << L % chunks << L / chunks + 1 << L / chunks;
    }
  }
}

// Sequence parallelism splits the [batch, seq, ...] activations along dim 1
// over tp, as Megatron-LM does; where the sequence does not divide, sharding
// propagation splits nothing and the setting would change nothing.
void Elaborator::checkSequenceParallel() {
  const ParallelConfig &par = config.parallel;
  const int64_t tp = par.size(MeshAxis::TP);
  if (!par.sequenceParallel || tp < 2) return;
  const SMRange tpAt = par.axisSource[unsigned(MeshAxis::TP)].range;
  for (const InputInfo &in : model.inputs) {
    if (in.shape.size() < 2 || in.shape[1] % tp == 0) continue;
    report(DiagID::err_sequence_parallel_divisible, par.sequenceParallelSource.range)
        .noteAt(DiagID::note_axis_size_here, tpAt.isValid() ? tpAt : par.meshSource.range, {"tp", std::to_string(tp)})
        .noteAt(DiagID::note_declared_here, in.range, {in.name})
        << tp << in.name << in.shape[1];
    return;
  }
}

bool planc::runSema(const Program &program, const PlanConfig &config, DiagnosticEngine &diags, ModelInfo &model) {
  unsigned before = diags.getNumErrors();
  Elaborator e(program, config, diags, model);
  if (program.model) {
    e.elaborateModel(*program.model);
    if (!diags.hitErrorLimit()) e.crossCheck();
    if (!diags.hitErrorLimit()) e.checkSequenceParallel();
  }
  // Every layer gets its parameter types and names checked, also where no call
  // reached it, and in imported files too: a call of a layer whose parameter type
  // is unknown fails without a message of its own and relies on this one.
  for (const auto &file : program.files)
    for (const auto &layer : file->layers)
      if (!diags.hitErrorLimit()) e.checkLayerAlone(*layer);
  return diags.getNumErrors() == before;
}
