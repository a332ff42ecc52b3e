//===- compiler/Ledger.cpp - the memory ledger of `planc check` -----------===//

#include "compiler/Ledger.h"
#include "compiler/Pipeline.h"
#include "compiler/TrainOptions.h"
#include "support/Units.h"

#include <algorithm>

#include "llvm/Support/FormatVariadic.h"

#include <nlohmann/json.hpp>

using namespace planc;
using namespace planc::memory;

llvm::Expected<MemoryPlan> planc::planMemoryOf(Compilation &c, bool verifyEach) {
  CompileOptions options;
  options.passes.verifyEach = verifyEach;
  options.stopAfter = CompileStage::MemoryPlanned;
  auto compiled = compile(c, options);
  if (!compiled) return compiled.takeError();
  return std::move(*compiled->memory);
}

static std::string rankList(const std::vector<int64_t> &ranks) {
  if (ranks.empty()) return "-";
  bool contiguous = true;
  for (size_t i = 1; i < ranks.size(); ++i) contiguous &= ranks[i] == ranks[i - 1] + 1;
  if (ranks.size() == 1) return std::to_string(ranks[0]);
  if (contiguous) return std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  return std::to_string(ranks.size()) + " ranks";
}

void planc::printLedger(const MemoryPlan &plan, uint64_t deviceBytes, llvm::raw_ostream &os,
                        llvm::StringRef budgetName) {
  os << "memory per rank (the planner's arena; GiB = 2^30 bytes)";
  if (deviceBytes) os << ", " << budgetName << " " << formatBytes(deviceBytes);
  os << ":\n";
  os << llvm::formatv("  {0,-14}", "stage (ranks)");
  for (size_t c = 0; c < kNumCategories; ++c)
    os << llvm::formatv("{0,14}", Category(c) == Category::OptimizerState ? "optimizer" : Category(c) == Category::Communication ? "comm" : spelling(Category(c)));
  os << llvm::formatv("{0,12}{1,12}{2,7}\n", "peak", "arena", "frag");
  for (const StagePlan &s : plan.stages) {
    os << llvm::formatv("  {0,-14}", "pp=" + std::to_string(s.stage) + " (" + rankList(s.ranks) + ")");
    for (size_t c = 0; c < kNumCategories; ++c) os << llvm::formatv("{0,14}", formatBytes(s.atPeak[c]));
    os << llvm::formatv("{0,12}{1,12}{2,6:P0}\n", formatBytes(s.peak), formatBytes(s.arena), s.fragmentation());
  }
  const StagePlan &peak = plan.peakStage();
  // ZeRO's accounting, for comparing with the published formulas: the
  // parameters as stored, the gradients as held, the optimizer's state.
  const CategoryBytes &ms = peak.modelStates;
  uint64_t states = ms[size_t(Category::Parameters)] + ms[size_t(Category::Gradients)] +
                    ms[size_t(Category::OptimizerState)];
  os << "  model states (pp=" << peak.stage << "): parameters " << formatBytes(ms[size_t(Category::Parameters)])
     << ", gradients " << formatBytes(ms[size_t(Category::Gradients)]) << ", optimizer state "
     << formatBytes(ms[size_t(Category::OptimizerState)]) << "; " << formatBytes(states) << "\n";
  os << "  peak: pp=" << peak.stage << " at '" << peak.peakOp << "'";
  if (!peak.peakPath.empty()) os << " in " << peak.peakPath;
  if (peak.peakMicroBatch >= 0) os << ", micro-batch " << peak.peakMicroBatch;
  os << " (" << peak.peakWork << ")";
  if (deviceBytes)
    os << "; " << formatBytes(peak.arena) << " of " << formatBytes(deviceBytes) << " ("
       << llvm::formatv("{0:P1}", double(peak.arena) / double(deviceBytes)) << ")";
  os << "\n";
  // Memory over time: the largest live total in each sixteenth of the steps.
  const std::vector<uint64_t> &t = peak.timeline;
  if (t.size() >= 16) {
    os << "  over time (pp=" << peak.stage << ", largest live bytes per sixteenth of its allocations):\n   ";
    for (size_t k = 0; k < 16; ++k) {
      uint64_t most = 0;
      for (size_t i = k * t.size() / 16; i < (k + 1) * t.size() / 16; ++i) most = std::max(most, t[i]);
      os << " " << formatBytes(most);
    }
    os << "\n";
  }
}

void planc::printLedgerJson(const MemoryPlan &plan, uint64_t deviceBytes, llvm::raw_ostream &os) {
  os << ledgerJsonText(plan, deviceBytes);
}

std::string planc::ledgerJsonText(const MemoryPlan &plan, uint64_t deviceBytes) {
  nlohmann::json j;
  j["device_bytes"] = deviceBytes;
  j["peak_stage"] = plan.peakStage().stage;
  j["stages"] = nlohmann::json::array();
  for (const StagePlan &s : plan.stages) {
    nlohmann::json st;
    st["stage"] = s.stage;
    st["ranks"] = s.ranks;
    nlohmann::json cats;
    for (size_t c = 0; c < kNumCategories; ++c) {
      std::string key = spelling(Category(c));
      std::replace(key.begin(), key.end(), ' ', '_');
      cats[key] = s.atPeak[c];
    }
    st["at_peak"] = cats;
    st["model_states"] = {{"parameters", s.modelStates[size_t(Category::Parameters)]},
                          {"gradients", s.modelStates[size_t(Category::Gradients)]},
                          {"optimizer_state", s.modelStates[size_t(Category::OptimizerState)]}};
    st["peak_bytes"] = s.peak;
    st["arena_bytes"] = s.arena;
    st["fragmentation"] = s.fragmentation();
    st["placement"] = s.bestFit ? "best_fit" : "first_fit";
    st["buffers"] = s.buffers;
    st["peak_at"] = {{"op", s.peakOp}, {"path", s.peakPath}, {"micro_batch", s.peakMicroBatch}, {"work", s.peakWork}};
    // At most 1024 points: the largest live total in each slice of the
    // allocations (a large model makes millions).
    const size_t points = std::min<size_t>(s.timeline.size(), 1024);
    std::vector<uint64_t> timeline(points, 0);
    for (size_t k = 0; k < points; ++k)
      for (size_t i = k * s.timeline.size() / points; i < (k + 1) * s.timeline.size() / points; ++i)
        timeline[k] = std::max(timeline[k], s.timeline[i]);
    st["timeline_bytes"] = timeline;
    j["stages"].push_back(st);
  }
  return j.dump(1) + "\n";
}
