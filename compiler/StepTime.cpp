//===- compiler/StepTime.cpp - the cost model on a compiled plan ----------===//

#include "compiler/StepTime.h"

#include "support/Error.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace planc;

cost::Calibration planc::defaultCalibration(const DeviceSpec &device) {
  cost::Calibration c;
  if (device.name == "cpu") {
    // OpenBLAS sgemm on one AVX2 core reaches most of its peak from about
    // 128^3 up (bench/sgemm-rate.c measures it); streaming kernels get about
    // half of a channel's bandwidth; a kernel is an OpenMP loop (about a
    // microsecond); elementwise code with tanh and exp computes at a few
    // percent of the FMA peak (planc calibrate measured 1% here).
    c.source = "defaults for CPUs";
    c.gemm = {{1e5, 0.15}, {1e7, 0.5}, {1e9, 0.75}, {1e11, 0.8}};
    c.memoryEfficiency = 0.5;
    c.busEfficiency = 0.5;
    c.kernelLaunch = 1e-6;
    c.elementwiseEfficiency = 0.02;
    return c;
  }
  // cuBLAS bf16/f16 GEMMs on A100/H100-class GPUs: about 10% of peak for a
  // 512^3 GEMM (2.7e8 FLOPs), a third at 1024^3, 60% at 2048^3, 75-80% for
  // the 1e11-1e12 FLOP GEMMs of large transformer layers (NVIDIA's "Matrix
  // Multiplication Background" guide, cuBLAS release figures). Streaming
  // kernels reach 80% of HBM bandwidth; NCCL's bus bandwidth about 80% of
  // the link's; a kernel launch with its gap costs a few microseconds.
  c.source = "defaults for GPUs";
  c.gemm = {{1e8, 0.10}, {1e9, 0.33}, {1e10, 0.6}, {1e11, 0.75}, {1e12, 0.8}};
  c.memoryEfficiency = 0.8;
  c.busEfficiency = 0.8;
  c.kernelLaunch = 4e-6;
  return c;
}

namespace {

llvm::Error fieldError(llvm::StringRef path, const std::string &why) {
  return makeError("calibration file '" + path.str() + "': " + why);
}

} // namespace

llvm::Expected<cost::Calibration> planc::readCalibration(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) return makeError("cannot read calibration file '" + path.str() + "': " + buffer.getError().message());
  nlohmann::json j = nlohmann::json::parse((*buffer)->getBuffer().begin(), (*buffer)->getBuffer().end(), nullptr,
                                           /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return fieldError(path, "not a JSON object");
  cost::Calibration c;
  c.source = path.str();
  auto number = [&](const char *key, double &out, double lo, double hi) -> llvm::Error {
    if (!j.contains(key)) return llvm::Error::success();
    if (!j[key].is_number()) return fieldError(path, std::string("'") + key + "' is not a number");
    double v = j[key].get<double>();
    if (!(v > lo && v <= hi))
      return fieldError(path, std::string("'") + key + "' is " + std::to_string(v) + ", not in (" +
                                  llvm::formatv("{0}", lo).str() + ", " + llvm::formatv("{0}", hi).str() + "]");
    out = v;
    return llvm::Error::success();
  };
  if (auto e = number("memory_efficiency", c.memoryEfficiency, 0, 1)) return e;
  if (auto e = number("bus_efficiency", c.busEfficiency, 0, 1)) return e;
  if (auto e = number("elementwise_efficiency", c.elementwiseEfficiency, 0, 1)) return e;
  double launchUs = c.kernelLaunch * 1e6;
  if (j.contains("kernel_launch_us") && j["kernel_launch_us"].is_number() && j["kernel_launch_us"].get<double>() == 0)
    launchUs = 0;
  else if (auto e = number("kernel_launch_us", launchUs, 0, 1e6))
    return e;
  c.kernelLaunch = launchUs * 1e-6;
  if (j.contains("peak_flops")) {
    if (!j["peak_flops"].is_object()) return fieldError(path, "'peak_flops' is not an object {dtype: FLOP/s}");
    for (auto it = j["peak_flops"].begin(); it != j["peak_flops"].end(); ++it) {
      if (!it.value().is_number() || !(it.value().get<double>() > 0))
        return fieldError(path, "'peak_flops' of '" + it.key() + "' is not a positive number");
      c.peakFlops[it.key()] = it.value().get<double>();
    }
  }
  if (j.contains("memory_bandwidth")) {
    if (!j["memory_bandwidth"].is_number() || !(j["memory_bandwidth"].get<double>() > 0))
      return fieldError(path, "'memory_bandwidth' is not a positive number of bytes/s");
    c.memoryBandwidth = j["memory_bandwidth"].get<double>();
  }
  if (j.contains("intra_node")) {
    const nlohmann::json &l = j["intra_node"];
    if (!l.is_object() || !l.contains("bandwidth") || !l["bandwidth"].is_number() ||
        !(l["bandwidth"].get<double>() > 0) || (l.contains("latency") && !l["latency"].is_number()))
      return fieldError(path, "'intra_node' is not {\"bandwidth\": bytes/s, \"latency\": seconds}");
    cost::Link link;
    link.bandwidth = l["bandwidth"].get<double>();
    link.latency = std::max(0.0, l.value("latency", 0.0));
    c.intraNode = link;
  }
  if (!j.contains("gemm")) return fieldError(path, "no 'gemm' curve: [[flops, efficiency], ...]");
  const nlohmann::json &g = j["gemm"];
  if (!g.is_array() || g.empty()) return fieldError(path, "'gemm' is not a non-empty array of [flops, efficiency]");
  for (const nlohmann::json &point : g) {
    if (!point.is_array() || point.size() != 2 || !point[0].is_number() || !point[1].is_number())
      return fieldError(path, "a 'gemm' point is not [flops, efficiency]: " + point.dump());
    double flops = point[0].get<double>(), eff = point[1].get<double>();
    if (!(flops > 0) || !(eff > 0 && eff <= 1))
      return fieldError(path, "a 'gemm' point needs flops > 0 and 0 < efficiency <= 1: " + point.dump());
    if (!c.gemm.empty() && flops <= c.gemm.back().first)
      return fieldError(path, "'gemm' points must have increasing flops: " + point.dump());
    c.gemm.push_back({flops, eff});
  }
  return c;
}

