//===- compiler/PlanDiagnostics.cpp - passes' findings at the .plan lines -===//

#include "compiler/PlanDiagnostics.h"

#include "ir/PlanError.h"

#include "llvm/Support/SourceMgr.h"

using namespace planc;

llvm::SMLoc planc::findLocation(llvm::SourceMgr &sm, const ir::Location &loc) {
  if (!loc.isKnown()) return {};
  for (unsigned id = 1; id <= sm.getNumBuffers(); ++id)
    if (sm.getMemoryBuffer(id)->getBufferIdentifier() == loc.file)
      return sm.FindLocForLineAndColumn(id, loc.line, loc.column);
  return {};
}

ir::Location planc::locationOf(const llvm::SourceMgr &sm, llvm::SMLoc loc) {
  ir::Location out;
  if (!loc.isValid()) return out;
  unsigned id = sm.FindBufferContainingLoc(loc);
  if (!id) return out;
  auto [line, column] = sm.getLineAndColumn(loc, id);
  out.file = sm.getMemoryBuffer(id)->getBufferIdentifier().str();
  out.line = line;
  out.column = column;
  return out;
}

void planc::reportFinding(Compilation &c, const ir::Finding &finding) {
  DiagBuilder diag = c.getDiagnostics().report(finding.id, findLocation(c.getSourceMgr(), finding.loc));
  for (const std::string &arg : finding.args) diag << arg;
}

void planc::reportRemarks(Compilation &c, const ir::Module &m) {
  for (const ir::Finding &r : m.remarks) reportFinding(c, r);
}

llvm::Error planc::reportPlanErrors(Compilation &c, llvm::Error e) {
  return llvm::handleErrors(std::move(e), [&](const ir::PlanError &p) { reportFinding(c, p.getFinding()); });
}

llvm::Error planc::placePlanErrors(const llvm::SourceMgr &sm, llvm::Error e, llvm::SMLoc at) {
  return llvm::handleErrors(std::move(e), [&](const ir::PlanError &p) -> llvm::Error {
    ir::Finding placed = p.getFinding();
    if (!placed.loc.isKnown()) placed.loc = locationOf(sm, at);
    return llvm::make_error<ir::PlanError>(std::move(placed));
  });
}
