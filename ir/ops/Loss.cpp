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
// {denominator} (optional, on both) divides by that count instead of the
// number of targets: a rank holding a block of the batch then computes its
// addend of the global mean.
//
// The vocab-parallel pair, for logits split along V (each rank holds columns
// [offset, offset + V/n)): vocab_ce_stats(logits, targets, row_max) gives per
// row the sum over the rank's columns of exp(logit - row_max) and the target's
// logit if the rank holds it (else 0) -- both addends of sums over the vocab
// axis; vocab_ce_grad(logits, targets, row_max, sum_exp, dloss) {denominator}
// gives the rank's columns of (softmax - onehot) dloss / denominator.
//
//===----------------------------------------------------------------------===//

#include "ir/ops/DimRule.h"
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

/// The count a mean divides by: the attribute, or the number of targets.
double denominatorOf(const Op &op, int64_t targets) {
  return op.has("denominator") ? op.getFloat("denominator") : double(targets);
}

void evalCrossEntropy(EvalContext &ctx, const Op &op, llvm::ArrayRef<const Tensor *> in,
                      llvm::MutableArrayRef<Tensor> out) {
  const Tensor &logits = *in[0], &targets = *in[1];
  int64_t V = logits.shape.back();
  double N = denominatorOf(op, targets.numel());
  double total = 0;
  if (!forEachRow(ctx, logits, targets,
                  [&](int64_t r, int64_t t, double lse) { total += lse - logits.data[r * V + t]; }))
    return;
  out[0].data[0] = N ? total / N : std::numeric_limits<double>::quiet_NaN(); // torch: mean of none is NaN
}

void evalCrossEntropyGrad(EvalContext &ctx, const Op &op, llvm::ArrayRef<const Tensor *> in,
                          llvm::MutableArrayRef<Tensor> out) {
  const Tensor &logits = *in[0], &targets = *in[1];
  int64_t V = logits.shape.back();
  double N = denominatorOf(op, targets.numel());
  double scale = N ? in[2]->data[0] / N : 0.0;
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

// ---- vocab-parallel

std::string checkRowOperand(llvm::ArrayRef<TensorType> ops, size_t i, const char *what) {
  Shape want(ops[0].shape.begin(), ops[0].shape.end() - 1);
  if (ops[i].shape != want || !isFloat(ops[i].dtype))
    return "operand " + std::to_string(i) + " (" + what + ") must be a float tensor of shape " + toString(want) +
           ", got " + toString(ops[i]);
  return "";
}

std::string inferVocabCeStats(llvm::ArrayRef<TensorType> ops, const AttrMap &, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 3); !e.empty()) return e;
  if (auto e = checkLossOperands(ops); !e.empty()) return e;
  if (auto e = checkRowOperand(ops, 2, "row max"); !e.empty()) return e;
  TensorType row(ops[1].shape, accumulatorDType(ops[0].dtype));
  res = {row, row};
  return "";
}

std::string inferVocabCeGrad(llvm::ArrayRef<TensorType> ops, const AttrMap &, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 5); !e.empty()) return e;
  if (auto e = checkLossOperands(ops); !e.empty()) return e;
  if (auto e = checkRowOperand(ops, 2, "row max"); !e.empty()) return e;
  if (auto e = checkRowOperand(ops, 3, "sum of exp"); !e.empty()) return e;
  if (!ops[4].shape.empty() || !isFloat(ops[4].dtype))
    return "operand 4 (the loss gradient) must be a floating-point scalar, got " + toString(ops[4]);
  res = {TensorType(ops[0].shape, ops[0].dtype)};
  return "";
}

/// The rank's column of a global target, or -1 when another rank holds it
/// (and the context's error for a target out of the global range).
int64_t localColumn(EvalContext &ctx, const Op &op, double target, int64_t localV) {
  const TensorType &global = op.operands[0]->type;
  int64_t V = global.shape.back(), t = int64_t(target);
  if (t < 0 || t >= V) {
    ctx.fail("target " + std::to_string(t) + " is out of range [0, " + std::to_string(V) + ")");
    return -2;
  }
  int64_t first = ctx.blockOffset(global, global.rank() - 1);
  return t >= first && t < first + localV ? t - first : -1;
}

