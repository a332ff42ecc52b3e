//===- ir/OpDef.h - everything about one op kind, in one place --*- C++ -*-===//
//
// One OpDef per OpKind (the STYLE rule "one source of truth per op"): how its
// attributes and operand types are checked and its result types computed, its
// reference kernel for the interpreter, its gradient rule for autodiff, and
// its FLOP count for the cost model, the facts passes need about it
// (traits, sharding dim labels, operand roles, wire bytes), and its kernel
// description for the code generators (ir/KernelDesc.h). Passes ask this
// table instead of switching on op kinds. The definitions live in
// ir/ops/*.cpp, by family; docs/ir.md lists the fields.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_OPDEF_H
#define PLANC_IR_OPDEF_H

#include "ir/Builder.h"
#include "ir/DimLabels.h"
#include "ir/IR.h"
#include "ir/KernelDesc.h"
#include "ir/Tensor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace planc::ir {

class EvalContext;

/// Yes-or-no facts about an op kind, a bit each (OpDef::traits).
enum OpTrait : uint32_t {
  /// Runs even when nothing reads its results: every rank of its group takes
  /// part in the exchange (collectives, send, recv).
  kSideEffect = 1u << 0,
  /// An exchange among the ranks of one mesh axis (all_reduce, ...).
  kCollective = 1u << 1,
  /// A message to or from one peer rank (send, recv).
  kPointToPoint = 1u << 2,
  /// Keeps this rank's block of a whole operand; nothing moves (shard_slice).
  kRankBlock = 1u << 3,
  /// Each rank takes the operand of its own pipeline stage (stage_merge).
  kStageChoice = 1u << 4,
  /// Result element i reads element i of each operand (after broadcasting),
  /// nothing else: neither its position nor other elements.
  kElementwise = 1u << 5,
  /// Maps zeros to zeros element by element and reduces nothing, so it may
  /// run on a zero-padded block (ir/LocalBlocks.h) keeping the padding 0.
  kKeepsPaddingZero = 1u << 6,
  /// Its results are the next values of some operands (OpDef::inPlaceOf).
  kInPlace = 1u << 7,
  /// The result is the operand's elements in their order, under another shape.
  kView = 1u << 8,
  /// A collective that sums (or maxes) the ranks' partial values
  /// (all_reduce, reduce_scatter).
  kReduces = 1u << 9,
};

/// What an operand of an optimizer update is (OpDef::operandRoles).
enum class OperandRole : uint8_t {
  Data,           // an op that is not an update: every operand
  Parameter,      // the weight updated
  Gradient,       // its gradient
  State,          // optimizer state with the parameter's shape (ZeRO splits it as the parameter)
  BlockState,     // state kept per quantisation block (ZeRO leaves it whole)
  HyperParameter, // a scalar: the learning rate, the step count
};

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
  /// The part of `flops` that repeats work of the forward pass (flash
  /// attention's backward computes the scores again): hardware FLOPs, not
  /// the model's, as a recomputed op's are. Null: none.
  double (*recomputedFlops)(const Op &op) = nullptr;

  /// OpTrait bits.
  uint32_t traits = 0;
  /// The sharding rule: which dims of operands and results are one dim (an
  /// einsum label each), which stay whole, which are summed away, in which
  /// operands the op is linear (ir/DimLabels.h). Null, or nullopt from it,
  /// for ops the partitioner handles itself (reshape, the loss, global_norm,
  /// the updates) or keeps whole.
  std::optional<DimLabels> (*dimLabels)(const Op &op) = nullptr;
  /// Per operand (the last repeated for a variadic op): its role in an
  /// optimizer update; empty for every other op (all Data).
  std::vector<OperandRole> operandRoles;
  /// Per result of an in-place op: the operand whose next value it is, or -1.
  std::vector<int> inPlaceOf;
  /// The attribute holding the result's whole shape ("shape" of reshape,
  /// broadcast_to, fill, recv), which is localized on each rank; or null.
  const char *shapeAttr = nullptr;
  /// The attribute holding the size of the result's first dim (scatter_add's
  /// "rows"), localized likewise; or null.
  const char *rowsAttr = nullptr;
  /// Bytes one rank sends to complete the op among `groupSize` ranks, for a
  /// message of `messageBytes` (ring formulas; analysis/CommSummary.h).
  /// Null for ops that send nothing (recv is counted at its sender).
  double (*wireBytes)(int64_t groupSize, double messageBytes) = nullptr;
  /// What a code generator renders for it: kernel class, formula, row
  /// reduction, library signature (ir/KernelDesc.h).
  KernelDesc kernel;

  bool has(OpTrait t) const { return (traits & t) != 0; }
  /// The role of operand `i` (Data for ops without roles).
  OperandRole roleOf(size_t i) const;
};

const OpDef &opDef(OpKind kind);

/// layernorm's and rmsnorm's `eps` where the op has none (their reference
/// kernels and the runtime kernels the code generators call alike).
constexpr double kNormDefaultEps = 1e-5;

/// One predicate per fact, answered from the table.
bool hasSideEffect(OpKind kind);
bool isCollective(OpKind kind);
bool isPointToPoint(OpKind kind);
bool isReducingCollective(OpKind kind);
/// Collectives and point-to-point messages: data moves between ranks.
bool exchangesData(OpKind kind);
bool picksRankBlock(OpKind kind);
bool picksStage(OpKind kind);
bool isElementwise(OpKind kind);
bool keepsPaddingZero(OpKind kind);
bool isInPlace(OpKind kind);
bool isView(OpKind kind);
/// The operands of `op` with `role` (an update's states, say).
std::vector<Value *> operandsWithRole(const Op &op, OperandRole role);
/// State of either kind (State or BlockState).
inline bool isStateRole(OperandRole r) { return r == OperandRole::State || r == OperandRole::BlockState; }

/// Runs `infer` for an op already in a module (used by the verifier and by
/// Module builders that want the result types computed).
std::string inferResultTypes(OpKind kind, llvm::ArrayRef<Value *> operands, const AttrMap &attrs,
                             std::vector<TensorType> &results);

/// Bytes an op reads and writes (operands plus results), for the cost model.
double opBytes(const Op &op);

} // namespace planc::ir

#endif
