//===- runtime/StepLog.cpp - formatting the per-step line ----------------===//

#include "runtime/StepLog.h"
#include "runtime/Plural.h"

#include <cstdio>

std::string planc::runtime::formatStepLine(const StepRecord &r) {
  char buf[64];
  std::string line = "step " + std::to_string(r.step);
  std::snprintf(buf, sizeof buf, "  loss %.6f", r.loss);
  line += buf;
  if (r.lr) {
    std::snprintf(buf, sizeof buf, "  lr %.4e", *r.lr);
    line += buf;
  }
  std::snprintf(buf, sizeof buf, "  %.2f s", r.seconds);
  line += buf;
  return line + "  " + counted(r.tokens, "token");
}
