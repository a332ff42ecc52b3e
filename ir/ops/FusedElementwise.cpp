//===- ir/ops/FusedElementwise.cpp - a chain of elementwise ops as one ---===//
//
// fused_elementwise(x0, x1, ...) {formula: string, ops: string, dtype: string}
//
// is the elementwise ops of a chain (passes/FuseElementwise.cpp) as one op:
// `formula` is their composed formula in ir/ops/Formula.h's text form, over
// the operands broadcast to the result's shape (NumPy rules), with every
// attribute of the ops made a constant; `ops` names them for people ("add,
// gelu"); `dtype` is the result's. The reference kernel evaluates the
// formula in f64 and rounds once, where the unfused ops rounded each
// intermediate to its dtype: in f32 and f64 the difference is that
// rounding, and the fused result is the more exact.
//
//===----------------------------------------------------------------------===//

#include "ir/ops/DimRule.h"
#include "ir/ops/Formula.h"
#include "ir/ops/OpSupport.h"
#include "support/Plural.h"

using namespace planc;
using namespace planc::ir;

namespace {

std::string readFormula(const AttrMap &attrs, Formula &f) {
  AttrReader at(attrs);
  std::string text = at.getString("formula");
  at.getString("ops", std::string());
  if (!at.ok()) return at.error;
  if (std::string e = parseFormulaText(text, f); !e.empty()) return "formula: " + e;
  return "";
}

std::string inferFused(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  Formula f;
  if (std::string e = readFormula(attrs, f); !e.empty()) return e;
  if (ops.size() != f.inputs)
    return "the formula reads " + counted(int64_t(f.inputs), "operand") + ", the op has " + std::to_string(ops.size());
  AttrReader at(attrs);
  DType dtype = at.getDType("dtype");
  if (!at.ok()) return at.error;
  if (!isFloat(dtype)) return std::string("the result must be a float, got ") + spelling(dtype);
  Shape shape = ops.empty() ? Shape{} : ops[0].shape;
  for (const TensorType &t : ops) {
    std::optional<Shape> b = broadcastShapes(shape, t.shape);
    if (!b) return "operand shapes " + toString(shape) + " and " + toString(t.shape) + " do not broadcast";
    shape = *b;
  }
  res = {TensorType(shape, dtype)};
  return "";
}

void evalFused(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  Formula f;
  readFormula(op.attrs, f);
  evalFormula(f, {}, in, out[0]);
}

// What its members count (`ops`, written by fuse-elementwise), so that
// fusing a chain leaves the step's FLOPs, and MFU, as they were: every
// member's result has the group's type, so each member's count is its count
// for the fused op's elements. Without `ops` (written by hand): one FLOP per
// arithmetic node and element (inputs and constants are free).
double flopsFused(const Op &op) {
  auto ops = op.attrs.find("ops");
  const std::string *names = ops == op.attrs.end() ? nullptr : std::get_if<std::string>(&ops->second);
  if (names && !names->empty()) {
    double sum = 0;
    bool known = true;
    llvm::SmallVector<llvm::StringRef, 8> parts;
    llvm::StringRef(*names).split(parts, ',');
    for (llvm::StringRef name : parts) {
      std::optional<OpKind> kind = parseOpKind(name.trim());
      const OpDef *def = kind && *kind != OpKind::FusedElementwise ? &opDef(*kind) : nullptr;
      if (!def || !def->flops) {
        known = false;
        break;
      }
      sum += def->flops(op);
    }
    if (known) return sum;
  }
  Formula f;
  readFormula(op.attrs, f);
  double nodes = 0;
  for (const FormulaNode &n : f.nodes) nodes += arity(n.op) > 0;
  return nodes * resultNumel(op);
}

} // namespace

void ir::registerFusedElementwiseOps(OpDef *t) {
  define(t, OpKind::FusedElementwise, inferFused, evalFused, nullptr, flopsFused);
  declare(t, OpKind::FusedElementwise, kElementwise, elementwiseLabels);
  formulaKernel(t, OpKind::FusedElementwise, readFormula); // its formula is its attribute
}
