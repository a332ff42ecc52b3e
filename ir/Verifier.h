//===- ir/Verifier.h - the invariants every module keeps --------*- C++ -*-===//
//
// Checks a module against the rules of docs/ir.md ("Verifier"): SSA (every
// value defined once, operands defined above their use, results pointing
// back at their op), operand and result counts from ir/Ops.def, result shapes
// and dtypes equal to what the op's OpDef computes, shardings legal for the
// mesh, outputs defined. Run after building or parsing a module and after
// every pass; a failure after a pass is a compiler bug.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_VERIFIER_H
#define PLANC_IR_VERIFIER_H

#include "ir/IR.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace planc::ir {

/// One broken rule: the .plan location of the op or value at fault (unknown
/// for values without one) and a message naming the values involved.
struct VerifierProblem {
  Location loc;
  std::string message;
  /// `file:line:col: error: message`, or `error: message` without a location.
  std::string render() const;
};

/// Every problem of `m`, in module order; empty when it verifies.
std::vector<VerifierProblem> findProblems(const Module &m);

/// Success, or an error listing the problems one per line (the first 20,
/// then how many more).
llvm::Error verify(const Module &m);

} // namespace planc::ir

#endif
