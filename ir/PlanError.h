//===- ir/PlanError.h - a pass's error that is the plan author's -*- C++ -*-===//
//
// A pass that cannot apply to the plan as written (adapters with nothing to
// adapt) returns a PlanError: a Finding (ir/IR.h) with an error's DiagID. Its
// message is the diagnostic's text, so a tool that prints an llvm::Error
// (plan-opt, a ledger's "not planned" line) prints it unchanged; the driver
// takes it out of the error and reports it at its .plan place instead
// (compiler/PlanDiagnostics.h). Failures of the compiler itself stay plain
// errors (support/Error.h).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_PLANERROR_H
#define PLANC_IR_PLANERROR_H

#include "ir/IR.h"

#include "llvm/Support/Error.h"

namespace planc::ir {

class PlanError : public llvm::ErrorInfo<PlanError> {
public:
  static char ID;
  explicit PlanError(Finding finding) : finding(std::move(finding)) {}
  const Finding &getFinding() const { return finding; }
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }

private:
  Finding finding;
};

/// The error `id` at `loc`, its %0, %1, ... filled in by `args`.
llvm::Error makePlanError(DiagID id, Location loc, std::vector<std::string> args);

} // namespace planc::ir

#endif
