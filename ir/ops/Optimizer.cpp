//===- ir/ops/Optimizer.cpp - clipping, schedules, SGD and Adam -----------===//
//
// One op per parameter; the optimizer state is explicit values that the op
// reads and returns updated, so a training step is one module. Semantics are
// torch.optim's:
//   global_norm(g...) -> []: sqrt of the sum of squares of all operands
//     (f64 if every operand is, else f32).
//   clip_scale(norm) {max_norm}: min(1, max_norm / (norm + 1e-6)), the factor
//     torch.nn.utils.clip_grad_norm_ multiplies the gradients by.
//   lr_schedule(step) {lr, warmup = 0, decay = "constant" | "linear" |
//     "cosine", decay_steps, min_lr = 0, dtype = "f32"} -> []: with `step`
//     the 1-based number of the update being made (as Megatron-LM's),
//       step <= warmup:   lr * step / warmup
//       otherwise, p = min(1, (step - warmup) / (decay_steps - warmup)):
//       constant: lr;  linear: min_lr + (lr - min_lr)(1 - p);
//       cosine: min_lr + (lr - min_lr) (1 + cos(pi p)) / 2.
//   sgd_update(param, grad, buf, lr) {momentum = 0, nesterov = false,
//     weight_decay = 0} -> (param, buf): torch.optim.SGD with dampening 0
//     (a zero buf at the first step gives torch's buf = grad).
//   adam_update(param, grad, m, v, lr, step) {beta1 = 0.9, beta2 = 0.999,
//     eps = 1e-8, weight_decay = 0, decoupled = false} -> (param, m, v):
//     torch.optim.Adam, or AdamW when `decoupled` (the weight decay shrinks
//     the parameter by lr * weight_decay instead of joining the gradient);
//     `step` is the 1-based update number of the bias correction.
// lr and step are scalars ([]); an integer step is fine.
//
//===----------------------------------------------------------------------===//

#include "ir/ops/DimRule.h"
#include "ir/ops/Formula.h"
#include "ir/ops/OpSupport.h"

#include <cmath>

using namespace planc;
using namespace planc::ir;

namespace {

std::string checkScalar(llvm::ArrayRef<TensorType> ops, size_t i, const char *what, bool floatOnly) {
  const TensorType &t = ops[i];
  bool kindOk = floatOnly ? isFloat(t.dtype) : t.dtype != DType::Bool;
  if (t.rank() == 0 && kindOk) return "";
  return "operand " + std::to_string(i) + " (" + what + ") must be a " + (floatOnly ? "floating-point " : "") +
         "scalar, got " + toString(t);
}

/// Operands 1..count-1 of an update have the parameter's shape and a float dtype.
std::string checkLikeParam(llvm::ArrayRef<TensorType> ops, size_t first, size_t count) {
  if (auto e = checkFloat(ops, 0); !e.empty()) return e;
  for (size_t i = first; i < first + count; ++i) {
    if (auto e = checkFloat(ops, i); !e.empty()) return e;
    if (ops[i].shape != ops[0].shape)
      return "operand " + std::to_string(i) + " " + toString(ops[i].shape) + " must have the parameter's shape " +
             toString(ops[0].shape);
  }
  return "";
}

//===----------------------------------------------------------------------===//
// global_norm, clip_scale
//===----------------------------------------------------------------------===//

std::string inferGlobalNorm(llvm::ArrayRef<TensorType> ops, const AttrMap &, std::vector<TensorType> &res) {
  if (ops.empty()) return "expects at least one operand";
  bool allF64 = true;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (auto e = checkFloat(ops, i); !e.empty()) return e;
    allF64 &= ops[i].dtype == DType::F64;
  }
  res = {TensorType({}, allF64 ? DType::F64 : DType::F32)};
  return "";
}

// {squared = true} gives the sum of squares without the root: a partitioned
// module adds the ranks' sums of their blocks before taking it.
void evalGlobalNorm(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  double sum = 0;
  for (const Tensor *t : in)
    for (double x : t->data) sum += x * x;
  out[0].data[0] = op.getBool("squared") ? sum : std::sqrt(sum);
}

