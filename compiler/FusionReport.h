//===- compiler/FusionReport.h - what fusion does to a plan, and why not -*- C++ -*-===//
//
// `planc emit --emit=fusion`: the plan's fusion policy, every group the
// fuse-attention pass fuses (or, under `fusion = none`, would fuse) with its
// ops, their places, q, k and v, and the memory traffic it saves, and each
// attention left alone with its reason. The groups are found on the forward
// graph as the pass sees it: lowered, dead values removed, adapters added.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_FUSIONREPORT_H
#define PLANC_COMPILER_FUSIONREPORT_H

#include "frontend/Frontend.h"
#include "passes/PassManager.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace planc {

/// Prints the fusion report of the checked plan in `c`.
llvm::Error printFusionReport(Compilation &c, const PassManagerOptions &pmOptions, llvm::raw_ostream &os);

} // namespace planc

#endif
