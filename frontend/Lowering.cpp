//===- frontend/Lowering.cpp - the elaborated model as IR ----------------===//
//
// Lowering is Sema run once more with a builder: every checked primitive,
// operator and declaration also emits its IR op, so the IR is exactly what
// Sema checked (layers inlined with their paths, repeats unrolled, dims
// folded). Annotations become attributes of the ops they cover: `recompute`,
// `precision`, `stage`; a `@shard` on a value becomes a `sharding_constraint`.
//
//===----------------------------------------------------------------------===//

#include "frontend/Lowering.h"
#include "frontend/DeadStatements.h"
#include "frontend/SemaImpl.h"

#include "llvm/Support/SourceMgr.h"

using namespace planc;
using namespace planc::sema;
using ir::OpKind;

namespace {
ir::DType dtypeOf(const std::string &name) {
  auto d = ir::parseDType(name);
  return d ? *d : ir::DType::F32;
}
} // namespace

void Elaborator::stamp(SMRange range) {
  ir::Location loc;
  llvm::SourceMgr &sm = diags.getSourceMgr();
  if (range.Start.isValid())
    if (unsigned id = sm.FindBufferContainingLoc(range.Start)) {
      auto [line, col] = sm.getLineAndColumn(range.Start, id);
      loc = {sm.getMemoryBuffer(id)->getBufferIdentifier().str(), line, col};
    }
  builder->loc = loc;
  std::string path;
  for (const std::string &s : pathStack) path += (path.empty() ? "" : ".") + s;
  builder->path = path;
}

/// Creates an op with the annotations in force and the current place.
static ir::Value *emit(Elaborator &e, SMRange range, OpKind kind, std::vector<ir::Value *> operands,
                       ir::AttrMap attrs = {}) {
  e.stamp(range);
  ir::Op *op = e.builder->create(kind, std::move(operands), std::move(attrs));
  for (auto &[name, value] : e.annotationAttrs) op->attrs[name] = value;
  return op->results[0];
}

size_t Elaborator::pushAnnotationAttrs(const CallAnnotations &annotations, Scope &scope) {
  size_t pushed = 0;
  for (const ast::Annotation *a : annotations.list) {
    if (a->name == "recompute") {
      std::string policy = "full";
      if (a->args.size() == 1)
        if (auto *n = llvm::dyn_cast<ast::NameExpr>(a->args[0].value.get())) policy = n->name;
      annotationAttrs.push_back({"recompute", policy});
    } else if (a->name == "precision" && a->args.size() == 1) {
      if (auto *n = llvm::dyn_cast<ast::NameExpr>(a->args[0].value.get()))
        annotationAttrs.push_back({"precision", n->name});
      else
        continue;
    } else if (a->name == "stage" && a->args.size() == 1) {
      Value k = eval(a->args[0].value.get(), scope);
      if (k.kind != Value::Kind::Int) continue;
      annotationAttrs.push_back({"stage", k.i});
    } else {
      continue;
    }
    ++pushed;
  }
  return pushed;
}

void Elaborator::constrainSharding(const Value &v, const ast::Annotation &a, Scope &scope) {
  if (!v.ir->def) return; // a parameter or input: its own type carries its sharding
  auto *axis = llvm::cast<ast::NameExpr>(a.args[0].value.get());
  if (config.parallel.size(*parseMeshAxis(axis->name)) == 1) return;
  Value d = eval(a.args[1].value.get(), scope);
  int64_t dim = d.i < 0 ? d.i + int64_t(v.shape.size()) : d.i;
  v.ir->def->attrs["sharding_constraint"] = "shard(" + std::to_string(dim) + ", " + axis->name + ")";
}

ir::Value *Elaborator::lowerParam(const ParamInfo &info, SMRange nameRange) {
  ir::TensorType type(info.shape, dtypeOf(info.dtype));
  // A split over an axis of size 1 is no split: the IR only records real ones.
  for (const ShardSpec &s : info.shards)
    if (config.parallel.size(s.axis) > 1) type.sharding.dims[s.dim].push_back(s.axis);
  ir::Value *v = builder->module.addParam(info.path, type);
  v->init = info.init == InitKind::Zeros ? ir::InitKind::Zeros
            : info.init == InitKind::Ones ? ir::InitKind::Ones
            : info.init == InitKind::ScaledNormal ? ir::InitKind::ScaledNormal
                                                  : ir::InitKind::Normal;
  v->initStd = info.initStd;
  v->frozen = info.frozen;
  v->weightDecay = info.weightDecay;
  v->path = info.path;
  stamp(nameRange);
  v->loc = builder->loc;
  paramValues.push_back(v);
  return v;
}

