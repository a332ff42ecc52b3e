//===- passes/Passes.cpp - the registry of passes -------------------------===//
//
// Every pass is listed here once, by name, with its one-line description and
// its factory; defaultTrainingPipeline() is the compiler's table of contents.
//
//===----------------------------------------------------------------------===//

#include "passes/Pass.h"
#include "passes/Passes.h"
#include "passes/PassManager.h"

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

llvm::Error planc::addDefaultTrainingPipeline(PassManager &pm) {
  // Differentiate first, before anything lowers or splits the graph (Glow's
  // order): every later pass then transforms the whole training step at once.
  if (llvm::Error e = pm.add("autodiff")) return e;
  // The update is IR too, so forward, backward and update are one module that
  // the partitioner, the memory planner and the backends see whole.
  if (llvm::Error e = pm.add("optimizer")) return e;
  // Gradient rules leave values nothing reads (gradients of inputs); drop them.
  return pm.add("canonicalize");
}
