//===- passes/Passes.cpp - the registry of passes -------------------------===//
//
// Every pass is listed here once, by name, with its one-line description and
// its factory. The list is in the order the default pipeline runs them.
//
//===----------------------------------------------------------------------===//

#include "passes/Pass.h"
#include "passes/Passes.h"

using namespace planc;

const std::vector<PassInfo> &planc::registeredPasses() {
  static const std::vector<PassInfo> passes = {
      {"canonicalize", "removes ops whose results nothing uses and folds identity reshapes and casts",
       [](const PassOptions &) { return createCanonicalizePass(); }},
      {"autodiff", "appends the backward graph: a gradient output for every trainable parameter",
       [](const PassOptions &) { return createAutodiffPass(); }},
      {"optimizer", "lowers gradient clipping, the learning-rate schedule and the parameter updates to IR",
       [](const PassOptions &o) { return createOptimizerLoweringPass(o); }},
  };
  return passes;
}