llvm::Error planc::writeCalibration(const cost::Calibration &cal, const std::string &device, llvm::StringRef path) {
  nlohmann::json j;
  j["device"] = device;
  j["source"] = cal.source;
  j["memory_efficiency"] = cal.memoryEfficiency;
  j["bus_efficiency"] = cal.busEfficiency;
  j["elementwise_efficiency"] = cal.elementwiseEfficiency;
  j["kernel_launch_us"] = cal.kernelLaunch * 1e6;
  nlohmann::json g = nlohmann::json::array();
  for (const auto &[flops, eff] : cal.gemm) g.push_back({flops, eff});
  j["gemm"] = g;
  if (!cal.peakFlops.empty()) j["peak_flops"] = cal.peakFlops;
  if (cal.memoryBandwidth > 0) j["memory_bandwidth"] = cal.memoryBandwidth;
  if (cal.intraNode) j["intra_node"] = {{"bandwidth", cal.intraNode->bandwidth}, {"latency", cal.intraNode->latency}};
  std::string tmp = path.str() + ".tmp";
  std::error_code ec;
  {
    llvm::raw_fd_ostream out(tmp, ec);
    if (ec) return makeError("cannot write '" + path.str() + "': " + ec.message());
    out << j.dump(2) << "\n";
    out.close();
    if (out.has_error()) {
      llvm::sys::fs::remove(tmp);
      return makeError("cannot write '" + path.str() + "': " + out.error().message());
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, path)) {
    llvm::sys::fs::remove(tmp);
    return makeError("cannot write '" + path.str() + "': " + ec.message());
  }
  return llvm::Error::success();
}

cost::Hardware planc::hardwareOf(const ClusterConfig &cluster, const cost::Calibration *calibration) {
  cost::Hardware hw;
  hw.device = cluster.device.name;
  hw.peakFlops = cluster.device.peakFlops;
  hw.memoryBandwidth = cluster.device.memoryBandwidth;
  hw.nodes = cluster.nodes;
  hw.devicesPerNode = cluster.gpusPerNode;
  hw.intraNode = {cluster.intraNode.bandwidth, cluster.intraNode.latency};
  hw.interNode = {cluster.interNode.bandwidth, cluster.interNode.latency};
  hw.calibration = calibration ? *calibration : defaultCalibration(cluster.device);
  // A measured machine's figures replace the datasheet's.
  for (const auto &[dtype, flops] : hw.calibration.peakFlops)
    if (flops > 0) hw.peakFlops[dtype] = flops;
  if (hw.calibration.memoryBandwidth > 0) hw.memoryBandwidth = hw.calibration.memoryBandwidth;
  if (hw.calibration.intraNode) hw.intraNode = *hw.calibration.intraNode;
  return hw;
}

double planc::tokensPerStep(const Compilation &c) {
  const ModelInfo &m = c.getModel();
  if (m.inputs.empty()) return 0;
  double perSample = 1;
  const Shape &s = m.inputs.front().shape;
  for (size_t i = 1; i < s.size(); ++i) perSample *= double(s[i]);
  return double(c.getConfig().train.globalBatch) * perSample;
}

