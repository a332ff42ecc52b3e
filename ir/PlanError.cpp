//===- ir/PlanError.cpp - a pass's error that is the plan author's --------===//

#include "ir/PlanError.h"

#include "llvm/Support/raw_ostream.h"

using namespace planc;
using namespace planc::ir;

char PlanError::ID = 0;

std::string Finding::message() const { return formatDiagnostic(diagFormat(id), args); }

void PlanError::log(llvm::raw_ostream &os) const { os << finding.message(); }

llvm::Error ir::makePlanError(DiagID id, Location loc, std::vector<std::string> args) {
  return llvm::make_error<PlanError>(Finding{id, std::move(loc), std::move(args)});
}
