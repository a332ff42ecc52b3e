//===- compiler/FusionReport.cpp - what fusion does to a plan, and why not ===//

#include "compiler/FusionReport.h"

#include "compiler/Pipeline.h"
#include "compiler/TrainOptions.h"
#include "ir/Printer.h"
#include "passes/FuseAttention.h"
#include "support/Units.h"

using namespace planc;
using namespace planc::ir;

namespace {

std::string place(const Location &loc) {
  if (!loc.isKnown()) return "(no place)";
  return loc.file + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column);
}


} // namespace

llvm::Error planc::printFusionReport(Compilation &c, const PassManagerOptions &pmOptions, llvm::raw_ostream &os) {
  CompileOptions options;
  options.stopAfter = CompileStage::ForwardIR;
  options.passes = pmOptions;
  auto lowered = compile(c, options);
  if (!lowered) return lowered.takeError();
  Module &m = *lowered->module;
  // The passes that run before fuse-attention in the training pipeline.
  PassManager pm(pmOptions, passOptionsFromConfig(c.getConfig()));
  if (llvm::Error e = pm.addPipeline("canonicalize,lora")) return e;
  if (llvm::Error e = pm.run(m)) return e;

  const FusionPolicy policy = c.getConfig().train.fusion;
  // The graph here is the model as declared; mixed precision computes it in
  // the compute dtype later, so the intermediates have that element size.
  const DType compute = passOptionsFromConfig(c.getConfig()).training.precision.compute;
  auto computeType = [&](TensorType t) {
    if (isFloat(t.dtype) && byteSize(compute) < byteSize(t.dtype)) t.dtype = compute;
    return t;
  };
  auto valueText = [&](const Value *v) { return "%" + v->name + " " + toString(computeType(v->type)); };
  const bool fuses = policy == FusionPolicy::Aggressive;
  std::vector<AttentionFusion> found = findAttentionFusions(m);
  for (AttentionFusion &f : found)
    if (f.refused.empty()) {
      const TensorType &t = f.ops.front()->results[0]->type;
      f.intermediateBytes *= double(byteSize(computeType(t).dtype)) / double(byteSize(t.dtype));
    }
  size_t groups = 0;
  double saved = 0;
  for (const AttentionFusion &f : found)
    if (f.refused.empty()) {
      ++groups;
      saved += f.trafficSavedBytes();
    }
  os << "fusion " << spelling(policy) << ": " << groups << " attention group" << (groups == 1 ? "" : "s")
     << (fuses ? " fused" : " found (fused under fusion = aggressive)") << ", " << found.size() - groups << " refused\n";
  size_t index = 0;
  for (const AttentionFusion &f : found) {
    const Op &first = *f.ops.front();
    if (!f.refused.empty()) {
      os << "refused: attention at " << place(first.loc) << " (" << (first.path.empty() ? "model" : first.path)
         << "): " << f.refused << "\n";
      continue;
    }
    os << "group " << index++ << ": flash_attention at " << place(first.loc) << " ("
       << (first.path.empty() ? "model" : first.path) << ")\n";
    os << "  ops:";
    for (size_t i = 0; i < f.ops.size(); ++i)
      os << (i ? ", " : " ") << spelling(f.ops[i]->kind) << " %" << f.ops[i]->results[0]->name;
    os << "\n  q " << valueText(f.q) << ", k " << valueText(f.k) << ", v " << valueText(f.v) << "\n";
    os << "  scale " << formatFloat(f.scale) << (f.causal ? ", causal" : ", not causal") << ", dropout "
       << formatFloat(f.dropout) << "\n";
    os << "  not written: " << f.ops.size() - 1 << " intermediate" << (f.ops.size() == 2 ? "" : "s") << " of "
       << toString(computeType(f.ops.front()->results[0]->type)) << ", " << formatBytes(uint64_t(f.intermediateBytes))
       << "; traffic saved " << formatBytes(uint64_t(f.trafficSavedBytes())) << " per execution\n";
  }
  os << "traffic saved per micro-batch: " << formatBytes(uint64_t(saved))
     << " (each intermediate and its gradient written once and read once)\n";
  os << "elementwise chains: not fused (no policy fuses them yet)\n";
  return llvm::Error::success();
}