void evalVocabCeStats(EvalContext &ctx, const Op &op, llvm::ArrayRef<const Tensor *> in,
                      llvm::MutableArrayRef<Tensor> out) {
  const Tensor &logits = *in[0], &targets = *in[1], &mx = *in[2];
  int64_t V = logits.shape.back(), N = targets.numel();
  for (int64_t r = 0; r < N; ++r) {
    const double *row = logits.data.data() + r * V;
    double sum = 0;
    for (int64_t k = 0; k < V; ++k) sum += std::exp(row[k] - mx.data[r]);
    int64_t c = localColumn(ctx, op, targets.data[r], V);
    if (c == -2) return;
    out[0].data[r] = sum;
    out[1].data[r] = c >= 0 ? row[c] : 0.0;
  }
}

void evalVocabCeGrad(EvalContext &ctx, const Op &op, llvm::ArrayRef<const Tensor *> in,
                     llvm::MutableArrayRef<Tensor> out) {
  const Tensor &logits = *in[0], &targets = *in[1], &mx = *in[2], &sumExp = *in[3];
  int64_t V = logits.shape.back(), N = targets.numel();
  double denominator = denominatorOf(op, N);
  double scale = denominator ? in[4]->data[0] / denominator : 0.0;
  std::vector<double> &dx = out[0].data;
  for (int64_t r = 0; r < N; ++r) {
    for (int64_t k = 0; k < V; ++k)
      dx[r * V + k] = std::exp(logits.data[r * V + k] - mx.data[r]) / sumExp.data[r] * scale;
    int64_t c = localColumn(ctx, op, targets.data[r], V);
    if (c == -2) return;
    if (c >= 0) dx[r * V + c] -= scale;
  }
}


/// The vocab dim whole here; the partitioner splits it itself
/// (vocab-parallel cross-entropy, into vocab_ce_stats and vocab_ce_grad).
std::optional<DimLabels> labelsCrossEntropy(const Op &op) {
  DimRule r(op);
  size_t k = r.rank0();
  if (k == 0) return std::nullopt;
  bool grad = op.kind == OpKind::CrossEntropyGrad;
  std::vector<int> logits;
  for (size_t d = 0; d + 1 < k; ++d) logits.push_back(r.fresh(false, !grad));
  logits.push_back(r.fresh(true));
  r.L.operands[0] = logits;
  r.L.operands[1] = std::vector<int>(logits.begin(), logits.end() - 1);
  if (grad) {
    r.L.operands[2] = {};
    r.L.results[0] = logits;
    r.L.linearIn[2] = true;
  } else {
    r.L.results[0] = {};
  }
  return r.L;
}

} // namespace

void ir::registerLossOps(OpDef *t) {
  define(t, OpKind::VocabCeStats, inferVocabCeStats, evalVocabCeStats, nullptr, flopsCrossEntropy);
  define(t, OpKind::VocabCeGrad, inferVocabCeGrad, evalVocabCeGrad, nullptr, flopsCrossEntropyGrad);
  define(t, OpKind::CrossEntropy, inferCrossEntropy, evalCrossEntropy, gradCrossEntropy, flopsCrossEntropy);
  define(t, OpKind::CrossEntropyGrad, inferCrossEntropyGrad, evalCrossEntropyGrad, nullptr, flopsCrossEntropyGrad);
  declare(t, OpKind::CrossEntropy, 0, labelsCrossEntropy);
  declare(t, OpKind::CrossEntropyGrad, 0, labelsCrossEntropy);
  kernel(t, OpKind::CrossEntropy, KernelClass::Reduction, {"cross_entropy", /*the gradient*/ false});
  kernel(t, OpKind::CrossEntropyGrad, KernelClass::Reduction, {"cross_entropy", /*the gradient*/ true});
  kernel(t, OpKind::VocabCeStats, KernelClass::Reduction, {"vocab_ce", /*the gradient*/ false});
  kernel(t, OpKind::VocabCeGrad, KernelClass::Reduction, {"vocab_ce", /*the gradient*/ true});
}
