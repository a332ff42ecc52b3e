//===- compiler/StepTime.h - the predicted step time of a plan -----*- C++ -*-===//
//
// The cost model (analysis/CostModel.h) applied to a compiled plan: the
// machine from the cluster block, the calibration of its device (the
// defaults of its kind, or a file `planc calibrate` wrote), and the text and
// JSON `planc check` prints (docs/cost.md).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_STEPTIME_H
#define PLANC_COMPILER_STEPTIME_H

#include "analysis/CostModel.h"
#include "compiler/CompileOptions.h"
#include "frontend/Frontend.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <string>

namespace planc {

/// The calibration a device starts from: its kind's defaults (GPUs: a GEMM
/// efficiency curve of cuBLAS on large-memory data-centre GPUs; CPUs: of
/// OpenBLAS), documented in docs/cost.md.
cost::Calibration defaultCalibration(const DeviceSpec &device);

/// A calibration file (JSON, docs/cost.md); errors name the file and the field.
llvm::Expected<cost::Calibration> readCalibration(llvm::StringRef path);
/// Writes `cal` as such a file (temporary file and rename).
llvm::Error writeCalibration(const cost::Calibration &cal, const std::string &device, llvm::StringRef path);

/// The cluster block as the cost model sees it, with `calibration` (none:
/// the device's defaults).
cost::Hardware hardwareOf(const ClusterConfig &cluster, const cost::Calibration *calibration = nullptr);

/// Tokens one step trains: global_batch times the first input's per-sample
/// elements (its sequence).
double tokensPerStep(const Compilation &c);

/// The step time of a compiled plan (stopped at Scheduled or later).
llvm::Expected<cost::StepCost> estimateStepTime(const Compilation &c, const CompileResult &compiled,
                                                const cost::Calibration *calibration = nullptr);

/// "time: 4.21 s per step (predicted), 31,132 tokens/s, MFU 41.3%, HFU 52.0%"
/// and a line of where the time goes.
void printStepTime(const cost::StepCost &cost, const cost::Hardware &hw, llvm::raw_ostream &os);

/// The "time" object of `planc check --json` (docs/memory-check.schema.json).
nlohmann::json stepTimeJson(const cost::StepCost &cost, const cost::Hardware &hw);

/// "4.21 s", "312 ms", "85 us"
std::string formatSeconds(double s);

} // namespace planc

#endif
