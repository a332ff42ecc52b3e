//===- compiler/Report.h - `planc report`: one self-contained HTML page -*- C++ -*-===//
//
// Everything planc knows about a plan on one page that needs no network:
// the summary (model, mesh, verdict, predicted step), the ledger as stacked
// bars per pipeline stage against the budget, every stage's memory over its
// allocations, the pipeline schedule as a Gantt chart, the communication per
// rank by axis and phase, where each stage's time goes, and, with the
// search (`--auto`), the memory-versus-time frontier of the candidates with
// the chosen plan marked. The charts are inline SVG; every name from the
// plan is HTML-escaped. docs/cost.md describes the page.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_REPORT_H
#define PLANC_COMPILER_REPORT_H

#include "analysis/CostModel.h"
#include "frontend/Frontend.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace planc {

struct ReportOptions {
  std::optional<uint64_t> budgetBytes;            // none: the device's memory
  const cost::Calibration *calibration = nullptr; // none: the device kind's defaults
  bool search = false;                            // run `planc auto`'s search: the frontier chart
  llvm::raw_ostream *progress = nullptr;          // the search's progress; null for silence
};

/// Writes the report of the checked plan `c`. Errors: a plan the compiler
/// cannot partition (its reason), a search that cannot profile the model.
llvm::Error writeReport(Compilation &c, const ReportOptions &options, llvm::raw_ostream &os);

} // namespace planc

#endif
