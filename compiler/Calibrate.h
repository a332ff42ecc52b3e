//===- compiler/Calibrate.h - `planc calibrate`: measure this machine -*- C++ -*-===//
//
// Builds the runtime's calibration program (runtime/Calibrate.h) with the
// toolchain of `planc build`, runs it (under mpirun with several ranks, to
// measure all-reduces too), and turns what it measured into a calibration
// (analysis/CostModel.h) for the CPU device: this machine's sgemm and dgemm
// peaks and its GEMM efficiency curve against them, its copy bandwidth, a
// kernel call's cost, and with ranks the link between them (bus bandwidth
// and latency of MPI_Allreduce). docs/cost.md documents the file.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_CALIBRATE_H
#define PLANC_COMPILER_CALIBRATE_H

#include "analysis/CostModel.h"
#include "compiler/Build.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

namespace planc {

struct CalibrateOptions {
  BuildOptions build;  // the toolchain (build.output is ignored)
  int64_t ranks = 1;   // > 1: under `mpirun` with that many ranks
  std::string mpirun;  // the launcher; empty: `mpirun` on PATH
};

/// Measures this machine. `log` gets a line per phase.
llvm::Expected<cost::Calibration> calibrateThisMachine(const CalibrateOptions &options, llvm::raw_ostream &log);

/// The calibration from the program's JSON (exposed for tests). Errors name
/// what is missing.
llvm::Expected<cost::Calibration> calibrationFromMeasurements(const nlohmann::json &measured);

} // namespace planc

#endif
