//===- ir/KernelDesc.h - what a code generator needs to know about an op -*- C++ -*-===//
//
// The kernel description of an op kind (OpDef::kernel), declared by its
// family's define() in ir/ops/ beside its shape rule and reference kernel,
// so that a code generator asks the op table instead of switching on op
// kinds. docs/kernels.md describes the classes:
//
//   communication  a call on the runtime's communicator
//   elementwise    a formula (ir/ops/Formula.h) of each result element
//   gemm           matmul as library GEMM calls
//   layout         data movement as a strided gather (Gather)
//   reduction      a row reduction: stages (the pre formulas, each summed or
//                  maxed along a row) and an output (the post formula)
//   library        a hand-written runtime kernel, named by its signature
//
// A reduction may also have a library kernel (cross-entropy, the norms'
// backward): the renderer takes the library one where there is one.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_KERNELDESC_H
#define PLANC_IR_KERNELDESC_H

#include "ir/IR.h"
#include "ir/ops/Formula.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace planc::ir {

enum class KernelClass : uint8_t { None, Communication, Elementwise, Gemm, Layout, Reduction, Library };
/// "communication", "elementwise", ... ("none" for None).
const char *spelling(KernelClass c);

/// How a stage of a row reduction combines a row's values.
enum class Combiner : uint8_t { Sum, Max };

/// One pass over a row: s_k = combine over j of value(operands at j, s_0 .. s_k-1).
struct RowStage {
  Combiner combiner = Combiner::Sum;
  Formula value;
};

/// A reduction along the innermost dims: the operands are `rows` rows of
/// `length` elements; each row goes through `stages`, then `output` gives
///   out[r, j] = output(operands at j, s_0 ..)   (outputPerElement)
///   out[r]    = output(s_0 ..)                  (otherwise)
/// Formula inputs 0 .. n-1 are the operands' elements at (r, j) (an operand
/// marked perColumn, a weight or bias of `length` elements, is read at j
/// alone), inputs n, n+1, ... the stage values.
struct RowReduction {
  int64_t rows = 0, length = 0;
  std::vector<bool> perColumn; // per operand
  std::vector<RowStage> stages;
  Formula output;
  bool outputPerElement = true;
};

/// Fills `r` for an op of these attributes on operands of these shapes
/// (a result of shape `result`); "" or why it is not a row reduction there
/// (a softmax along another dim than the last).
using RowReductionRule = std::string (*)(const AttrMap &attrs, llvm::ArrayRef<Shape> operands, const Shape &result,
                                         RowReduction &r);

/// A sum over any dims (sum_to, reduce_sum): `aligned` is the result's
/// shape aligned to the operand's rank, 1 along each summed dim; "" or why
/// not (a result of higher rank).
using SumDimsRule = std::string (*)(const AttrMap &attrs, const Shape &operand, const Shape &result, Shape &aligned);

/// Data movement as one gather over the result's row-major indices i, with
/// c_d the coordinates of i:
///   out[i] = c_window in [lo, hi) ? in[base + sum_d c_d * strides[d]] : fill
/// One operand stride per result dim: 0 where it is broadcast, permuted for
/// a transpose; a pad's window is the dim it pads (-1: no window, every
/// element read). An op that reads no operand (fill) makes every element
/// `fill`. backend/c/Layout.h renders it.
struct Gather {
  bool readsOperand = true;
  std::vector<int64_t> strides; // per result dim, in operand elements
  int64_t base = 0;             // the operand's element of result index 0
  int window = -1;
  int64_t lo = 0, hi = 0;
  double fill = 0;              // outside the window, or every element of an op without an operand
};

/// Fills `g` for an op of these attributes on operands of these shapes
/// (none for fill) and a result of shape `result`; "" or why there is no
/// such gather (an operand of another rank).
using GatherRule = std::string (*)(const AttrMap &attrs, llvm::ArrayRef<Shape> operands, const Shape &result,
                                   Gather &g);

/// The hand-written runtime kernel a library op calls: the wrapper the code
/// generator writes is found by `name`; `variant` is the one choice two ops
/// sharing a signature differ in (causal_mask fills -inf where mask_grad
/// fills 0; layer_norm_grad centres where rms_norm_grad does not).
struct LibrarySignature {
  const char *name = nullptr;
  bool variant = false;
};

/// An elementwise op whose formula is a step's own (fused_elementwise: its
/// `formula` attribute): reads it from the step's attributes into `f`; ""
/// or why they hold none.
using FormulaRule = std::string (*)(const AttrMap &attrs, Formula &f);

struct KernelDesc {
  KernelClass cls = KernelClass::None;
  /// Elementwise: the formula (null for cast, whose kernel is a rounding
  /// load and store, and fused_elementwise, whose formula is its attribute).
  const Formula *formula = nullptr;
  /// Elementwise: where every step has its own formula, the rule that reads it.
  FormulaRule formulaRule = nullptr;
  /// Elementwise: the kernel only loads its operand in one dtype and stores
  /// it in another (cast): the identity formula, rounding where it stores.
  bool convertsOnly = false;
  /// Reduction: the stages and output of its row kernel, where it has one.
  RowReductionRule rowReduction = nullptr;
  /// Reduction: which dims a sum adds up, where they need not be rows.
  SumDimsRule sumDims = nullptr;
  /// Layout: the strided gather it is, where it is one. An op that picks
  /// its pipeline stage's operand or the rank's block of its operand
  /// (OpDef.h's picksStage, picksRankBlock: stage_merge, shard_slice) reads
  /// the rank's place instead (backend/c/Layout.h).
  GatherRule gather = nullptr;
  /// Library: the runtime kernel; a reduction may have one too.
  LibrarySignature library;
  /// Why a step of this op gets no kernel of its class, where that is so
  /// for every step (an op of the library class without a runtime kernel).
  const char *none = nullptr;
};

/// The formula an elementwise kernel of one step computes.
struct KernelFormula {
  /// Null where the op has none; else the op table's (not owned) or the
  /// step's own, read by its op's FormulaRule.
  std::shared_ptr<const Formula> formula;
  std::vector<double> attrValues; // the step's values of formula->attrs()
  std::string error;              // why there is none, where the step's attributes say
};

/// The kernel formula of a step of op `kind` with attributes `attrs`: its
/// op's (KernelDesc::formula, with the step's attribute values), the one the
/// op's FormulaRule reads (fused_elementwise), or the identity for an op that
/// only converts (cast). What every backend renders an elementwise step from.
KernelFormula kernelFormulaOf(OpKind kind, const AttrMap &attrs);

} // namespace planc::ir

#endif