ir::Value *Elaborator::lowerInput(const InputInfo &info, SMRange nameRange) {
  ir::Value *v = builder->module.addInput(info.name, ir::TensorType(info.shape, dtypeOf(info.dtype)));
  v->path = info.name;
  stamp(nameRange);
  v->loc = builder->loc;
  return v;
}

ir::Value *Elaborator::lowerNeg(const Value &v, SMRange range) { return emit(*this, range, OpKind::Neg, {v.ir}); }

ir::Value *Elaborator::lowerBinary(const ast::BinaryExpr &e, const Value &l, const Value &r, const Value &result) {
  using Op = ast::BinaryExpr::Op;
  if (l.isTensor() && r.isTensor()) {
    OpKind k = e.op == Op::Add ? OpKind::Add : e.op == Op::Sub ? OpKind::Sub : e.op == Op::Mul ? OpKind::Mul : OpKind::Div;
    return emit(*this, e.range, k, {l.ir, r.ir});
  }
  // One side is a number: scale or shift the tensor.
  bool tensorLeft = l.isTensor();
  ir::Value *t = tensorLeft ? l.ir : r.ir;
  double c = tensorLeft ? r.f : l.f;
  switch (e.op) {
  case Op::Add: return emit(*this, e.range, OpKind::AddScalar, {t}, {{"value", c}});
  case Op::Mul: return emit(*this, e.range, OpKind::Scale, {t}, {{"factor", c}});
  case Op::Sub:
    if (tensorLeft) return emit(*this, e.range, OpKind::AddScalar, {t}, {{"value", -c}});
    return emit(*this, e.range, OpKind::AddScalar, {emit(*this, e.range, OpKind::Neg, {t})}, {{"value", c}});
  default: // Div
    if (tensorLeft) return emit(*this, e.range, OpKind::Scale, {t}, {{"factor", 1.0 / c}});
    return emit(*this, e.range, OpKind::Scale, {emit(*this, e.range, OpKind::Pow, {t}, {{"exponent", -1.0}})},
                {{"factor", c}});
  }
}

ir::Value *Elaborator::lowerMatmul(const ast::BinaryExpr &e, const Value &l, const Value &r, const Value &result) {
  // The IR's matmul takes matrices (with batch dims); a vector operand gains a
  // unit dim first and the result loses it again, as NumPy does.
  ir::Value *a = l.ir, *b = r.ir;
  if (l.shape.size() == 1)
    a = emit(*this, e.range, OpKind::Reshape, {a}, {{"shape", Shape{1, l.shape[0]}}});
  if (r.shape.size() == 1)
    b = emit(*this, e.range, OpKind::Reshape, {b}, {{"shape", Shape{r.shape[0], 1}}});
  ir::Value *out = emit(*this, e.range, OpKind::MatMul, {a, b}, {{"transpose_a", false}, {"transpose_b", false}});
  if (l.shape.size() == 1 || r.shape.size() == 1)
    out = emit(*this, e.range, OpKind::Reshape, {out}, {{"shape", result.shape}});
  return out;
}

