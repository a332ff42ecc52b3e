//===- ir/ops/OpSupport.h - what the op families share ----------*- C++ -*-===//
//
// Private to ir/ops/ and ir/OpDef.cpp: the registration functions the table
// in OpDef.cpp is filled from, the operand checks of the type rules, a
// row-major index walker for broadcast reads, and what the row reductions'
// rules share. The attribute reader (ir/AttrReader.h) and the shape
// arithmetic (ir/ShapeMath.h) are public: the code generators use them too.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_OPS_OPSUPPORT_H
#define PLANC_IR_OPS_OPSUPPORT_H

#include "ir/AttrReader.h"
#include "ir/Interpreter.h"
#include "ir/OpDef.h"
#include "ir/ShapeMath.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace planc::ir {

// One per family file; each fills the entries of its op kinds.
void registerElementwiseOps(OpDef *table);
void registerActivationGradOps(OpDef *table);
void registerMatMulOps(OpDef *table);
void registerReduceOps(OpDef *table);
void registerNormOps(OpDef *table);
void registerAttentionOps(OpDef *table);
void registerFlashAttentionOps(OpDef *table);
void registerFusedElementwiseOps(OpDef *table);
void registerShapeOps(OpDef *table);
void registerEmbeddingOps(OpDef *table);
void registerLossOps(OpDef *table);
void registerOptimizerOps(OpDef *table);
void registerAdam8bitOps(OpDef *table);
void registerCollectiveOps(OpDef *table);
void registerPrecisionOps(OpDef *table);

using InferFn = decltype(OpDef::infer);
using EvalFn = decltype(OpDef::eval);
using GradFn = decltype(OpDef::grad);
using FlopsFn = decltype(OpDef::flops);
using DimLabelsFn = decltype(OpDef::dimLabels);
using WireBytesFn = decltype(OpDef::wireBytes);

/// Fills the table entry of `kind` (grad is null for ops without a gradient).
inline void define(OpDef *table, OpKind kind, InferFn infer, EvalFn eval, GradFn grad, FlopsFn flops) {
  OpDef &d = table[size_t(kind)];
  d.infer = infer;
  d.eval = eval;
  d.grad = grad;
  d.flops = flops;
}

/// Declares the facts of `kind`: its OpTrait bits and its sharding rule
/// (null for ops the partitioner handles itself or keeps whole).
inline void declare(OpDef *table, OpKind kind, uint32_t traits, DimLabelsFn labels) {
  OpDef &d = table[size_t(kind)];
  d.traits = traits;
  d.dimLabels = labels;
}

/// Declares the kernel description of `kind`: its class, and for a library
/// op (or a reduction with a runtime kernel) the runtime kernel's signature.
inline void kernel(OpDef *table, OpKind kind, KernelClass cls, LibrarySignature library = {}) {
  OpDef &d = table[size_t(kind)];
  d.kernel.cls = cls;
  d.kernel.library = library;
}
/// An elementwise op whose every step has its own formula, read by `rule`.
inline void formulaKernel(OpDef *table, OpKind kind, FormulaRule rule) {
  OpDef &d = table[size_t(kind)];
  d.kernel.cls = KernelClass::Elementwise;
  d.kernel.formulaRule = rule;
}
/// An elementwise op whose kernel loads in one dtype and stores in another.
inline void conversionKernel(OpDef *table, OpKind kind) {
  OpDef &d = table[size_t(kind)];
  d.kernel.cls = KernelClass::Elementwise;
  d.kernel.convertsOnly = true;
}
/// A reduction rendered as a row kernel by `rule`.
inline void rowKernel(OpDef *table, OpKind kind, RowReductionRule rule) {
  OpDef &d = table[size_t(kind)];
  d.kernel.cls = KernelClass::Reduction;
  d.kernel.rowReduction = rule;
}
/// Data movement rendered as one strided gather, described by `rule`.
inline void gatherKernel(OpDef *table, OpKind kind, GatherRule rule) {
  OpDef &d = table[size_t(kind)];
  d.kernel.cls = KernelClass::Layout;
  d.kernel.gather = rule;
}
/// An op of class `cls` that has no kernel yet, and why.
inline void noKernel(OpDef *table, OpKind kind, KernelClass cls, const char *why) {
  OpDef &d = table[size_t(kind)];
  d.kernel.cls = cls;
  d.kernel.none = why;
}

/// The table entry of `kind`, for the facts only some ops have.
inline OpDef &entry(OpDef *table, OpKind kind) { return table[size_t(kind)]; }

/// Dropout's Philox key: its `seed` and `stream` attributes mixed with the
/// run's draw seed (ir/ops/Attention.cpp says how).
uint64_t dropoutKey(const EvalContext &ctx, const AttrMap &attrs);
/// The Philox counter of each element of a dropout mask over a value of type
/// `t` (row-major): the element's index in the global value, and for one
/// micro-batch of a batch the pipeline cut ({batch_split} in `attrs`) its
/// index in the whole batch's mask. Dropout and fused attention's dropout
/// draw with these, so both draw the same mask.
std::vector<int64_t> dropoutCounters(const EvalContext &ctx, const AttrMap &attrs, const TensorType &t);

/// "" if there are `n` operands, else the message.
std::string checkArity(llvm::ArrayRef<TensorType> operands, size_t n);
/// "" if operand `i` has a floating-point dtype, else the message.
std::string checkFloat(llvm::ArrayRef<TensorType> operands, size_t i);
/// "" if operands `i` and `j` have the same dtype, else the message.
std::string checkSameDType(llvm::ArrayRef<TensorType> operands, size_t i, size_t j);

/// The row reductions' rules (KernelDesc::rowReduction) share these: the
/// rows of operand 0's last dim in `r` (no operand per column yet), or "no
/// row to reduce"; whether the op's `dim` is the last of `rank` (or
/// absent); a float attribute, or `otherwise` where absent or not a number.
std::string rowsOfLastDim(llvm::ArrayRef<Shape> operands, RowReduction &r);
bool alongLastDim(const AttrMap &attrs, size_t rank);
double floatOr(const AttrMap &attrs, const char *name, double otherwise);

/// Walks every multi-index of `shape` in row-major order, keeping for each of
/// several operands its element offset (from per-operand strides over the
/// same dims). Broadcasting, transposing and reducing reads all become a
/// choice of strides.
class IndexWalker {
public:
  IndexWalker(Shape shape, std::vector<std::vector<int64_t>> strides);
  /// Offsets of the current index, one per stride vector.
  int64_t offset(size_t operand) const { return offsets[operand]; }
  /// Advances to the next index; false once every index was visited.
  bool next();
  int64_t count() const { return total; }

private:
  Shape shape;
  std::vector<std::vector<int64_t>> strides;
  std::vector<int64_t> index, offsets;
  int64_t total;
};

/// Result element type of a loss or a norm-like scalar: f64 stays f64 (the
/// gradient checks run in f64), everything narrower accumulates into f32.
inline DType accumulatorDType(DType t) { return t == DType::F64 ? DType::F64 : DType::F32; }

/// The FLOP count of pure data movement and of ops the cost model times
/// elsewhere (collectives).
inline double noFlops(const Op &) { return 0; }
inline double numel(const TensorType &t) { return double(t.numel()); }
inline double resultNumel(const Op &op, unsigned i = 0) { return double(op.results[i]->type.numel()); }
inline double operandNumel(const Op &op, unsigned i = 0) { return double(op.operands[i]->type.numel()); }

} // namespace planc::ir

#endif
