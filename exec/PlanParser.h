//===- exec/PlanParser.h - reading the execution plan's text ----*- C++ -*-===//
//
// Reads the text exec/PlanPrinter.h writes (docs/exec.md) back into a plan:
// parse(print(p)) == p. The rank form (printRankProgram) reads to a plan
// holding that one program; its `group` and `peer` annotations must be what
// the rules of exec/Groups.h give for its rank, or it is an error.
//
// The parser checks the syntax and the words; whether the plan is sound
// (buffers in range, events recorded, no deadlock) is exec/PlanVerifier.h's
// job, so a broken plan can be read and every problem reported. Errors are
// ir::IRParseError diagnostics, `file:line:col: error: expected ...` at the
// offending token; the parser never crashes, whatever the bytes.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_EXEC_PLANPARSER_H
#define PLANC_EXEC_PLANPARSER_H

#include "exec/ExecutionPlan.h"

#include "llvm/Support/Error.h"

namespace planc::exec {

/// Parses `text`, named `fileName` in diagnostics.
llvm::Expected<ExecutionPlan> parsePlan(llvm::StringRef text, llvm::StringRef fileName);

/// "" when `plan` printed and parsed back is equal to it and prints the same
/// text; otherwise what went wrong (the parse error, or the first line that
/// differs), so a field the text form drops is caught on real plans.
std::string roundTripProblem(const ExecutionPlan &plan);

} // namespace planc::exec

#endif
