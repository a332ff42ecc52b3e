//===- compiler/PlanDiagnostics.h - passes' findings at the .plan lines -*- C++ -*-===//
//
// Passes know a plan only as IR, whose ops keep the .plan place they were
// lowered from (ir::Location: file, line, column). Their findings
// (ir::Finding: a module's remarks, a PlanError) become diagnostics of the
// Compilation here, found again in its SourceMgr, so they print as
// `file.plan:LINE:COL: error: ...` with the caret, as JSON lines, under
// -Werror and for --verify like the frontend's own.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_PLANDIAGNOSTICS_H
#define PLANC_COMPILER_PLANDIAGNOSTICS_H

#include "frontend/Frontend.h"
#include "ir/IR.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/SMLoc.h"

namespace planc {

/// The place `loc` names in a file `sm` holds; invalid when it is unknown or
/// names a file that was not loaded.
llvm::SMLoc findLocation(llvm::SourceMgr &sm, const ir::Location &loc);
/// The IR location of a place in `sm` (what lowering writes on an op).
ir::Location locationOf(const llvm::SourceMgr &sm, llvm::SMLoc loc);

/// Reports `finding` through the diagnostics of `c` (with no place when its
/// place is unknown).
void reportFinding(Compilation &c, const ir::Finding &finding);
/// Reports every remark of `m`.
void reportRemarks(Compilation &c, const ir::Module &m);
/// Reports the PlanErrors in `e` and hands back the rest: success when `e`
/// was only the plan author's errors.
llvm::Error reportPlanErrors(Compilation &c, llvm::Error e);
/// Gives the PlanErrors in `e` that name no place of their own the place `at`
/// (the setting that asked for the pass: a module-wide finding has no op).
llvm::Error placePlanErrors(const llvm::SourceMgr &sm, llvm::Error e, llvm::SMLoc at);

} // namespace planc

#endif
