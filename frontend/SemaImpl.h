//===- frontend/SemaImpl.h - Sema's values, scopes and elaborator -*- C++ -*-===//
//
// Private to Sema*.cpp. The elaborator is an evaluator over the AST: every
// expression yields a Value (a constant, a tensor type, a layer instance, or
// an error that silences diagnostics about its uses).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_SEMAIMPL_H
#define PLANC_FRONTEND_SEMAIMPL_H

#include "frontend/Builtins.h"
#include "frontend/Program.h"
#include "frontend/Sema.h"
#include "ir/Builder.h"

#include <map>
#include <memory>
#include <optional>
#include <set>

namespace planc::sema {

class DeadStatements;

using llvm::SMRange;

/// A layer instance named with `as`: its parameters by name.
struct Instance {
  std::string layer;
  std::string path;
  std::map<std::string, size_t> params; // name -> index in ModelInfo::params
};

struct Value {
  enum class Kind { Error, Int, Float, Bool, String, DType, Enum, Tensor, Tuple, List, Instance };
  Kind kind = Kind::Error;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;                                   // String, DType, Enum
  const std::vector<std::string> *enumValues = nullptr;
  // Tensor
  Shape shape;
  std::vector<std::string> dimNames;               // "" where the size has no name
  std::string dtype;
  std::optional<size_t> param;                     // a parameter, by index
  std::vector<Value> elements;                     // Tuple, List
  std::shared_ptr<Instance> instance;
  SMRange origin;                                  // where the value was made
  ir::Value *ir = nullptr;                         // the IR value, when lowering

  static Value error() { return Value(); }
  static Value integer(int64_t v, SMRange r = {}) { Value x; x.kind = Kind::Int; x.i = v; x.f = double(v); x.origin = r; return x; }
  static Value real(double v, SMRange r = {}) { Value x; x.kind = Kind::Float; x.f = v; x.origin = r; return x; }
  static Value boolean(bool v, SMRange r = {}) { Value x; x.kind = Kind::Bool; x.b = v; x.origin = r; return x; }
  static Value tensor(Shape shape, std::string dtype, SMRange r) {
    Value x; x.kind = Kind::Tensor; x.shape = std::move(shape); x.dtype = std::move(dtype);
    x.dimNames.assign(x.shape.size(), ""); x.origin = r; return x;
  }
  bool isError() const { return kind == Kind::Error; }
  bool isNumber() const { return kind == Kind::Int || kind == Kind::Float; }
  bool isTensor() const { return kind == Kind::Tensor; }
};

/// "an integer", "a tensor f32[4, 8]", ... for messages.
std::string describe(const Value &v);

struct Binding {
  Value value;
  SMRange declRange;
  bool constant = false; // let, dims and layer arguments cannot be reassigned
  bool undeclared = false; // a misspelling bound to silence its later uses; never suggested
};

class Scope {
public:
  explicit Scope(Scope *parent = nullptr) : parent(parent) {}
  Binding *lookup(const std::string &name) {
    for (Scope *s = this; s; s = s->parent) {
      auto it = s->names.find(name);
      if (it != s->names.end()) return &it->second;
    }
    return nullptr;
  }
  Binding *lookupLocal(const std::string &name) {
    auto it = names.find(name);
    return it == names.end() ? nullptr : &it->second;
  }
  void define(const std::string &name, Binding b) { names[name] = std::move(b); }
  std::vector<std::string> visibleNames() const {
    std::vector<std::string> out;
    for (const Scope *s = this; s; s = s->parent)
      for (auto &[n, b] : s->names)
        if (!b.undeclared) out.push_back(n);
    return out;
  }
  /// Counts calls of each layer for default path segments (layernorm, layernorm_1, ...).
  std::map<std::string, unsigned> callCounts;

private:
  Scope *parent;
  std::map<std::string, Binding> names;
};

/// Whether `name` is a tensor in `scope` (so `x @name` was likely meant as `x @ name`).
inline const std::vector<std::string> &knownAnnotations() {
  static const std::vector<std::string> names{"shard",        "recompute",       "precision", "stage", "frozen",
                                              "weight_decay", "no_weight_decay", "columns"};
  return names;
}

/// `@weight_decay` and `@no_weight_decay`: a parameter's, call's or repeat's
/// choice to be decayed or not, whatever the optimizer's rule.
inline bool isWeightDecayAnnotation(llvm::StringRef name) {
  return name == "weight_decay" || name == "no_weight_decay";
}
inline const char *oppositeWeightDecay(llvm::StringRef name) {
  return name == "weight_decay" ? "no_weight_decay" : "weight_decay";
}

inline bool isTensorName(Scope &scope, const std::string &name) {
  Binding *b = scope.lookup(name);
  return b && b->value.isTensor();
}

/// Annotations collected from `call @a @b`.
struct CallAnnotations {
  std::vector<const ast::Annotation *> list;
};

class BuiltinRules;

class Elaborator {
public:
  Elaborator(const Program &program, const PlanConfig &config, DiagnosticEngine &diags, ModelInfo &model)
      : program(program), config(config), diags(diags), model(model) {}

