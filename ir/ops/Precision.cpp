//===- ir/ops/Precision.cpp - the ops of dynamic loss scaling -------------===//
//
// Dynamic loss scaling (fp16 training, as torch.cuda.amp.GradScaler and
// Megatron-LM's DynamicGradScaler) needs three things the other families do
// not have: a test for overflow, a way to keep the old value of a parameter
// when the step is skipped, and the update of the scale itself. They are ops
// (not compositions of elementwise ones) so the skip is one visible decision:
//   all_finite(x...) -> bool[]: true iff no operand holds an inf or a NaN.
//   select(cond, a, b) -> cond ? a : b, elementwise; cond is bool and
//     broadcasts to a's shape (a scalar cond picks a whole tensor); a and b
//     have the same shape and dtype. The unpicked side may be inf or NaN.
//   loss_scale_update(scale, good_steps, finite) {growth = 2, backoff = 0.5,
//     window = 2000} -> (scale, good_steps), all scalars:
//       not finite: (scale * backoff, 0)
//       finite:     good_steps + 1 == window ? (scale * growth, 0)
//                                            : (scale, good_steps + 1)
//     GradScaler.update()'s rule (_amp_update_scale_).
// None is differentiable: they run after the backward graph.
//
//===----------------------------------------------------------------------===//

#include "ir/ops/DimRule.h"
#include "ir/ops/OpSupport.h"

#include <cmath>

using namespace planc;
using namespace planc::ir;

namespace {

std::string checkScalarOf(llvm::ArrayRef<TensorType> ops, size_t i, const char *what, bool wantBool) {
  const TensorType &t = ops[i];
  bool kindOk = wantBool ? t.dtype == DType::Bool : t.dtype != DType::Bool;
  if (t.rank() == 0 && kindOk) return "";
  return "operand " + std::to_string(i) + " (" + what + ") must be a " + (wantBool ? "bool" : "numeric") +
         " scalar, got " + toString(t);
}

//===----------------------------------------------------------------------===//
// all_finite
//===----------------------------------------------------------------------===//

std::string inferAllFinite(llvm::ArrayRef<TensorType> ops, const AttrMap &, std::vector<TensorType> &res) {
  if (ops.empty()) return "expects at least one operand";
  for (size_t i = 0; i < ops.size(); ++i)
    if (auto e = checkFloat(ops, i); !e.empty()) return e;
  res = {TensorType({}, DType::Bool)};
  return "";
}

void evalAllFinite(EvalContext &, const Op &, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  bool finite = true;
  for (const Tensor *t : in)
    for (double x : t->data) finite &= std::isfinite(x);
  out[0].data[0] = finite ? 1 : 0;
}

double flopsAllFinite(const Op &op) {
  double n = 0;
  for (const Value *v : op.operands) n += double(v->type.numel());
  return n;
}

//===----------------------------------------------------------------------===//
// select
//===----------------------------------------------------------------------===//

std::string inferSelect(llvm::ArrayRef<TensorType> ops, const AttrMap &, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 3); !e.empty()) return e;
  if (ops[0].dtype != DType::Bool) return "operand 0 (cond) must be bool, got " + toString(ops[0]);
  if (ops[1].shape != ops[2].shape || ops[1].dtype != ops[2].dtype)
    return "operands 1 and 2 must have the same shape and dtype, got " + toString(ops[1]) + " and " +
           toString(ops[2]);
  if (!broadcastsTo(ops[0].shape, ops[1].shape))
    return "cond " + toString(ops[0].shape) + " must broadcast to " + toString(ops[1].shape);
  res = {TensorType(ops[1].shape, ops[1].dtype)};
  return "";
}

void evalSelect(EvalContext &, const Op &, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  const Tensor &c = *in[0], &a = *in[1], &b = *in[2];
  Tensor &y = out[0];
  if (y.data.empty()) return;
  IndexWalker w(y.shape, {broadcastStrides(c.shape, y.shape)});
  size_t i = 0;
  do {
    y.data[i] = c.data[w.offset(0)] != 0 ? a.data[i] : b.data[i];
    ++i;
  } while (w.next());
}

double flopsSelect(const Op &op) { return resultNumel(op); }

//===----------------------------------------------------------------------===//
// loss_scale_update
//===----------------------------------------------------------------------===//

struct ScaleRule {
  double growth, backoff;
  int64_t window;
};

ScaleRule readRule(AttrReader &at) {
  return {at.getFloat("growth", 2.0), at.getFloat("backoff", 0.5), at.getInt("window", 2000)};
}

std::string inferLossScaleUpdate(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 3); !e.empty()) return e;
  if (ops[0].rank() != 0 || !isFloat(ops[0].dtype))
    return "operand 0 (scale) must be a floating-point scalar, got " + toString(ops[0]);
  if (auto e = checkScalarOf(ops, 1, "good_steps", false); !e.empty()) return e;
  if (auto e = checkScalarOf(ops, 2, "finite", true); !e.empty()) return e;
  AttrReader at(attrs);
  ScaleRule r = readRule(at);
  if (!at.ok()) return at.error;
  if (!(r.growth >= 1)) return "growth must be at least 1";
  if (!(r.backoff > 0 && r.backoff <= 1)) return "backoff must be in (0, 1]";
  if (r.window < 1) return "window must be at least 1, got " + std::to_string(r.window);
  res = {TensorType({}, ops[0].dtype), TensorType({}, ops[1].dtype)};
  return "";
}

void evalLossScaleUpdate(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in,
                         llvm::MutableArrayRef<Tensor> out) {
  AttrReader at(op.attrs);
  ScaleRule r = readRule(at);
  double scale = in[0]->data[0], good = in[1]->data[0];
  if (in[2]->data[0] == 0) {
    scale *= r.backoff;
    good = 0;
  } else if (good + 1 >= double(r.window)) {
    scale *= r.growth;
    good = 0;
  } else {
    good += 1;
  }
  out[0].data[0] = scale;
  out[1].data[0] = good;
}

double flopsFew(const Op &) { return 3; }


} // namespace

void ir::registerPrecisionOps(OpDef *t) {
  define(t, OpKind::AllFinite, inferAllFinite, evalAllFinite, nullptr, flopsAllFinite);
  define(t, OpKind::Select, inferSelect, evalSelect, nullptr, flopsSelect);
  define(t, OpKind::LossScaleUpdate, inferLossScaleUpdate, evalLossScaleUpdate, nullptr, flopsFew);
  // A scalar condition broadcasts: each rank selects its own blocks.
  declare(t, OpKind::Select, kElementwise | kKeepsPaddingZero, elementwiseLabels);
  declare(t, OpKind::LossScaleUpdate, kInPlace, nullptr);
  entry(t, OpKind::LossScaleUpdate).inPlaceOf = {0, 1};
  kernel(t, OpKind::AllFinite, KernelClass::Library, {"all_finite"});
  kernel(t, OpKind::Select, KernelClass::Library, {"select"});
  kernel(t, OpKind::LossScaleUpdate, KernelClass::Library, {"loss_scale_update"});
}
