//===- analysis/MeasuredTimeline.h - one step of a run's trace -----*- C++ -*-===//
//
// What the ranks of a compiled plan did in one training step, read back from
// the executable's --trace file (runtime/StepTrace.h writes it), so that
// `planc emit --emit=schedule-svg --trace run.json` can draw the measured
// timeline under the planned one.
//
// On each rank's compute stream, consecutive kernels of one section of the
// step (the same work, micro-batch and chunk) become one span, as the planned
// schedule draws one box per forward or backward of a micro-batch; a wait for
// communication is a span of its own. The communication stream's collectives,
// sends and receives are kept as they are. Times are microseconds from the
// step's first event on any rank (the ranks share a clock origin).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_ANALYSIS_MEASUREDTIMELINE_H
#define PLANC_ANALYSIS_MEASUREDTIMELINE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace planc::pipeline {

struct MeasuredSpan {
  double startUs = 0, endUs = 0;
  /// Compute stream: "forward", "backward", "weight_grad", "optimizer",
  /// "wait", or "compute" for kernels recorded without a section.
  /// Communication stream: "collective", "send" or "recv".
  std::string kind;
  int microBatch = -1; // -1: once per step
  int chunk = 0;
  int kernels = 0;     // the kernel calls merged into a compute span
  std::string label;   // the section, or the communication and the plan's step it is
};

struct MeasuredRank {
  int64_t rank = 0;
  int64_t stage = 0; // its pipeline stage (set by the caller from the mesh)
  std::vector<MeasuredSpan> compute, communication;
};

struct MeasuredTimeline {
  std::string file;
  int64_t step = 0;        // the training step drawn (0-based)
  int64_t stepsTraced = 0; // the steps every rank recorded
  double durationUs = 0;   // from the step's first event to its last, over all ranks
  std::vector<MeasuredRank> ranks; // rank 0 first
};

/// The last step that every rank of `path` recorded (the first one warms
/// caches up). An unreadable file, one that is not a trace, or one whose
/// ranks are not exactly 0 .. numRanks-1 is an error naming the file.
llvm::Expected<MeasuredTimeline> readMeasuredTimeline(llvm::StringRef path, int64_t numRanks);

} // namespace planc::pipeline

#endif
