//===- ir/OpDef.cpp - the op table ----------------------------------------===//
//
// The table is an array indexed by OpKind, filled once by each family's
// registration function (ir/ops/*.cpp). Building it checks that every op of
// Ops.def has a shape rule, a kernel and a FLOP count, so a new op kind
// without them fails at the first use of the table, not deep inside a pass.
//
//===----------------------------------------------------------------------===//

#include "ir/OpDef.h"
#include "ir/ops/OpSupport.h"

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
  }
  return table;
}

} // namespace

const OpDef &ir::opDef(OpKind kind) {
  static const Table table = buildTable();
  assert(kind < OpKind::NumOps && "not an op kind");
  return table[size_t(kind)];
}

std::string ir::inferResultTypes(OpKind kind, llvm::ArrayRef<Value *> operands, const AttrMap &attrs,
                                 std::vector<TensorType> &results) {
  if (kind >= OpKind::NumOps) return "not an op kind";
  int expected = operandCount(kind);
  if (expected >= 0 && operands.size() != size_t(expected))
    return "expects " + std::to_string(expected) + " operand" + (expected == 1 ? "" : "s") + ", got " +
           std::to_string(operands.size());
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