llvm::Expected<cost::StepCost> planc::estimateStepTime(const Compilation &c, const CompileResult &compiled,
                                                       const cost::Calibration *calibration) {
  if (!compiled.module || !compiled.schedule) return makeError("the plan has no schedule to time");
  cost::CostInputs in;
  in.placed = compiled.module.get();
  in.schedule = &*compiled.schedule;
  in.hardware = hardwareOf(c.getConfig().cluster, calibration);
  in.computeDType = c.getConfig().train.precision.compute;
  in.tokensPerStep = tokensPerStep(c);
  return cost::estimateStep(in);
}

std::string planc::formatSeconds(double s) {
  if (s >= 100) return llvm::formatv("{0:F0} s", s).str();
  if (s >= 1) return llvm::formatv("{0:F2} s", s).str();
  if (s >= 1e-3) return llvm::formatv("{0:F1} ms", s * 1e3).str();
  return llvm::formatv("{0:F0} us", s * 1e6).str();
}

namespace {

std::string grouped(double v) {
  std::string digits = std::to_string(int64_t(std::llround(v)));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string flopRate(double f) {
  if (f >= 1e12) return llvm::formatv("{0:F1} TFLOP/s", f / 1e12).str();
  return llvm::formatv("{0:F1} GFLOP/s", f / 1e9).str();
}

} // namespace

void planc::printStepTime(const cost::StepCost &t, const cost::Hardware &hw, llvm::raw_ostream &os) {
  os << "time (predicted; docs/cost.md): " << formatSeconds(t.stepTime) << " per step, " << grouped(t.tokensPerSecond())
     << " tokens/s, " << flopRate(t.modelFlopsPerDevice()) << " per device, MFU "
     << llvm::formatv("{0:F1}%", t.mfu() * 100) << ", HFU " << llvm::formatv("{0:F1}%", t.hfu() * 100) << " of "
     << flopRate(t.peakFlops) << " (" << hw.calibration.source << ")\n";
  if (t.stages.empty()) return;
  const cost::StageCost &s = t.stages[size_t(t.busiest)];
  const cost::Breakdown &b = s.breakdown;
  os << "  busiest rank";
  if (t.stages.size() > 1) os << " (pp=" << s.stage << ")";
  os << ": gemm " << formatSeconds(b.gemm) << ", other kernels " << formatSeconds(b.other);
  if (b.recompute > 0) os << " (recompute " << formatSeconds(b.recompute) << ")";
  os << ", blocking comm " << formatSeconds(b.commBlocking) << ", overlapped comm " << formatSeconds(b.commExposed)
     << " exposed of " << formatSeconds(b.commExposed + b.commHidden) << ", optimizer " << formatSeconds(b.optimizer);
  if (t.stages.size() > 1)
    os << ", pipeline idle " << formatSeconds(b.pipelineWait) << " (bubble "
       << llvm::formatv("{0:F1}%", t.bubbleFraction * 100) << ")";
  os << "\n";
}

nlohmann::json planc::stepTimeJson(const cost::StepCost &t, const cost::Hardware &hw) {
  auto breakdown = [](const cost::Breakdown &b) {
    return nlohmann::json{{"gemm_s", b.gemm},
                          {"other_s", b.other},
                          {"recompute_s", b.recompute},
                          {"comm_blocking_s", b.commBlocking},
                          {"comm_exposed_s", b.commExposed},
                          {"comm_hidden_s", b.commHidden},
                          {"optimizer_s", b.optimizer},
                          {"pipeline_idle_s", b.pipelineWait}};
  };
  nlohmann::json stages = nlohmann::json::array();
  for (const cost::StageCost &s : t.stages)
    stages.push_back({{"stage", s.stage},
                      {"forward_s", s.forward},
                      {"backward_s", s.backward},
                      {"weight_grad_s", s.weightGrad},
                      {"busy_s", s.busy},
                      {"finish_s", s.finish},
                      {"tail_s", s.tail},
                      {"total_s", s.total},
                      {"breakdown", breakdown(s.breakdown)}});
  return {{"step_s", t.stepTime},
          {"tokens_per_s", t.tokensPerSecond()},
          {"model_flops", t.modelFlops},
          {"hardware_flops", t.hardwareFlops},
          {"devices", t.devices},
          {"peak_flops", t.peakFlops},
          {"model_flops_per_device", t.modelFlopsPerDevice()},
          {"mfu", t.mfu()},
          {"hfu", t.hfu()},
          {"bubble_fraction", t.bubbleFraction},
          {"busiest_stage", t.busiest},
          {"calibration", hw.calibration.source},
          {"stages", stages}};
}