double flopsGlobalNorm(const Op &op) {
  double n = 0;
  for (const Value *v : op.operands) n += double(v->type.numel());
  return 2 * n;
}

std::string inferClipScale(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  if (auto e = checkScalar(ops, 0, "norm", true); !e.empty()) return e;
  AttrReader at(attrs);
  double maxNorm = at.getFloat("max_norm");
  if (!at.ok()) return at.error;
  if (!(maxNorm > 0)) return "max_norm must be positive";
  res = {TensorType({}, ops[0].dtype)};
  return "";
}

/// min(1, max_norm / (norm + 1e-6)): its formula (ir/ops/Formula.h).
void evalClipScale(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  evalFormula(*formulaOf(OpKind::ClipScale), op.attrs, in, out);
}

double flopsFew(const Op &) { return 3; }

//===----------------------------------------------------------------------===//
// lr_schedule
//===----------------------------------------------------------------------===//

struct Schedule {
  double lr, minLr;
  int64_t warmup, decaySteps;
  std::string decay;
  DType dtype;
};

Schedule readSchedule(AttrReader &at) {
  Schedule s;
  s.lr = at.getFloat("lr");
  s.warmup = at.getInt("warmup", 0);
  s.decay = at.getString("decay", std::string("constant"));
  s.decaySteps = at.getInt("decay_steps", s.decay == "constant" ? std::optional<int64_t>(0) : std::nullopt);
  s.minLr = at.getFloat("min_lr", 0.0);
  s.dtype = at.getDType("dtype", DType::F32);
  return s;
}

std::string inferLrSchedule(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  if (auto e = checkScalar(ops, 0, "step", false); !e.empty()) return e;
  AttrReader at(attrs);
  Schedule s = readSchedule(at);
  if (!at.ok()) return at.error;
  if (s.decay != "constant" && s.decay != "linear" && s.decay != "cosine")
    return "decay must be constant, linear or cosine, got '" + s.decay + "'";
  if (s.warmup < 0) return "warmup must be non-negative";
  if (s.decay != "constant" && s.decaySteps <= s.warmup)
    return "decay_steps (" + std::to_string(s.decaySteps) + ") must exceed warmup (" + std::to_string(s.warmup) + ")";
  if (!isFloat(s.dtype)) return "dtype must be floating-point";
  res = {TensorType({}, s.dtype)};
  return "";
}

void evalLrSchedule(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  AttrReader at(op.attrs);
  Schedule s = readSchedule(at);
  double step = in[0]->data[0];
  double lr;
  if (s.warmup > 0 && step <= double(s.warmup)) {
    lr = s.lr * step / double(s.warmup);
  } else if (s.decay == "constant") {
    lr = s.lr;
  } else {
    double p = std::min(1.0, (step - double(s.warmup)) / double(s.decaySteps - s.warmup));
    double frac = s.decay == "cosine" ? 0.5 * (1.0 + std::cos(M_PI * p)) : 1.0 - p;
    lr = s.minLr + (s.lr - s.minLr) * frac;
  }
  out[0].data[0] = lr;
}

//===----------------------------------------------------------------------===//
// sgd_update
//===----------------------------------------------------------------------===//

std::string inferSgd(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 4); !e.empty()) return e;
  if (auto e = checkLikeParam(ops, 1, 2); !e.empty()) return e;
  if (auto e = checkScalar(ops, 3, "lr", true); !e.empty()) return e;
  AttrReader at(attrs);
  at.getFloat("momentum", 0.0);
  at.getBool("nesterov", false);
  at.getFloat("weight_decay", 0.0);
  if (!at.ok()) return at.error;
  res = {TensorType(ops[0].shape, ops[0].dtype), TensorType(ops[2].shape, ops[2].dtype)};
  return "";
}

