//===- ir/ops/Elementwise.cpp - unary, scalar and broadcasting binary ops -===//
//
// Unary ops keep their operand's type. Binary ops broadcast as NumPy does
// (shapes aligned at the right, a dim of 1 stretches) and need equal dtypes;
// their gradients sum the broadcast dims back with sum_to. The activations'
// derivatives are their own ops (gelu_grad, ..., ActivationGrad.cpp), so
// the backward graph stays as small as the forward one.
//
// FLOPs count one per elementary arithmetic operation, a transcendental
// function (exp, tanh, ...) as one.
//
//===----------------------------------------------------------------------===//

#include "ir/ops/DimRule.h"
#include "ir/ops/Formula.h"
#include "ir/ops/OpSupport.h"

#include <cmath>

using namespace planc;
using namespace planc::ir;

namespace {

/// The reference kernel of every op here: its formula (ir/ops/Formula.h),
/// the description the code generators render too.
void evalByFormula(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  evalFormula(*formulaOf(op.kind), op.attrs, in, out[0]);
}

//===----------------------------------------------------------------------===//
// Unary: shape and dtype of the operand
//===----------------------------------------------------------------------===//

/// Floating-point unary ops (the transcendental ones, activations).
std::string inferFloatUnary(llvm::ArrayRef<TensorType> ops, const AttrMap &, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  if (auto e = checkFloat(ops, 0); !e.empty()) return e;
  res = {TensorType(ops[0].shape, ops[0].dtype)};
  return "";
}

/// neg, abs: any numeric dtype (integers too: index arithmetic).
std::string inferNumericUnary(llvm::ArrayRef<TensorType> ops, const AttrMap &, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  if (ops[0].dtype == DType::Bool) return "operand 0 must be numeric, got " + toString(ops[0]);
  res = {TensorType(ops[0].shape, ops[0].dtype)};
  return "";
}

/// Checks the scalar attribute `name` of pow, scale and add_scalar; integers
/// are allowed for scale and add_scalar (a step counter plus one).
std::string inferWithScalar(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res,
                            const char *name, bool floatOnly) {
  if (auto e = checkArity(ops, 1); !e.empty()) return e;
  if (floatOnly) {
    if (auto e = checkFloat(ops, 0); !e.empty()) return e;
  } else if (ops[0].dtype == DType::Bool) {
    return "operand 0 must be numeric, got " + toString(ops[0]);
  }
  AttrReader a(attrs);
  a.getFloat(name);
  if (!a.ok()) return a.error;
  res = {TensorType(ops[0].shape, ops[0].dtype)};
  return "";
}

std::string inferPow(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  return inferWithScalar(ops, attrs, res, "exponent", true);
}
std::string inferScale(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  return inferWithScalar(ops, attrs, res, "factor", false);
}
std::string inferAddScalar(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  return inferWithScalar(ops, attrs, res, "value", false);
}

//===----------------------------------------------------------------------===//
// Unary gradients. x is the operand, y the result, dy its gradient.
//===----------------------------------------------------------------------===//

Value *x0(const Op &op) { return op.operands[0]; }
Value *y0(const Op &op) { return op.results[0]; }

void gradNeg(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0]) dx[0] = b.neg(d[0]);
}
void gradExp(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0]) dx[0] = b.mul(d[0], y0(op)); // d exp(x) = exp(x)
}
void gradLog(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0]) dx[0] = b.div(d[0], x0(op));
}
void gradSqrt(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0]) dx[0] = b.scale(b.div(d[0], y0(op)), 0.5); // 1 / (2 sqrt(x))
}
void gradRsqrt(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  // d x^(-1/2) = -1/2 x^(-3/2) = -1/2 y^3
  if (d[0]) dx[0] = b.scale(b.mul(d[0], b.value(OpKind::Pow, {y0(op)}, {{"exponent", 3.0}})), -0.5);
}
void gradTanh(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0]) dx[0] = b.value(OpKind::TanhGrad, {y0(op), d[0]});
}
void gradSigmoid(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0]) dx[0] = b.value(OpKind::SigmoidGrad, {y0(op), d[0]});
}
void gradRelu(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0]) dx[0] = b.value(OpKind::ReluGrad, {x0(op), d[0]});
}
void gradGelu(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0]) dx[0] = b.value(OpKind::GeluGrad, {x0(op), d[0]});
}
void gradSilu(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0]) dx[0] = b.value(OpKind::SiluGrad, {x0(op), d[0]});
}
void gradAbs(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (!d[0]) return;
  // dy * sign(x), sign(0) = 0 as torch.abs; with no sign op, it is
  // relu_grad(x, dy) - relu_grad(-x, dy): dy where x > 0 minus dy where x < 0.
  Value *pos = b.value(OpKind::ReluGrad, {x0(op), d[0]});
  Value *negPart = b.value(OpKind::ReluGrad, {b.neg(x0(op)), d[0]});
  dx[0] = b.sub(pos, negPart);
}
void gradPow(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (!d[0]) return;
  double e = AttrReader(op.attrs).getFloat("exponent");
  if (e == 0) return; // x^0 is constant
  if (e == 1) {
    dx[0] = d[0];
    return;
  }
  dx[0] = b.mul(d[0], b.scale(b.value(OpKind::Pow, {x0(op)}, {{"exponent", e - 1}}), e));
}
void gradScale(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0] && isFloat(x0(op)->type.dtype)) dx[0] = b.scale(d[0], AttrReader(op.attrs).getFloat("factor"));
}
void gradAddScalar(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(1, nullptr);
  if (d[0] && isFloat(x0(op)->type.dtype)) dx[0] = d[0];
}

