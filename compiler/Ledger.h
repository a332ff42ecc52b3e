//===- compiler/Ledger.h - the memory ledger of `planc check` ---*- C++ -*-===//
//
// The per-rank memory of a plan, from its partitioned step and schedule
// (analysis/MemoryPlan.h): one row per pipeline stage (the ranks of a stage run
// the same program) with parameters, gradients, optimizer state,
// activations, temporaries and communication buffers at the peak, the peak
// and the arena the planner placed, against the device's memory; then where
// the peak rank peaks.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_LEDGER_H
#define PLANC_COMPILER_LEDGER_H

#include "frontend/Frontend.h"
#include "analysis/MemoryPlan.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace planc {

/// Partitions the checked plan of `c` and plans its memory.
/// verifyEach: verify the IR after every pass (PassManagerOptions::verifyEach).
llvm::Expected<memory::MemoryPlan> planMemoryOf(Compilation &c, bool verifyEach = true);

/// The ledger as a table against `deviceBytes` (0: no device memory known),
/// then the peak stage's live bytes over its steps in 16 equal slices.
/// `budgetName` names what the bytes are ("device", "budget").
void printLedger(const memory::MemoryPlan &plan, uint64_t deviceBytes, llvm::raw_ostream &os,
                 llvm::StringRef budgetName = "device");

/// The same as one JSON object (docs/memory.md has the schema).
void printLedgerJson(const memory::MemoryPlan &plan, uint64_t deviceBytes, llvm::raw_ostream &os);
/// That object as text, for callers that add keys to it.
std::string ledgerJsonText(const memory::MemoryPlan &plan, uint64_t deviceBytes);

} // namespace planc

#endif
