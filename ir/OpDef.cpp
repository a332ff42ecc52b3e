//===- ir/OpDef.cpp - the op table ----------------------------------------===//
//
// The table is an array indexed by OpKind, filled once by each family's
// registration function (ir/ops/*.cpp). Building it checks that every op of
// Ops.def has a shape rule, a kernel and a FLOP count, and that its operand
// roles and in-place pairs fit its operand and result counts, and that it
// declares a kernel class (ir/KernelDesc.h), so a new op
// kind without them fails at the first use of the table, not deep inside a
// pass.
//
//===----------------------------------------------------------------------===//

#include "ir/OpDef.h"
#include "ir/ops/Formula.h"
#include "ir/ops/OpSupport.h"
#include "support/Plural.h"

#include "llvm/Support/ErrorHandling.h"

#include <array>
#include <cassert>

using namespace planc;
using namespace planc::ir;

namespace {

using Table = std::array<OpDef, size_t(OpKind::NumOps)>;

Table buildTable() {
  Table table;
  registerElementwiseOps(table.data());
  registerActivationGradOps(table.data());
  registerMatMulOps(table.data());
  registerReduceOps(table.data());
  registerNormOps(table.data());
  registerAttentionOps(table.data());
  registerFlashAttentionOps(table.data());
  registerFusedElementwiseOps(table.data());
  registerShapeOps(table.data());
  registerEmbeddingOps(table.data());
  registerLossOps(table.data());
  registerOptimizerOps(table.data());
  registerAdam8bitOps(table.data());
  registerCollectiveOps(table.data());
  registerPrecisionOps(table.data());
  for (size_t i = 0; i < table.size(); ++i) {
    OpDef &def = table[i];
    if (!def.infer || !def.eval || !def.flops)
      llvm::report_fatal_error(llvm::Twine("op '") + spelling(OpKind(i)) +
                               "' lacks a shape rule, a kernel or a FLOP count in ir/ops/");
    def.kind = OpKind(i);
    if (def.kernel.cls == KernelClass::None)
      llvm::report_fatal_error(llvm::Twine("op '") + spelling(OpKind(i)) + "' declares no kernel class in ir/ops/");
    def.kernel.formula = def.kernel.cls == KernelClass::Elementwise ? formulaOf(def.kind) : nullptr;
    const int operands = operandCount(def.kind);
    const bool rolesFit = def.operandRoles.empty() || (operands < 0 ? !def.operandRoles.empty()
                                                                    : def.operandRoles.size() == size_t(operands));
    const bool inPlaceFits = def.has(kInPlace) ? def.inPlaceOf.size() == resultCount(def.kind) : def.inPlaceOf.empty();
    if (!rolesFit || !inPlaceFits)
      llvm::report_fatal_error(llvm::Twine("op '") + spelling(OpKind(i)) +
                               "' has operand roles or in-place pairs that do not fit its operands and results");
  }
  return table;
}

} // namespace

const OpDef &ir::opDef(OpKind kind) {
  static const Table table = buildTable();
  assert(kind < OpKind::NumOps && "not an op kind");
  return table[size_t(kind)];
}

const char *ir::spelling(KernelClass c) {
  switch (c) {
  case KernelClass::None: return "none";
  case KernelClass::Communication: return "communication";
  case KernelClass::Elementwise: return "elementwise";
  case KernelClass::Gemm: return "gemm";
  case KernelClass::Layout: return "layout";
  case KernelClass::Reduction: return "reduction";
  case KernelClass::Library: return "library";
  }
  return "";
}

OperandRole OpDef::roleOf(size_t i) const {
  if (operandRoles.empty()) return OperandRole::Data;
  return i < operandRoles.size() ? operandRoles[i] : operandRoles.back();
}

bool ir::hasSideEffect(OpKind k) { return opDef(k).has(kSideEffect); }
bool ir::isCollective(OpKind k) { return opDef(k).has(kCollective); }
bool ir::isPointToPoint(OpKind k) { return opDef(k).has(kPointToPoint); }
bool ir::isReducingCollective(OpKind k) { return opDef(k).has(kReduces); }
bool ir::exchangesData(OpKind k) { return opDef(k).has(OpTrait(kCollective | kPointToPoint)); }
bool ir::picksRankBlock(OpKind k) { return opDef(k).has(kRankBlock); }
bool ir::picksStage(OpKind k) { return opDef(k).has(kStageChoice); }
bool ir::isElementwise(OpKind k) { return opDef(k).has(kElementwise); }
bool ir::keepsPaddingZero(OpKind k) { return opDef(k).has(kKeepsPaddingZero); }
bool ir::isInPlace(OpKind k) { return opDef(k).has(kInPlace); }
bool ir::isView(OpKind k) { return opDef(k).has(kView); }

bool ir::isCommunication(OpKind k) { return exchangesData(k) || picksRankBlock(k); }

bool ir::isOptimizerUpdate(OpKind k) {
  const OpDef &def = opDef(k);
  return !def.operandRoles.empty() && def.roleOf(0) == OperandRole::Parameter;
}

std::vector<Value *> ir::operandsWithRole(const Op &op, OperandRole role) {
  const OpDef &def = opDef(op.kind);
  std::vector<Value *> found;
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (def.roleOf(i) == role) found.push_back(op.operands[i]);
  return found;
}

std::string ir::inferResultTypes(OpKind kind, llvm::ArrayRef<Value *> operands, const AttrMap &attrs,
                                 std::vector<TensorType> &results) {
  if (kind >= OpKind::NumOps) return "not an op kind";
  int expected = operandCount(kind);
  if (expected >= 0 && operands.size() != size_t(expected))
    return "expects " + counted(expected, "operand") + ", got " + std::to_string(operands.size());
  std::vector<TensorType> types;
  types.reserve(operands.size());
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i]) return "operand " + std::to_string(i) + " is null";
    types.push_back(operands[i]->type);
  }
  results.clear();
  return opDef(kind).infer(types, attrs, results);
}

double ir::opBytes(const Op &op) {
  double bytes = 0;
  for (const Value *v : op.operands) bytes += double(v->type.bytes());
  for (const Value *v : op.results) bytes += double(v->type.bytes());
  return bytes;
}

KernelFormula ir::kernelFormulaOf(OpKind kind, const AttrMap &attrs) {
  KernelFormula k;
  if (kind >= OpKind::NumOps) {
    k.error = "not an op kind";
    return k;
  }
  const KernelDesc &desc = opDef(kind).kernel;
  if (desc.convertsOnly) {
    static const Formula identity = [] {
      FormulaBuilder b;
      return b.done(b.input(0));
    }();
    k.formula = std::shared_ptr<const Formula>(&identity, [](const Formula *) {}); // static, not owned
    return k;
  }
  if (desc.formulaRule) {
    auto own = std::make_shared<Formula>();
    if (std::string e = desc.formulaRule(attrs, *own); !e.empty()) {
      k.error = e;
      return k;
    }
    k.formula = own;
  } else if (desc.formula) {
    k.formula = std::shared_ptr<const Formula>(desc.formula, [](const Formula *) {}); // the op table's, not owned
  } else {
    k.error = "no formula";
    return k;
  }
  k.attrValues = attrValues(*k.formula, attrs);
  return k;
}
