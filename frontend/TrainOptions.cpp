//===- frontend/TrainOptions.cpp - a plan's train settings as pass options -===//

#include "frontend/TrainOptions.h"
#include "ir/Printer.h"
#include "passes/OptimizerOptions.h"

using namespace planc;
namespace keys = planc::optimizer_keys;

PassOptions planc::passOptionsFromConfig(const PlanConfig &config) {
  const TrainConfig &t = config.train;
  const OptimizerConfig &o = t.optimizer;
  static const char *const kinds[] = {"sgd", "adam", "adamw", "adam8bit"};  // OptimizerKind order
  static const char *const decays[] = {"constant", "linear", "cosine"};     // DecayKind order
  auto number = [](double x) { return ir::formatFloat(x); };
  PassOptions p;
  p.values = {
      {keys::kOptimizer, kinds[unsigned(o.kind)]},
      {keys::kLr, number(o.lr)},
      {keys::kBeta1, number(o.beta1)},
      {keys::kBeta2, number(o.beta2)},
      {keys::kEps, number(o.eps)},
      {keys::kWeightDecay, number(o.weightDecay)},
      {keys::kMomentum, number(o.momentum)},
      {keys::kNesterov, o.nesterov ? "true" : "false"},
      {keys::kWarmup, std::to_string(o.warmup)},
      {keys::kDecay, decays[unsigned(o.decay)]},
      {keys::kMinLr, number(o.minLr)},
      {keys::kTotalSteps, std::to_string(t.steps)},
      {keys::kClipGradNorm, number(t.clipGradNorm)},
      {keys::kBlockSize, std::to_string(o.blockSize)},
  };
  return p;
}