double flopsPerElement(const Op &op, double perElement) { return perElement * resultNumel(op); }
double flopsOne(const Op &op) { return flopsPerElement(op, 1); }
double flopsTwo(const Op &op) { return flopsPerElement(op, 2); }
double flopsSilu(const Op &op) { return flopsPerElement(op, 4); }    // exp, add, div, mul
double flopsGelu(const Op &op) { return flopsPerElement(op, 8); }    // cube, mul-add, scale, tanh, add, 2 mul
double flopsSigmoid(const Op &op) { return flopsPerElement(op, 3); } // exp, add, div

//===----------------------------------------------------------------------===//
// Binary with broadcasting
//===----------------------------------------------------------------------===//

std::string inferBinary(llvm::ArrayRef<TensorType> ops, const AttrMap &, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 2); !e.empty()) return e;
  if (auto e = checkSameDType(ops, 0, 1); !e.empty()) return e;
  if (ops[0].dtype == DType::Bool) return "operands must be numeric, got " + toString(ops[0]);
  std::optional<Shape> shape = broadcastShapes(ops[0].shape, ops[1].shape);
  if (!shape) return "shapes " + toString(ops[0].shape) + " and " + toString(ops[1].shape) + " do not broadcast";
  res = {TensorType(*shape, ops[0].dtype)};
  return "";
}

// Each operand's gradient is computed at the broadcast shape, then summed
// back to the operand's own shape.
void gradAdd(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(2, nullptr);
  if (!d[0]) return;
  dx[0] = b.sumTo(d[0], op.operands[0]->type.shape);
  dx[1] = b.sumTo(d[0], op.operands[1]->type.shape);
}
void gradSub(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(2, nullptr);
  if (!d[0]) return;
  dx[0] = b.sumTo(d[0], op.operands[0]->type.shape);
  dx[1] = b.sumTo(b.neg(d[0]), op.operands[1]->type.shape);
}
void gradMul(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(2, nullptr);
  if (!d[0]) return;
  dx[0] = b.sumTo(b.mul(d[0], op.operands[1]), op.operands[0]->type.shape);
  dx[1] = b.sumTo(b.mul(d[0], op.operands[0]), op.operands[1]->type.shape);
}
void gradDiv(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(2, nullptr);
  if (!d[0]) return;
  // y = a / b: da = dy / b, db = -dy a / b^2 = -dy y / b.
  dx[0] = b.sumTo(b.div(d[0], op.operands[1]), op.operands[0]->type.shape);
  dx[1] = b.sumTo(b.neg(b.div(b.mul(d[0], op.results[0]), op.operands[1])), op.operands[1]->type.shape);
}

//===----------------------------------------------------------------------===//
// Sharding rules
//===----------------------------------------------------------------------===//

