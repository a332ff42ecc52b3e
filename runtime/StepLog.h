//===- runtime/StepLog.h - the line a training step logs ----------*- C++ -*-===//
//
// One line per step of `planc run`, the same whichever backend ran it:
//
//   step 0  loss 4.158883  lr 6.0000e-04  0.12 s  1024 tokens
//
// loss with six decimals, the learning rate (when the step has one) in
// scientific notation with four, the step's wall time in seconds with two,
// and the tokens the step trained on (every row of every micro-batch).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_STEPLOG_H
#define PLANC_RUNTIME_STEPLOG_H

#include <cstdint>
#include <optional>
#include <string>

namespace planc::runtime {

struct StepRecord {
  int64_t step = 0;          // 0-based
  double loss = 0;
  std::optional<double> lr;  // absent: the step has no learning-rate output
  double seconds = 0;        // wall time of the step
  int64_t tokens = 0;        // tokens the step trained on
};

/// The line, without a newline.
std::string formatStepLine(const StepRecord &record);

} // namespace planc::runtime

#endif
