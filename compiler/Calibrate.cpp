//===- compiler/Calibrate.cpp - build, run and read the calibration program ===//

#include "compiler/Calibrate.h"

#include "backend/Target.h"
#include "backend/c/CFamily.h"
#include "backend/cpu/Launch.h"
#include "support/Error.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>

using namespace planc;

llvm::Expected<cost::Calibration> planc::calibrationFromMeasurements(const nlohmann::json &m) {
  auto bad = [](const std::string &why) { return makeError("the calibration program's output: " + why); };
  if (!m.is_object() || !m.contains("gemm") || !m["gemm"].is_array() || m["gemm"].empty())
    return bad("no GEMM rates");
  if (!m.contains("peak_flops") || !m["peak_flops"].is_object()) return bad("no peak FLOP/s");
  cost::Calibration c;
  c.source = "measured by planc calibrate";
  const double f32 = m["peak_flops"].value("f32", 0.0), f64 = m["peak_flops"].value("f64", 0.0);
  if (!(f32 > 0)) return bad("no f32 peak");
  // The CPU backend computes bf16 and f16 in f32: their peak is f32's.
  c.peakFlops = {{"f32", f32}, {"bf16", f32}, {"f16", f32}};
  if (f64 > 0) c.peakFlops["f64"] = f64;
  for (const nlohmann::json &p : m["gemm"]) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number()) return bad("a bad GEMM point");
    double flops = p[0].get<double>(), rate = p[1].get<double>();
    if (!(flops > 0) || !(rate > 0)) return bad("a bad GEMM point");
    if (!c.gemm.empty() && flops <= c.gemm.back().first) continue;
    c.gemm.push_back({flops, std::min(1.0, rate / f32)});
  }
  // Measured rates are what the machine reaches: efficiency 1 of them.
  c.memoryBandwidth = m.value("memory_bandwidth", 0.0);
  if (c.memoryBandwidth > 0) c.memoryEfficiency = 1.0;
  c.kernelLaunch = std::max(0.0, m.value("kernel_launch_us", 1.0)) * 1e-6;
  const double elementwise = m.value("elementwise_flops", 0.0);
  if (elementwise > 0) c.elementwiseEfficiency = std::min(1.0, elementwise / f32);
  if (m.contains("allreduce") && m["allreduce"].is_array() && m.value("ranks", 1) > 1) {
    const double n = double(m.value("ranks", 1));
    double bus = 0, smallest = 0;
    for (const nlohmann::json &p : m["allreduce"]) {
      if (!p.is_array() || p.size() != 2) continue;
      double bytes = p[0].get<double>(), seconds = p[1].get<double>();
      if (!(seconds > 0)) continue;
      bus = std::max(bus, 2 * (n - 1) / n * bytes / seconds); // nccl-tests' bus bandwidth
      if (smallest == 0) smallest = seconds;
    }
    if (bus > 0) {
      cost::Link link;
      link.bandwidth = bus;
      link.latency = smallest / (2 * (n - 1)); // the smallest message: latency-bound
      c.intraNode = link;
      c.busEfficiency = 1.0;
    }
  }
  return c;
}

llvm::Expected<cost::Calibration> planc::calibrateThisMachine(const CalibrateOptions &options, llvm::raw_ostream &log) {
  llvm::SmallString<128> dir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("planc-calibrate", dir))
    return makeError("cannot create a temporary folder: " + ec.message());
  auto cleanup = [&] { llvm::sys::fs::remove_directories(dir); };
  BuildOptions build = options.build;
  build.output = (dir + "/calibrate").str();
  build.keepSource = false;
  log << "planc calibrate: building the measuring program\n";
  log.flush();
  // The elementwise kernel it times, in the loop the CPU backend renders.
  std::string source;
  llvm::raw_string_ostream src(source);
  src << "// The calibration program of planc calibrate (runtime/Calibrate.h).\n"
         "#include \"runtime/Calibrate.h\"\n\n#include <cmath>\n\n"
         "static void kernel(float *x, int64_t n) {\n";
  std::string indent = backend::openIndexLoop(backend::cpuLanguage(), "i", "n", /*simd=*/true, src);
  src << indent << "x[i] = x[i] * 0.5f + 1.0f;\n";
  backend::closeIndexLoop(backend::cpuLanguage(), src);
  src << "}\n\nstatic void gelu(const float *x, float *y, int64_t n) {\n";
  indent = backend::openIndexLoop(backend::cpuLanguage(), "i", "n", /*simd=*/true, src);
  src << indent << "const float v = x[i];\n"
      << indent << "y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));\n";
  backend::closeIndexLoop(backend::cpuLanguage(), src);
  src << "}\n\nint main(int argc, char **argv) { return planc::runtime::runCalibration(argc, argv, kernel, gelu); }\n";
  src.flush();
  std::string buildLog;
  llvm::raw_string_ostream quiet(buildLog);
  if (llvm::Error e = backend::targetOf(backend::TargetKind::Cpu).build(source, "the calibration program", build, quiet)) {
    cleanup();
    return e;
  }
  // Started as `planc run --target=cpu` starts a program (backend/cpu/Launch.h).
  auto launcher = cpu::findLauncher(options.ranks, options.mpirun);
  if (!launcher) {
    cleanup();
    return launcher.takeError();
  }
  log << "planc calibrate: measuring GEMM, memory" << (options.ranks > 1 ? " and all-reduce over " +
                                                                             std::to_string(options.ranks) + " ranks"
                                                                       : std::string())
      << " (a minute at most)\n";
  log.flush();
  cpu::LaunchOptions launch;
  launch.ranks = options.ranks;
  launch.stdoutFile = (dir + "/out.json").str();
  launch.stderrFile = (dir + "/err.txt").str();
  launch.secondsToWait = 600;
  llvm::Expected<int> status = cpu::launchExecutable(build.output, *launcher, launch);
  const int rc = status ? *status : -1;
  const std::string why = status ? std::string() : llvm::toString(status.takeError());
  std::string out, err;
  if (auto b = llvm::MemoryBuffer::getFile(launch.stdoutFile)) out = (*b)->getBuffer().str();
  if (auto b = llvm::MemoryBuffer::getFile(launch.stderrFile)) err = (*b)->getBuffer().str();
  cleanup();
  if (rc != 0) {
    if (err.size() > 2000) err = "..." + err.substr(err.size() - 2000);
    return makeError("the calibration program failed" + (why.empty() ? "" : " (" + why + ")") +
                     (err.empty() ? std::string() : ":\n" + err));
  }
  nlohmann::json measured = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (measured.is_discarded()) return makeError("the calibration program printed no JSON:\n" + out.substr(0, 500));
  return calibrationFromMeasurements(measured);
}
