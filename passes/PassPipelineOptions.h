//===- passes/PassPipelineOptions.h - what every pass is told -*- C++ -*-===//
//
// The settings of a whole pipeline of passes: each pass's factory takes the
// part it reads (passes/Passes.h). Filled by the driver from a plan
// (compiler/TrainOptions.h) or key by key from text (passes/PassOptionTable.h).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_PASSES_PASSPIPELINEOPTIONS_H
#define PLANC_PASSES_PASSPIPELINEOPTIONS_H

#include "passes/PartitionOptions.h"
#include "passes/TrainingOptions.h"

namespace planc {

struct PassPipelineOptions {
  TrainingOptions training;
  PartitionOptions partition;
};

} // namespace planc

#endif