void evalSgd(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  AttrReader at(op.attrs);
  double momentum = at.getFloat("momentum", 0.0), wd = at.getFloat("weight_decay", 0.0);
  bool nesterov = at.getBool("nesterov", false);
  const std::vector<double> &p = in[0]->data, &g = in[1]->data, &buf = in[2]->data;
  double lr = in[3]->data[0];
  std::vector<double> &pOut = out[0].data, &bufOut = out[1].data;
  for (size_t i = 0; i < p.size(); ++i) {
    double d = g[i] + wd * p[i];
    if (momentum != 0) {
      bufOut[i] = momentum * buf[i] + d;
      d = nesterov ? d + momentum * bufOut[i] : bufOut[i];
    } else {
      bufOut[i] = buf[i];
    }
    pOut[i] = p[i] - lr * d;
  }
}

double flopsSgd(const Op &op) { return 6 * operandNumel(op); }

//===----------------------------------------------------------------------===//
// adam_update
//===----------------------------------------------------------------------===//

std::string inferAdam(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 6); !e.empty()) return e;
  if (auto e = checkLikeParam(ops, 1, 3); !e.empty()) return e;
  if (auto e = checkScalar(ops, 4, "lr", true); !e.empty()) return e;
  if (auto e = checkScalar(ops, 5, "step", false); !e.empty()) return e;
  AttrReader at(attrs);
  at.getFloat("beta1", 0.9);
  at.getFloat("beta2", 0.999);
  at.getFloat("eps", 1e-8);
  at.getFloat("weight_decay", 0.0);
  at.getBool("decoupled", false);
  if (!at.ok()) return at.error;
  res = {TensorType(ops[0].shape, ops[0].dtype), TensorType(ops[2].shape, ops[2].dtype),
         TensorType(ops[3].shape, ops[3].dtype)};
  return "";
}

// In torch's order of operations (single-tensor path of torch.optim.Adam).
/// Adam's reference kernel is its formula (ir/ops/Formula.h), which the
/// code generators render too.
void evalAdam(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  evalFormula(*formulaOf(OpKind::AdamUpdate), op.attrs, in, out);
}

double flopsAdam(const Op &op) { return 16 * operandNumel(op); }


/// Scalars of scalars: nothing to split.
std::optional<DimLabels> labelsScalar(const Op &op) {
  DimRule r(op);
  if (r.rank0() != 0) return std::nullopt;
  r.L.operands[0] = {};
  r.L.results[0] = {};
  return r.L;
}

} // namespace

void ir::registerOptimizerOps(OpDef *t) {
  define(t, OpKind::GlobalNorm, inferGlobalNorm, evalGlobalNorm, nullptr, flopsGlobalNorm);
  define(t, OpKind::ClipScale, inferClipScale, evalClipScale, nullptr, flopsFew);
  define(t, OpKind::LrSchedule, inferLrSchedule, evalLrSchedule, nullptr, flopsFew);
  define(t, OpKind::SgdUpdate, inferSgd, evalSgd, nullptr, flopsSgd);
  define(t, OpKind::AdamUpdate, inferAdam, evalAdam, nullptr, flopsAdam);
  declare(t, OpKind::ClipScale, 0, labelsScalar);
  declare(t, OpKind::LrSchedule, 0, labelsScalar);
  // The updates run in their states' layout (the partitioner's own rule).
  using R = OperandRole;
  declare(t, OpKind::SgdUpdate, kInPlace, nullptr);
  entry(t, OpKind::SgdUpdate).operandRoles = {R::Parameter, R::Gradient, R::State, R::HyperParameter};
  entry(t, OpKind::SgdUpdate).inPlaceOf = {0, 2};
  declare(t, OpKind::AdamUpdate, kInPlace, nullptr);
  entry(t, OpKind::AdamUpdate).operandRoles = {R::Parameter, R::Gradient,       R::State,
                                               R::State,     R::HyperParameter, R::HyperParameter};
  entry(t, OpKind::AdamUpdate).inPlaceOf = {0, 2, 3};
  kernel(t, OpKind::GlobalNorm, KernelClass::Reduction, {"global_norm"});
  kernel(t, OpKind::ClipScale, KernelClass::Elementwise);
  kernel(t, OpKind::LrSchedule, KernelClass::Library, {"lr_schedule"});
  kernel(t, OpKind::SgdUpdate, KernelClass::Library, {"sgd_update"});
  kernel(t, OpKind::AdamUpdate, KernelClass::Elementwise);
}