  void elaborateModel(const ast::ModelDecl &decl);
  /// Names, callees and annotations of a layer no call reached.
  void checkLayerAlone(const ast::LayerDecl &layer);
  void crossCheck();
  void checkSequenceParallel();

  // ---- lowering (Lowering.cpp): on when a builder is set
  ir::Builder *builder = nullptr;
  bool lowering() const { return builder != nullptr; }
  /// Statements lowering leaves out (DeadStatements.h); null: none.
  const DeadStatements *dead = nullptr;
  /// Sets the builder's location and layer path for the ops of `range`.
  void stamp(SMRange range);
  ir::Value *lowerBuiltin(const std::string &name, const std::vector<Value> &args,
                          const std::vector<Value> &tensors, const Value &result, const ast::CallExpr &call);
  ir::Value *lowerBinary(const ast::BinaryExpr &e, const Value &l, const Value &r, const Value &result);
  ir::Value *lowerMatmul(const ast::BinaryExpr &e, const Value &l, const Value &r, const Value &result);
  ir::Value *lowerNeg(const Value &v, SMRange range);
  ir::Value *lowerParam(const ParamInfo &info, SMRange nameRange);
  ir::Value *lowerInput(const InputInfo &info, SMRange nameRange);
  /// Attributes the enclosing annotated calls put on every op they contain:
  /// recompute, precision, stage.
  std::vector<std::pair<std::string, ir::Attr>> annotationAttrs;
  size_t pushAnnotationAttrs(const CallAnnotations &annotations, Scope &scope);
  /// Records a checked `@shard(axis, dim)` on a value as the `sharding_constraint`
  /// attribute of the op that made it, for sharding propagation.
  void constrainSharding(const Value &v, const ast::Annotation &a, Scope &scope);
  std::vector<ir::Value *> paramValues; // by ModelInfo param index
  int64_t nextDropoutStream = 0;

  // ---- shared by the Sema files
  DiagBuilder report(DiagID id, SMRange range);
  Value eval(const ast::Expr *e, Scope &scope);
  Value evalCall(const ast::CallExpr &call, Scope &scope, const std::string &instanceName,
                 const CallAnnotations &annotations);
  Value callBuiltin(const BuiltinOp &op, const ast::CallExpr &call, Scope &scope);
  /// The call's arguments bound to the primitive's parameters (defaults
  /// filled); false after a diagnostic.
  bool bindBuiltinArgs(const BuiltinOp &op, const ast::CallExpr &call, Scope &scope, BuiltinRules &bound);
  /// One argument as its parameter's kind, or an error value (reported).
  Value builtinArg(const BuiltinOp &op, const BuiltinParam &param, const ast::Arg &arg, Scope &scope);
  /// The parameter a named argument names, or nullopt (reported).
  std::optional<size_t> builtinParamNamed(const BuiltinOp &op, const ast::Arg &arg);
  Value binaryTensorOp(const ast::BinaryExpr &e, const Value &l, const Value &r);
  Value matmul(const ast::BinaryExpr &e, const Value &l, const Value &r);
  bool checkedMul(int64_t a, int64_t b, int64_t &out, SMRange r);
  std::optional<int64_t> normalizeDim(int64_t dim, size_t rank, SMRange r);
  void reportUnknownAnnotation(const ast::Annotation &a, Scope *scope);
  bool checkShard(const ast::Annotation &a, Value &target, const std::string &what, Scope &scope);
  /// `@columns(f1, f2, ...)` on a parameter: its last dim's factors, outermost
  /// first, whose product is that dim; empty after an error.
  std::vector<int64_t> evalColumns(const ast::Annotation &a, const Shape &shape, Scope &scope);

