//===- ir/ops/Loss.cpp - cross-entropy ------------------------------------===//
//
// cross_entropy(logits [..., V], targets [...]) -> []: the mean over every
// target position of logsumexp(logits row) - logits[target], as
// torch.nn.functional.cross_entropy with reduction='mean' (no ignored index).
// The loss is f32 for narrower logits (as mixed-precision training computes
// it) and f64 for f64 logits. cross_entropy_grad(logits, targets, dloss) ->
// dlogits = (softmax(logits) - onehot(target)) dloss / N, in the logits' dtype.
// A target out of [0, V) is a run-time error of the interpreter.
//
//===----------------------------------------------------------------------===//

#include "ir/ops/OpSupport.h"

#include <cmath>
#include <limits>

using namespace planc;
using namespace planc::ir;

namespace {

std::string checkLossOperands(llvm::ArrayRef<TensorType> ops) {
  if (auto e = checkFloat(ops, 0); !e.empty()) return e;
  const TensorType &logits = ops[0], &targets = ops[1];
  if (logits.rank() < 1) return "operand 0 (logits) must have rank 1 or more, got " + toString(logits);
  if (!isInteger(targets.dtype)) return "operand 1 (targets) must have an integer dtype, got " + toString(targets);
  Shape want(logits.shape.begin(), logits.shape.end() - 1);
  if (targets.shape != want)
    return "targets " + toString(targets.shape) + " must have the shape of the logits without their last dim, " +
           toString(want);
  return "";
}

std::string inferCrossEntropy(llvm::ArrayRef<TensorType> ops, const AttrMap &, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 2); !e.empty()) return e;
  if (auto e = checkLossOperands(ops); !e.empty()) return e;
  res = {TensorType({}, accumulatorDType(ops[0].dtype))};
  return "";
}

std::string inferCrossEntropyGrad(llvm::ArrayRef<TensorType> ops, const AttrMap &, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 3); !e.empty()) return e;
  if (auto e = checkLossOperands(ops); !e.empty()) return e;
  if (!ops[2].shape.empty() || !isFloat(ops[2].dtype))
    return "operand 2 (the loss gradient) must be a floating-point scalar, got " + toString(ops[2]);
  res = {TensorType(ops[0].shape, ops[0].dtype)};
  return "";
}

/// Calls f(row, target, logsumexp) for every position; false after an
/// out-of-range target (reported through ctx).
template <typename F> bool forEachRow(EvalContext &ctx, const Tensor &logits, const Tensor &targets, F f) {
  int64_t V = logits.shape.back(), N = targets.numel();
  for (int64_t r = 0; r < N; ++r) {
    const double *row = logits.data.data() + r * V;
    int64_t t = int64_t(targets.data[r]);
    if (t < 0 || t >= V) {
      ctx.fail("target " + std::to_string(t) + " is out of range [0, " + std::to_string(V) + ")");
      return false;
    }
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t k = 0; k < V; ++k) mx = std::max(mx, row[k]);
    double sum = 0;
    for (int64_t k = 0; k < V; ++k) sum += std::exp(row[k] - mx);
    f(r, t, mx + std::log(sum));
  }
  return true;
}

void evalCrossEntropy(EvalContext &ctx, const Op &, llvm::ArrayRef<const Tensor *> in,
                      llvm::MutableArrayRef<Tensor> out) {
  const Tensor &logits = *in[0], &targets = *in[1];
  int64_t V = logits.shape.back(), N = targets.numel();
  double total = 0;
  if (!forEachRow(ctx, logits, targets,
                  [&](int64_t r, int64_t t, double lse) { total += lse - logits.data[r * V + t]; }))
    return;
  out[0].data[0] = N ? total / double(N) : std::numeric_limits<double>::quiet_NaN(); // torch: mean of none is NaN
}

void evalCrossEntropyGrad(EvalContext &ctx, const Op &, llvm::ArrayRef<const Tensor *> in,
                          llvm::MutableArrayRef<Tensor> out) {
  const Tensor &logits = *in[0], &targets = *in[1];
  int64_t V = logits.shape.back(), N = targets.numel();
  double scale = N ? in[2]->data[0] / double(N) : 0.0;
  std::vector<double> &dx = out[0].data;
  forEachRow(ctx, logits, targets, [&](int64_t r, int64_t t, double lse) {
    for (int64_t k = 0; k < V; ++k) dx[r * V + k] = std::exp(logits.data[r * V + k] - lse) * scale;
    dx[r * V + t] -= scale;
  });
}

void gradCrossEntropy(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(2, nullptr);
  if (d[0]) dx[0] = b.value(OpKind::CrossEntropyGrad, {op.operands[0], op.operands[1], d[0]});
}

// Per logit: max, subtract, exp, add; then a log and a subtraction per row.
double flopsCrossEntropy(const Op &op) { return 4 * operandNumel(op); }
double flopsCrossEntropyGrad(const Op &op) { return 5 * operandNumel(op); }

} // namespace

void ir::registerLossOps(OpDef *t) {
  define(t, OpKind::CrossEntropy, inferCrossEntropy, evalCrossEntropy, gradCrossEntropy, flopsCrossEntropy);
  define(t, OpKind::CrossEntropyGrad, inferCrossEntropyGrad, evalCrossEntropyGrad, nullptr, flopsCrossEntropyGrad);
}
