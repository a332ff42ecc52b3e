//===- compiler/CompileOptions.cpp - what compile() is asked and returns --===//

#include "compiler/CompileOptions.h"

#include <algorithm>

using namespace planc;

const char *planc::spelling(CompileStage stage) {
  switch (stage) {
  case CompileStage::ForwardIR: return "forward-ir";
  case CompileStage::TrainingStep: return "training-step";
  case CompileStage::Partitioned: return "partitioned";
  case CompileStage::Scheduled: return "scheduled";
  case CompileStage::MemoryPlanned: return "memory-planned";
  case CompileStage::ExecutionPlanned: return "execution-planned";
  case CompileStage::CodeGenerated: return "code-generated";
  }
  return "";
}

int64_t planc::batchRows(const PlanConfig &config, BatchScope scope) {
  const int64_t device = config.train.microBatch;
  const int64_t microBatch = device * config.parallel.size(MeshAxis::DP);
  switch (scope) {
  case BatchScope::Device: return device;
  case BatchScope::MicroBatch: return microBatch;
  case BatchScope::Step: return microBatch * std::max<int64_t>(config.parallel.microBatches, 1);
  }
  return device;
}

backend::TargetProgram CompileResult::program() const {
  backend::TargetProgram p;
  p.placed = module.get();
  p.plan = plan ? &*plan : nullptr;
  p.inference = inference ? &*inference : nullptr;
  p.settings = settings;
  return p;
}
