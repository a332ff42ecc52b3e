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
#include "ir/ops/Formula.h"
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

/// dx = dy * f'(v): the op's formula (ir/ops/Formula.h), which the code
/// generators render too.
void evalActivationGrad(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in,
                        llvm::MutableArrayRef<Tensor> out) {
  evalFormula(*formulaOf(op.kind), op.attrs, in, out[0]);
}

double flopsGeluGrad(const Op &op) { return 14 * resultNumel(op); }
double flopsSiluGrad(const Op &op) { return 8 * resultNumel(op); }
double flopsThree(const Op &op) { return 3 * resultNumel(op); }
double flopsOne(const Op &op) { return resultNumel(op); }


} // namespace

void ir::registerActivationGradOps(OpDef *t) {
  define(t, OpKind::GeluGrad, inferActivationGrad, evalActivationGrad, nullptr, flopsGeluGrad);
  define(t, OpKind::SiluGrad, inferActivationGrad, evalActivationGrad, nullptr, flopsSiluGrad);
  define(t, OpKind::SigmoidGrad, inferActivationGrad, evalActivationGrad, nullptr, flopsThree);
  define(t, OpKind::TanhGrad, inferActivationGrad, evalActivationGrad, nullptr, flopsThree);
  define(t, OpKind::ReluGrad, inferActivationGrad, evalActivationGrad, nullptr, flopsOne);

  // Linear in dy, but a partial dy is reduced here (Megatron's layout: the
  // backward all-reduce sits where the forward's operand was whole).
  for (OpKind k : {OpKind::GeluGrad, OpKind::SiluGrad, OpKind::SigmoidGrad, OpKind::TanhGrad, OpKind::ReluGrad})
    declare(t, k, kElementwise, elementwiseLabels);
  for (OpKind k : {OpKind::GeluGrad, OpKind::SiluGrad, OpKind::SigmoidGrad, OpKind::TanhGrad, OpKind::ReluGrad})
    kernel(t, k, KernelClass::Elementwise);
}
