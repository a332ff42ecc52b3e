//===- compiler/PlanChoice.cpp - a parallel plan as overrides, text and a block ===//

#include "compiler/PlanChoice.h"

#include "compiler/TrainOptions.h"

#include <algorithm>
#include <tuple>

using namespace planc;

namespace {

std::string scheduleText(const PlanChoice &p) {
  std::string mb = "micro_batches = " + std::to_string(p.microBatches);
  switch (p.schedule) {
  case ScheduleStyle::GPipe: return "gpipe(" + mb + ")";
  case ScheduleStyle::Interleaved: return "interleaved(v = " + std::to_string(p.virtualStages) + ", " + mb + ")";
  case ScheduleStyle::ZeroBubble: return "zero_bubble(" + mb + ")";
  default: return "1f1b(" + mb + ")";
  }
}

} // namespace

std::string PlanChoice::mesh() const {
  std::string text = "mesh(dp = " + std::to_string(dp);
  if (pp > 1) text += ", pp = " + std::to_string(pp);
  if (tp > 1) text += ", tp = " + std::to_string(tp);
  return text + ")";
}

std::vector<std::string> PlanChoice::sets() const {
  return {"parallel.mesh=" + mesh(), "parallel.zero=" + std::to_string(zero),
          std::string("parallel.sequence_parallel=") + (sequenceParallel ? "true" : "false"),
          std::string("parallel.recompute=") + spelling(recompute),
          "train.micro_batch=" + std::to_string(microBatch),
          // Always: a pipeline the plan writes (its micro_batches) must follow
          // the new batch split, and with pp = 1 it goes.
          "parallel.pipeline=" + (pp > 1 ? scheduleText(*this) : std::string("none")),
          std::string("train.fusion=") + spelling(fusion)};
}

std::string PlanChoice::describe() const {
  std::string d = mesh() + ", zero " + std::to_string(zero);
  if (sequenceParallel) d += ", sequence parallel";
  d += std::string(", recompute ") + spelling(recompute) + ", micro_batch " + std::to_string(microBatch);
  if (pp > 1) d += ", " + scheduleText(*this);
  if (fusion != kDefaultFusion) d += std::string(", fusion ") + spelling(fusion);
  return d;
}

std::string PlanChoice::parallelBlock(int64_t planMicroBatch, FusionPolicy planFusion) const {
  std::string b = "parallel {\n  " + mesh() + "\n  zero = " + std::to_string(zero) + "\n";
  if (sequenceParallel) b += "  sequence_parallel = true\n";
  if (pp > 1) b += "  pipeline " + scheduleText(*this) + "\n";
  b += std::string("  recompute ") + spelling(recompute) + "\n";
  if (microBatch != planMicroBatch)
    b += "  // with train.micro_batch = " + std::to_string(microBatch) + " (the plan has " +
         std::to_string(planMicroBatch) + "; --apply sets it)\n";
  if (fusion != planFusion)
    b += std::string("  // with train.fusion = ") + spelling(fusion) + " (the plan has " + spelling(planFusion) +
         "; --apply sets it)\n";
  return b + "}\n";
}

PlanChoice planc::currentPlanChoice(const Compilation &c) {
  const PlanConfig &cfg = c.getConfig();
  const ParallelConfig &par = cfg.parallel;
  PlanChoice p;
  p.dp = par.size(MeshAxis::DP), p.tp = par.size(MeshAxis::TP), p.pp = par.size(MeshAxis::PP);
  p.zero = par.zeroStage, p.sequenceParallel = par.sequenceParallel, p.recompute = par.recompute;
  p.microBatch = cfg.train.microBatch;
  p.fusion = cfg.train.fusion;
  ScheduleOptions so = scheduleOfPlan(par);
  p.microBatches = so.microBatches;
  p.schedule = so.style;
  p.virtualStages = so.virtualStages;
  return p;
}

std::string planc::applyPlanChoice(Compilation &c, const PlanChoice &choice) {
  const llvm::MemoryBuffer *main = c.getSourceMgr().getMemoryBuffer(c.getMainBuffer());
  llvm::StringRef text = main->getBuffer();
  auto offset = [&](llvm::SMLoc loc) { return size_t(loc.getPointer() - text.begin()); };
  auto inMain = [&](llvm::SMRange r) {
    return r.isValid() && r.Start.getPointer() >= text.begin() && r.End.getPointer() <= text.end();
  };
  // Edits as (begin, end, replacement), applied from the last.
  std::vector<std::tuple<size_t, size_t, std::string>> edits;
  const TrainConfig &train = c.getConfig().train;
  std::string block = choice.parallelBlock(choice.microBatch, choice.fusion);
  const ast::ConfigBlock *par = c.getProgram().parallel;
  if (par && inMain(par->range)) {
    if (!block.empty() && block.back() == '\n') block.pop_back();
    edits.push_back({offset(par->range.Start), offset(par->range.End), block});
  } else {
    edits.push_back({text.size(), text.size(), std::string(text.empty() || text.back() == '\n' ? "\n" : "\n\n") + block});
  }
  // A train setting: replaced where the file writes it, else written first
  // in the train block (or in a new one).
  std::string newTrain;
  auto setTrain = [&](const SettingSource &source, const std::string &setting) {
    const ast::ConfigBlock *tb = c.getProgram().train;
    if (inMain(source.range)) {
      edits.push_back({offset(source.range.Start), offset(source.range.End), setting});
    } else if (tb && inMain(tb->range)) {
      size_t brace = text.find('{', offset(tb->keywordRange.End));
      if (brace != llvm::StringRef::npos) edits.push_back({brace + 1, brace + 1, "\n  " + setting});
    } else {
      newTrain += "  " + setting + "\n";
    }
  };
  if (choice.microBatch != train.microBatch)
    setTrain(train.microBatchSource, "micro_batch = " + std::to_string(choice.microBatch));
  if (choice.fusion != train.fusion) setTrain(train.fusionSource, std::string("fusion = ") + spelling(choice.fusion));
  if (!newTrain.empty()) edits.push_back({text.size(), text.size(), "\ntrain {\n" + newTrain + "}\n"});
  std::stable_sort(edits.begin(), edits.end(),
                   [](const auto &a, const auto &b) { return std::get<0>(a) > std::get<0>(b); });
  std::string out = text.str();
  for (const auto &[begin, end, replacement] : edits) out.replace(begin, end - begin, replacement);
  return out;
}
