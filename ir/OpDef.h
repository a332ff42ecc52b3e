//===- ir/OpDef.h - everything about one op kind, in one place --*- C++ -*-===//
//
// One OpDef per OpKind (the STYLE rule "one source of truth per op"): how its
// attributes and operand types are checked and its result types computed, its
// reference kernel for the interpreter, its gradient rule for autodiff, and
// its FLOP count for the cost model. Passes ask this table instead of
// switching on op kinds. The definitions live in ir/ops/*.cpp, by family.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_OPDEF_H
#define PLANC_IR_OPDEF_H

#include "ir/Builder.h"
#include "ir/IR.h"
#include "ir/Tensor.h"

#include <string>
#include <vector>

namespace planc::ir {

class EvalContext;

struct OpDef {
  OpKind kind = OpKind::NumOps;
  /// Checks the attributes and operand types and computes the result types.
  /// Returns "" on success, else a message naming what is wrong (lower-case,
  /// no trailing period), which the verifier reports with the op's location.
  std::string (*infer)(llvm::ArrayRef<TensorType> operands, const AttrMap &attrs,
                       std::vector<TensorType> &results) = nullptr;
  /// Reference kernel: reads `in`, writes `out` (already shaped from the result
  /// types). Arithmetic is f64; the interpreter rounds results to their dtype.
  void (*eval)(EvalContext &ctx, const Op &op, llvm::ArrayRef<const Tensor *> in,
               llvm::MutableArrayRef<Tensor> out) = nullptr;
  /// Gradient rule: emits the ops computing each operand's gradient from the
  /// results' gradients (a null entry in dResults means zero). Leaves null in
  /// dOperands for operands without a gradient (indices, or all zeros).
  /// Null for ops that are not differentiable.
  void (*grad)(Builder &b, const Op &op, llvm::ArrayRef<Value *> dResults,
               std::vector<Value *> &dOperands) = nullptr;
  /// Floating-point operations of one execution (multiply-add = 2).
  double (*flops)(const Op &op) = nullptr;
};

const OpDef &opDef(OpKind kind);

/// Runs `infer` for an op already in a module (used by the verifier and by
/// Module builders that want the result types computed).
std::string inferResultTypes(OpKind kind, llvm::ArrayRef<Value *> operands, const AttrMap &attrs,
                             std::vector<TensorType> &results);

/// Bytes an op reads and writes (operands plus results), for the cost model.
double opBytes(const Op &op);

} // namespace planc::ir

#endif
