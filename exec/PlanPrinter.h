//===- exec/PlanPrinter.h - the execution plan as text ----------*- C++ -*-===//
//
// The plan in the form docs/exec.md defines and exec/PlanParser.h reads
// back: one line per buffer and per step, deterministic, never failing (also
// on a plan the verifier rejects, so a broken plan can be written out).
// Types, attributes and locations are spelt as the IR prints them.
//
// The rank form prints the header and the program of one rank only, each
// communication step with the concrete ranks it talks to (exec/Groups.h):
// its `group [r0, r1, ..]` and, for send and recv, its `peer r`.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_EXEC_PLANPRINTER_H
#define PLANC_EXEC_PLANPRINTER_H

#include "exec/ExecutionPlan.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace planc::exec {

void printPlan(const ExecutionPlan &plan, llvm::raw_ostream &os);
std::string toText(const ExecutionPlan &plan);

/// The header and the program `rank` runs, annotated with its groups and
/// peers; a rank outside the mesh (or with no program) prints the header and
/// a comment saying so.
void printRankProgram(const ExecutionPlan &plan, int64_t rank, llvm::raw_ostream &os);
std::string rankProgramText(const ExecutionPlan &plan, int64_t rank);

} // namespace planc::exec

#endif