ir::Value *Elaborator::lowerBuiltin(const std::string &name, const std::vector<Value> &args,
                                    const std::vector<Value> &tensors, const Value &result,
                                    const ast::CallExpr &call) {
  SMRange r = call.range;
  auto dim = [&](size_t arg, size_t ofTensor) {
    int64_t d = args[arg].i;
    return d < 0 ? d + int64_t(args[ofTensor].shape.size()) : d;
  };
  static const std::map<std::string, OpKind> unary = {
      {"exp", OpKind::Exp},   {"log", OpKind::Log},   {"sqrt", OpKind::Sqrt},       {"rsqrt", OpKind::Rsqrt},
      {"tanh", OpKind::Tanh}, {"relu", OpKind::Relu}, {"gelu", OpKind::Gelu},       {"silu", OpKind::Silu},
      {"sigmoid", OpKind::Sigmoid}, {"abs", OpKind::Abs}};
  if (auto it = unary.find(name); it != unary.end()) return emit(*this, r, it->second, {args[0].ir});
  if (name == "pow") return emit(*this, r, OpKind::Pow, {args[0].ir}, {{"exponent", args[1].f}});
  if (name == "sum" || name == "mean" || name == "amax") {
    OpKind k = name == "sum" ? OpKind::ReduceSum : name == "mean" ? OpKind::ReduceMean : OpKind::ReduceMax;
    return emit(*this, r, k, {args[0].ir}, {{"dims", Shape{dim(1, 0)}}, {"keepdim", args[2].b}});
  }
  if (name == "softmax" || name == "log_softmax")
    return emit(*this, r, name == "softmax" ? OpKind::Softmax : OpKind::LogSoftmax, {args[0].ir}, {{"dim", dim(1, 0)}});
  if (name == "layer_norm") return emit(*this, r, OpKind::LayerNorm, {args[0].ir, args[1].ir, args[2].ir}, {{"eps", args[3].f}});
  if (name == "rms_norm") return emit(*this, r, OpKind::RmsNorm, {args[0].ir, args[1].ir}, {{"eps", args[2].f}});
  if (name == "gather") return emit(*this, r, OpKind::Gather, {args[0].ir, args[1].ir});
  if (name == "dropout") {
    if (args[1].f == 0) return args[0].ir; // p = 0 is the identity
    // Each dropout site draws its own stream; recomputation re-runs the op with
    // the same attributes and so the same mask.
    return emit(*this, r, OpKind::Dropout, {args[0].ir},
                {{"p", args[1].f}, {"seed", config.train.seed}, {"stream", nextDropoutStream++}});
  }
  if (name == "rope") return emit(*this, r, OpKind::Rope, {args[0].ir}, {{"theta", args[1].f}, {"inverse", false}});
  if (name == "causal_mask") return emit(*this, r, OpKind::CausalMask, {args[0].ir});
  if (name == "reshape") return emit(*this, r, OpKind::Reshape, {args[0].ir}, {{"shape", result.shape}});
  if (name == "transpose") {
    Shape perm(args[0].shape.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = int64_t(i);
    std::swap(perm[dim(1, 0)], perm[dim(2, 0)]);
    return emit(*this, r, OpKind::Transpose, {args[0].ir}, {{"perm", perm}});
  }
  if (name == "slice")
    return emit(*this, r, OpKind::Slice, {args[0].ir}, {{"dim", dim(1, 0)}, {"start", args[2].i}, {"end", args[3].i}});
  if (name == "concat") {
    std::vector<ir::Value *> operands;
    for (const Value &t : tensors) operands.push_back(t.ir);
    int64_t d = args[0].i < 0 ? args[0].i + int64_t(tensors[0].shape.size()) : args[0].i;
    return emit(*this, r, OpKind::Concat, operands, {{"dim", d}});
  }
  if (name == "cast") return emit(*this, r, OpKind::Cast, {args[0].ir}, {{"dtype", args[1].s}});
  if (name == "repeat_interleave")
    return emit(*this, r, OpKind::RepeatInterleave, {args[0].ir}, {{"repeats", args[1].i}, {"dim", dim(2, 0)}});
  if (name == "cross_entropy") return emit(*this, r, OpKind::CrossEntropy, {args[0].ir, args[1].ir});
  return nullptr;
}

std::unique_ptr<ir::Module> planc::lowerToIR(const Program &program, const PlanConfig &checked,
                                             DiagnosticEngine &diags, int64_t batch) {
  if (!program.model || diags.hasErrors() || batch < 1) return nullptr;
  PlanConfig config = checked;
  config.train.microBatch = batch;
  auto module = std::make_unique<ir::Module>();
  module->name = program.model->name;
  for (unsigned a = 0; a < kNumMeshAxes; ++a) module->mesh[a] = checked.parallel.axisSize[a];
  ir::Builder builder(*module);
  ModelInfo model;
  Elaborator e(program, config, diags, model);
  e.builder = &builder;
  DeadStatements dead(program);
  e.dead = &dead;
  e.elaborateModel(*program.model);
  if (diags.hasErrors()) return nullptr;
  return module;
}
