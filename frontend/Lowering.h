//===- frontend/Lowering.h - the checked model as IR -----------*- C++ -*-===//
//
// Lowering needs only what Sema read: the parsed program, the checked
// settings and the diagnostics (frontend/Frontend.h has the same for a
// whole Compilation).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_LOWERING_H
#define PLANC_FRONTEND_LOWERING_H

#include "frontend/Config.h"
#include "frontend/Program.h"
#include "ir/IR.h"
#include "support/Diagnostics.h"

#include <cstdint>
#include <memory>

namespace planc {

/// The checked model as an IR module (forward graph, parameters, inputs and
/// the `loss` output), with `batch` for the model's `batch` dim. Null when
/// the program has no model, `diags` already has errors, batch < 1 or
/// lowering reports an error.
std::unique_ptr<ir::Module> lowerToIR(const Program &program, const PlanConfig &config, DiagnosticEngine &diags,
                                      int64_t batch);

} // namespace planc

#endif