/// Linear in its one operand (neg, scale).
std::optional<DimLabels> labelsLinearUnary(const Op &op) {
  DimLabels L = DimRule(op).elementwise();
  L.linearIn[0] = true;
  return L;
}

/// add, sub: linear in both operands together (a partial plus a partial).
std::optional<DimLabels> labelsJointlyLinear(const Op &op) {
  DimLabels L = DimRule(op).elementwise();
  L.jointlyLinear = true;
  return L;
}

std::optional<DimLabels> labelsMul(const Op &op) {
  DimLabels L = DimRule(op).elementwise();
  L.linearIn = {true, true};
  return L;
}

std::optional<DimLabels> labelsDiv(const Op &op) {
  DimLabels L = DimRule(op).elementwise();
  L.linearIn[0] = true;
  return L;
}

} // namespace

void ir::registerElementwiseOps(OpDef *t) {
  define(t, OpKind::Neg, inferNumericUnary, evalByFormula, gradNeg, flopsOne);
  define(t, OpKind::Exp, inferFloatUnary, evalByFormula, gradExp, flopsOne);
  define(t, OpKind::Log, inferFloatUnary, evalByFormula, gradLog, flopsOne);
  define(t, OpKind::Sqrt, inferFloatUnary, evalByFormula, gradSqrt, flopsOne);
  define(t, OpKind::Rsqrt, inferFloatUnary, evalByFormula, gradRsqrt, flopsTwo);
  define(t, OpKind::Tanh, inferFloatUnary, evalByFormula, gradTanh, flopsOne);
  define(t, OpKind::Relu, inferFloatUnary, evalByFormula, gradRelu, flopsOne);
  define(t, OpKind::Gelu, inferFloatUnary, evalByFormula, gradGelu, flopsGelu);
  define(t, OpKind::Silu, inferFloatUnary, evalByFormula, gradSilu, flopsSilu);
  define(t, OpKind::Sigmoid, inferFloatUnary, evalByFormula, gradSigmoid, flopsSigmoid);
  define(t, OpKind::Abs, inferNumericUnary, evalByFormula, gradAbs, flopsOne);
  define(t, OpKind::Pow, inferPow, evalByFormula, gradPow, flopsOne);
  define(t, OpKind::Scale, inferScale, evalByFormula, gradScale, flopsOne);
  define(t, OpKind::AddScalar, inferAddScalar, evalByFormula, gradAddScalar, flopsOne);

  define(t, OpKind::Add, inferBinary, evalByFormula, gradAdd, flopsOne);
  define(t, OpKind::Sub, inferBinary, evalByFormula, gradSub, flopsOne);
  define(t, OpKind::Mul, inferBinary, evalByFormula, gradMul, flopsOne);
  define(t, OpKind::Div, inferBinary, evalByFormula, gradDiv, flopsOne);

  for (OpKind k : {OpKind::Exp, OpKind::Log, OpKind::Sqrt, OpKind::Rsqrt, OpKind::Tanh, OpKind::Relu, OpKind::Gelu,
                   OpKind::Silu, OpKind::Sigmoid, OpKind::Abs, OpKind::Pow, OpKind::AddScalar})
    declare(t, k, kElementwise, elementwiseLabels);
  declare(t, OpKind::Neg, kElementwise | kKeepsPaddingZero, labelsLinearUnary);
  declare(t, OpKind::Scale, kElementwise | kKeepsPaddingZero, labelsLinearUnary);
  declare(t, OpKind::Add, kElementwise | kKeepsPaddingZero, labelsJointlyLinear);
  declare(t, OpKind::Sub, kElementwise | kKeepsPaddingZero, labelsJointlyLinear);
  declare(t, OpKind::Mul, kElementwise | kKeepsPaddingZero, labelsMul);
  declare(t, OpKind::Div, kElementwise, labelsDiv);
  // Each a formula (ir/ops/Formula.cpp).
  for (OpKind k : {OpKind::Neg, OpKind::Exp, OpKind::Log, OpKind::Sqrt, OpKind::Rsqrt, OpKind::Tanh, OpKind::Relu,
                   OpKind::Gelu, OpKind::Silu, OpKind::Sigmoid, OpKind::Abs, OpKind::Pow, OpKind::Scale,
                   OpKind::AddScalar, OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div})
    kernel(t, k, KernelClass::Elementwise);
}