  const Program &program;
  const PlanConfig &config;
  DiagnosticEngine &diags;
  ModelInfo &model;

private:
  void execBody(const ast::Body &body, Scope &scope, bool inLayer, Value *returned, bool *didReturn);
  void execItem(const ast::Item &item, Scope &scope, bool inLayer, Value *returned, bool *didReturn);
  /// A body that could not run (its condition or count failed): the names it
  /// would have defined are bound to error values, so later uses stay quiet.
  void bindAsErrors(const ast::Body &body, Scope &scope);
  void declareParam(const ast::ParamItem &p, Scope &scope);
  void declareInput(const ast::InputItem &in, Scope &scope);
  Shape evalShape(const ast::TensorType &t, Scope &scope, std::vector<std::string> &names, bool &ok);
  Value instantiateLayer(const ast::LayerDecl &layer, const ast::CallExpr &call, Scope &scope,
                         const std::string &segment, const CallAnnotations &annotations,
                         std::shared_ptr<Instance> &instance);
  bool bindTensorPattern(const ast::LayerParam &param, const Value &arg, SMRange argRange,
                         Scope &layerScope, const std::string &layerName, SMRange callRange);
  /// `scope`, where given, lets an unknown `@name` that names a tensor be read as
  /// a matmul written without its space.
  void applyCallAnnotations(const CallAnnotations &annotations, SMRange callRange, Scope *scope = nullptr);
  std::string currentPath(const std::string &leaf) const;

  struct Frame {
    std::string layer;
    SMRange callRange;
    unsigned id; // distinguishes two calls of the same layer
  };
  std::vector<Frame> callStack;
  /// While a call binds its arguments, the layer's own text (pattern dims,
  /// defaults) is evaluated: errors there get the call's note as its body's do.
  struct BindingFrame {
    BindingFrame(Elaborator &e, const std::string &layer, SMRange call) : e(e) {
      e.callStack.push_back({layer, call, e.nextFrameId++});
    }
    ~BindingFrame() { e.callStack.pop_back(); }
    Elaborator &e;
  };
  std::vector<std::string> pathStack;
  std::vector<int64_t> repeatCounts; // enclosing repeat counts, for scaled_normal
  unsigned frozenDepth = 0;
  /// The @weight_decay (true) / @no_weight_decay (false) of the enclosing
  /// calls and repeats that write one, innermost last: the innermost decides
  /// for a parameter that writes neither.
  std::vector<bool> weightDecayScopes;
  /// The choice `annotations` write, if one (both is an error reported by
  /// applyCallAnnotations, and no choice).
  static std::optional<bool> weightDecayChoice(const CallAnnotations &annotations);
  /// Statements executed so far: the bound on elaboration work (see execBody).
  int64_t steps = 0;
  bool outOfSteps = false;
  static constexpr int64_t kMaxSteps = 2000000;
  unsigned nextFrameId = 1;
  std::map<std::string, SMRange> paramPaths; // path -> the call that made it
  std::set<const char *> duplicatePathCalls;  // calls already reported for a path clash
  /// (layer call, mesh axis) pairs that already had a divisibility error: one
  /// wrong axis size fails every split of the layer, and once is enough.
  std::set<std::pair<unsigned, MeshAxis>> shardErrors;
  bool atModelTopLevel = true;
};

} // namespace planc::sema

#endif
