//===- ir/ops/ActivationGrad.cpp - derivatives of the activations ---------===//
//
// (x or y, dy) -> dx for the activations whose derivative is not a plain
// product: one fused op each instead of the several elementwise ops the rule
// would otherwise emit. gelu, silu and relu read the forward input x; tanh
// and sigmoid read their result y (their derivative is cheapest from it).
// These ops appear only in backward graphs and have no gradient themselves
// (no second-order differentiation).
//
//===----------------------------------------------------------------------===//

#include "ir/ops/DimRule.h"
#include "ir/ops/OpSupport.h"

#include <cmath>

using namespace planc;
using namespace planc::ir;

namespace {

std::string inferActivationGrad(llvm::ArrayRef<TensorType> ops, const AttrMap &, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 2); !e.empty()) return e;
  if (auto e = checkFloat(ops, 0); !e.empty()) return e;
  if (auto e = checkSameDType(ops, 0, 1); !e.empty()) return e;
  if (ops[0].shape != ops[1].shape)
    return "operand shapes " + toString(ops[0].shape) + " and " + toString(ops[1].shape) + " differ";
  res = {TensorType(ops[1].shape, ops[1].dtype)};
  return "";
}

/// dx = dy * F'(v), with v the forward input or result as the op says.
template <double (*Derivative)(double)>
void evalActivationGrad(EvalContext &, const Op &, llvm::ArrayRef<const Tensor *> in,
                        llvm::MutableArrayRef<Tensor> out) {
  const std::vector<double> &v = in[0]->data, &dy = in[1]->data;
  std::vector<double> &dx = out[0].data;
  for (size_t i = 0; i < dx.size(); ++i) dx[i] = dy[i] * Derivative(v[i]);
}

constexpr double kGeluC = 0.044715;

// d/dx 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + c x^3):
// 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) sqrt(2/pi) (1 + 3 c x^2).
double geluDerivative(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  double t = std::tanh(k * (x + kGeluC * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * kGeluC * x * x);
}

double sigmoidOf(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  double e = std::exp(x);
  return e / (1.0 + e);
}

// d/dx x s(x) = s (1 + x (1 - s)).
double siluDerivative(double x) {
  double s = sigmoidOf(x);
  return s * (1.0 + x * (1.0 - s));
}
double sigmoidDerivativeFromY(double y) { return y * (1.0 - y); }
double tanhDerivativeFromY(double y) { return 1.0 - y * y; }
// 0 at x = 0, as torch's threshold_backward.
double reluDerivative(double x) { return x > 0 ? 1.0 : 0.0; }

double flopsGeluGrad(const Op &op) { return 14 * resultNumel(op); }
double flopsSiluGrad(const Op &op) { return 8 * resultNumel(op); }
double flopsThree(const Op &op) { return 3 * resultNumel(op); }
double flopsOne(const Op &op) { return resultNumel(op); }


} // namespace

void ir::registerActivationGradOps(OpDef *t) {
  define(t, OpKind::GeluGrad, inferActivationGrad, evalActivationGrad<geluDerivative>, nullptr, flopsGeluGrad);
  define(t, OpKind::SiluGrad, inferActivationGrad, evalActivationGrad<siluDerivative>, nullptr, flopsSiluGrad);
  define(t, OpKind::SigmoidGrad, inferActivationGrad, evalActivationGrad<sigmoidDerivativeFromY>, nullptr, flopsThree);
  define(t, OpKind::TanhGrad, inferActivationGrad, evalActivationGrad<tanhDerivativeFromY>, nullptr, flopsThree);
  define(t, OpKind::ReluGrad, inferActivationGrad, evalActivationGrad<reluDerivative>, nullptr, flopsOne);

  // Linear in dy, but a partial dy is reduced here (Megatron's layout: the
  // backward all-reduce sits where the forward's operand was whole).
  for (OpKind k : {OpKind::GeluGrad, OpKind::SiluGrad, OpKind::SigmoidGrad, OpKind::TanhGrad, OpKind::ReluGrad})
    declare(t, k, kElementwise, elementwiseLabels);
}
