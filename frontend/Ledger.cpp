//===- frontend/Ledger.cpp - the memory ledger of `planc check` -----------===//

#include "frontend/Ledger.h"
#include "frontend/PartitionedStep.h"
#include "frontend/Units.h"

#include "llvm/Support/FormatVariadic.h"

using namespace planc;
using namespace planc::memory;

llvm::Expected<MemoryPlan> planc::planMemoryOf(Compilation &c) {
  PartitionedStepOptions options;
  options.unroll = false; // the planner follows the schedule itself
  auto step = buildPartitionedStep(c, options);
  if (!step) return step.takeError();
  const ParallelConfig &par = c.getConfig().parallel;
  pipeline::ScheduleOptions so;
  so.style = par.schedule == ScheduleKind::GPipe         ? pipeline::ScheduleStyle::GPipe
             : par.schedule == ScheduleKind::Interleaved ? pipeline::ScheduleStyle::Interleaved
             : par.schedule == ScheduleKind::ZeroBubble  ? pipeline::ScheduleStyle::ZeroBubble
                                                         : pipeline::ScheduleStyle::OneFOneB;
  so.microBatches = int(std::max<int64_t>(par.microBatches, 1));
  so.virtualStages = par.schedule == ScheduleKind::Interleaved ? int(par.virtualStages) : 1;
  if (par.size(MeshAxis::PP) == 1 && so.style == pipeline::ScheduleStyle::Interleaved)
    so.style = pipeline::ScheduleStyle::OneFOneB;
  return planMemory(*step->partitioned, so);
}

static std::string rankList(const std::vector<int64_t> &ranks) {
  if (ranks.empty()) return "-";
  bool contiguous = true;
  for (size_t i = 1; i < ranks.size(); ++i) contiguous &= ranks[i] == ranks[i - 1] + 1;
  if (ranks.size() == 1) return std::to_string(ranks[0]);
  if (contiguous) return std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  return std::to_string(ranks.size()) + " ranks";
}

void planc::printLedger(const MemoryPlan &plan, uint64_t deviceBytes, llvm::raw_ostream &os) {
  os << "memory per rank (the planner's arena; GiB = 2^30 bytes)";
  if (deviceBytes) os << ", device " << formatBytes(deviceBytes);
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
  os << "  peak: pp=" << peak.stage << " at '" << peak.peakOp << "'";
  if (!peak.peakPath.empty()) os << " in " << peak.peakPath;
  if (peak.peakMicroBatch >= 0) os << ", micro-batch " << peak.peakMicroBatch;
  os << " (" << peak.peakWork << ")";
  if (deviceBytes)
    os << "; " << formatBytes(peak.arena) << " of " << formatBytes(deviceBytes) << " ("
       << llvm::formatv("{0:P1}", double(peak.arena) / double(deviceBytes)) << ")";
  os << "\n";
}
