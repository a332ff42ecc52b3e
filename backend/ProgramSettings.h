//===- backend/ProgramSettings.h - a program's settings besides its plan -*- C++ -*-===//
//
// The plan's training settings a target's program carries (its steps, data,
// checkpoints, the name map, what MFU and the slow-step warning compare
// with): compiler/ fills them from the checked plan, once, for any target.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_PROGRAMSETTINGS_H
#define PLANC_BACKEND_PROGRAMSETTINGS_H

#include "runtime/Data.h"
#include "runtime/NameMap.h"

#include <cstdint>
#include <string>
#include <vector>

namespace planc::backend {

/// What a program needs of the plan besides its execution plan.
struct ProgramSettings {
  std::string source;              // the .plan file, for the banner and --help
  int64_t steps = 1;               // train.steps
  uint64_t seed = 0;               // train.seed
  runtime::DataSpec data;          // train.data
  runtime::BatchShape batch;       // the whole step's batch (BatchShape.h of the interpreter)
  int64_t checkpointEvery = 0;
  std::string checkpointDir = "ckpt";
  int64_t checkpointKeep = 0;
  double flopsPerStep = 0;         // the model's, for MFU
  double peakFlops = 0;            // the device's for the compute dtype; 0: unknown
  double predictedStepSeconds = 0; // the cost model's step on the plan's CPU; 0: none (another device)
  std::string predictionBasis;     // its calibration ("defaults for CPUs")
  std::vector<uint64_t> ledgerBytes; // the memory plan's arena of each stage (what `planc check` prints)
  /// The name map the plan follows (train.names), resolved against the
  /// model: --init-from and the checkpoints' index use it.
  runtime::NameMap names;
};

} // namespace planc::backend

#endif
