//===- compiler/FusionReport.cpp - what fusion does to a plan, and why not ===//

#include "compiler/FusionReport.h"

#include "compiler/Pipeline.h"
#include "compiler/TrainOptions.h"
#include "ir/Printer.h"
#include "ir/LocalBlocks.h"
#include "ir/MeshLayout.h"
#include "passes/FuseAttention.h"
#include "passes/FuseElementwise.h"
#include "support/Units.h"
#include "support/Plural.h"

using namespace planc;
using namespace planc::ir;

namespace {

std::string place(const Location &loc) {
  if (!loc.isKnown()) return "(no place)";
  return loc.text();
}


/// The elementwise part: the groups fuse-elementwise makes of the
/// partitioned step (analysed before it runs), per rank's bytes, and the
/// refused edges counted by reason with the first of each.
llvm::Error printElementwiseReport(Compilation &c, const PassManagerOptions &pmOptions, llvm::raw_ostream &os) {
  CompileOptions options;
  options.stopAfter = CompileStage::Partitioned;
  options.passes = pmOptions;
  options.fuseElementwise = false;
  auto step = compile(c, options);
  if (!step) return step.takeError();
  const Module &m = *step->module;
  MeshLayout mesh(m.mesh);
  ElementwiseFusionAnalysis a = findElementwiseFusions(m);
  const FusionPolicy policy = c.getConfig().train.fusion;
  const bool fuses = policy != FusionPolicy::None;
  os << "elementwise: " << counted(int64_t(a.groups.size()), "group")
     << (fuses ? " fused" : " found (fused under fusion = elementwise or aggressive)") << ", "
     << counted(int64_t(a.refused.size()), "edge") << " refused\n";
  double saved = 0;
  for (size_t i = 0; i < a.groups.size(); ++i) {
    const ElementwiseFusion &g = a.groups[i];
    const Op &root = *g.ops.back();
    TensorType t = root.results[0]->type;
    double local = 1;
    for (int64_t d : localShape(t, mesh)) local *= double(d);
    double bytes = double(g.ops.size() - 1) * local * double(byteSize(t.dtype));
    saved += 2 * bytes;
    os << "group e" << i << ": ";
    for (size_t k = 0; k < g.ops.size(); ++k) os << (k ? ", " : "") << spelling(g.ops[k]->kind) << " %" << g.ops[k]->results[0]->name;
    std::string phase = root.getString("phase", "forward");
    os << " at " << place(root.loc) << " (" << (root.path.empty() ? "model" : root.path) << ", " << phase << ")\n";
    os << "  not written: " << counted(int64_t(g.ops.size()) - 1, "intermediate") << " of "
       << toString(TensorType(t.shape, t.dtype)) << ", " << formatBytes(uint64_t(bytes)) << " per rank\n";
  }
  std::map<std::string, std::pair<size_t, const RefusedElementwiseEdge *>> reasons;
  for (const RefusedElementwiseEdge &e : a.refused) {
    auto &r = reasons[e.reason];
    if (!r.first++) r.second = &e;
  }
  for (const auto &[reason, r] : reasons) {
    const RefusedElementwiseEdge &e = *r.second;
    os << "refused " << counted(int64_t(r.first), "edge") << ": " << reason << "; first: "
       << spelling(e.producer->kind) << " %" << e.producer->results[0]->name << " -> " << spelling(e.consumer->kind)
       << " %" << e.consumer->results[0]->name << " at " << place(e.consumer->loc) << "\n";
  }
  os << "elementwise traffic saved per micro-batch: " << formatBytes(uint64_t(saved))
     << " per rank (each intermediate written once and read once)\n";
  return llvm::Error::success();
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
  os << "fusion " << spelling(policy) << ": " << counted(int64_t(groups), "attention group")
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
    os << "  not written: " << counted(int64_t(f.ops.size()) - 1, "intermediate") << " of "
       << toString(computeType(f.ops.front()->results[0]->type)) << ", " << formatBytes(uint64_t(f.intermediateBytes))
       << "; traffic saved " << formatBytes(uint64_t(f.trafficSavedBytes())) << " per execution\n";
  }
  os << "attention traffic saved per micro-batch: " << formatBytes(uint64_t(saved))
     << " (each intermediate and its gradient written once and read once)\n";
  return printElementwiseReport(c, pmOptions, os);
}
