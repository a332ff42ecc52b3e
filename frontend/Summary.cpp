//===- frontend/Summary.cpp - the one-screen summary of `planc check` ----===//

#include "frontend/Frontend.h"
#include "support/Units.h"
#include "support/Plural.h"

#include "llvm/Support/Format.h"

#include <map>

using namespace planc;

namespace {

/// 124439808 -> "124,439,808"
std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

/// 124439808 -> "124.4M"
std::string human(uint64_t n) {
  const char *suffix[] = {"", "K", "M", "B", "T"};
  double v = double(n);
  int i = 0;
  while (v >= 1000 && i < 4) v /= 1000, ++i;
  std::string s;
  llvm::raw_string_ostream os(s);
  if (i == 0) os << n;
  else os << llvm::format("%.1f", v) << suffix[i];
  return os.str();
}

} // namespace

void planc::printSummary(const Compilation &c, llvm::raw_ostream &os) {
  const ModelInfo &m = c.getModel();
  const PlanConfig &cfg = c.getConfig();
  const Program &p = c.getProgram();
  std::string file = p.mainFile ? p.mainFile->fileName : "";
  if (!p.model) {
    size_t own = p.mainFile ? p.mainFile->layers.size() : 0;
    os << file << ": " << counted(int64_t(own), "layer definition") << " checked, no model\n";
    return;
  }
  os << "model " << m.name << " (" << file << ")\n";
  uint64_t total = m.totalParams(), trainable = m.trainableParams();
  os << "  parameters    " << grouped(total) << " (" << human(total) << ")";
  if (trainable != total) os << ", trainable " << grouped(trainable) << " (" << human(trainable) << ")";
  os << "\n";
  std::map<std::string, uint64_t> byKind;
  for (const ParamInfo &pi : m.params) byKind[pi.layerKind] += pi.numel();
  std::vector<std::pair<uint64_t, std::string>> sorted;
  for (auto &[k, n] : byKind) sorted.push_back({n, k});
  std::sort(sorted.begin(), sorted.end(), [](auto &a, auto &b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  for (auto &[n, k] : sorted)
    os << llvm::format("    %-18s %16s  %5.1f%%\n", k.c_str(), grouped(n).c_str(), total ? 100.0 * double(n) / double(total) : 0.0);
  os << "  layers        " << m.numLayers << "\n";
  os << "  inputs       ";
  for (const InputInfo &in : m.inputs) os << " " << in.name << ": " << in.dtype << formatShape(in.shape);
  os << "\n";
  const TrainConfig &t = cfg.train;
  if (!m.inputs.empty() && t.microBatch > 0) {
    uint64_t perSample = 1;
    const Shape &s = m.inputs.front().shape;
    for (size_t i = 1; i < s.size(); ++i) perSample *= uint64_t(s[i]);
    os << "  tokens/step   " << grouped(uint64_t(t.globalBatch) * perSample) << " (global_batch " << t.globalBatch
       << " x " << perSample << ")\n";
  }
  os << "train: " << counted(t.steps, "step") << ", micro_batch " << t.microBatch << ", optimizer " << spelling(t.optimizer.kind)
     << " (lr " << llvm::format("%g", t.optimizer.lr) << "), precision " << t.precision.compute << " (master " << t.precision.master << ")";
  if (t.adapters.kind == AdapterKind::LoRA)
    os << ", adapters lora(rank " << t.adapters.rank << ", alpha " << llvm::format("%g", t.adapters.alpha) << ")";
  if (t.fusion != kDefaultFusion) os << ", fusion " << spelling(t.fusion);
  os << "\n";
  const ClusterConfig &cl = cfg.cluster;
  os << "cluster: " << counted(cl.nodes, "node") << " x " << cl.gpusPerNode << " " << cl.device.name << " = "
     << counted(cl.worldSize(), "device") << ", " << formatBytes(cl.device.memoryBytes) << " each\n";
  const ParallelConfig &par = cfg.parallel;
  os << "mesh:";
  for (MeshAxis a : {MeshAxis::DP, MeshAxis::PP, MeshAxis::TP, MeshAxis::CP, MeshAxis::EP})
    if (par.size(a) > 1 || a == MeshAxis::DP) os << " " << spelling(a) << "=" << par.size(a);
  os << " (" << counted(par.meshSize(), "device") << "), zero " << par.zeroStage;
  if (par.sequenceParallel) os << ", sequence parallel";
  if (par.schedule) {
    os << ", pipeline " << spelling(*par.schedule);
    if (par.schedule == ScheduleStyle::Interleaved) os << "(v=" << par.virtualStages << ")";
    os << " with " << counted(par.microBatches, "micro-batch");
  }
  os << ", recompute " << spelling(par.recompute) << "\n";
}
