//===- runtime/Calibrate.cpp - GEMM, memory and all-reduce rates ----------===//

#include "runtime/Calibrate.h"
#include "runtime/MpiCommunicator.h"

#include <cblas.h>
// The C API only: OpenMPI's C++ bindings need a library the executables do not link.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>
#include <vector>

using namespace planc::runtime;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// The best time of `f` over repeated calls: at least 3, until 0.2 s are spent.
template <typename F> double bestOf(F f) {
  double best = 1e300, spent = 0;
  for (int rep = 0; rep < 3 || (spent < 0.2 && rep < 1000); ++rep) {
    double t = now();
    f();
    t = now() - t;
    best = std::min(best, t);
    spent += t;
  }
  return best;
}

nlohmann::json measureGemm(double &peakF32, double &peakF64) {
  nlohmann::json points = nlohmann::json::array();
  peakF32 = peakF64 = 0;
  for (int n = 32; n <= 1024; n *= 2) {
    std::vector<float> a(size_t(n) * n, 1e-3f), b(size_t(n) * n, 2e-3f), c(size_t(n) * n, 0.f);
    double t = bestOf([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);
    });
    double flops = 2.0 * n * double(n) * n;
    points.push_back({flops, flops / t});
    peakF32 = std::max(peakF32, flops / t);
  }
  const int n = 512;
  std::vector<double> a(size_t(n) * n, 1e-3), b(size_t(n) * n, 2e-3), c(size_t(n) * n, 0.0);
  double t = bestOf([&] {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
  });
  peakF64 = 2.0 * n * double(n) * n / t;
  return points;
}

/// The elementwise kernel streaming 64 MiB in place (read and write counted).
double measureMemory(CalibrationKernel kernel) {
  const int64_t n = int64_t(64) << 20 >> 2;
  std::vector<float> x(size_t(n), 1.f);
  double t = bestOf([&] { kernel(x.data(), n); });
  return 2.0 * double(n) * sizeof(float) / t;
}

/// The same kernel on 64 elements: what a kernel costs however small.
double measureLaunch(CalibrationKernel kernel) {
  std::vector<float> x(64, 1.f);
  const int calls = 20000;
  double t = bestOf([&] {
    for (int i = 0; i < calls; ++i) kernel(x.data(), 64);
  });
  return t / calls;
}

nlohmann::json measureAllReduce(int size) {
  nlohmann::json points = nlohmann::json::array();
  for (size_t bytes = 4096; bytes <= (size_t(64) << 20); bytes *= 4) {
    std::vector<float> send(bytes / 4, 1.f), recv(bytes / 4, 0.f);
    double best = 1e300;
    for (int rep = 0; rep < 5; ++rep) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t = now();
      MPI_Allreduce(send.data(), recv.data(), int(bytes / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      t = now() - t;
      double slowest = 0;
      MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      best = std::min(best, slowest);
    }
    points.push_back({double(bytes), best});
  }
  (void)size;
  return points;
}

/// GELU on 16 Ki elements, in cache: elementwise FLOP/s as the op table
/// counts them (8 an element).
double measureElementwise(CalibrationGelu gelu) {
  const int64_t n = 16384;
  std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = float(i % 97) * 0.01f - 0.5f;
  const int calls = 200;
  double t = bestOf([&] {
    for (int i = 0; i < calls; ++i) gelu(x.data(), y.data(), n);
  });
  return 8.0 * double(n) * calls / t;
}

} // namespace

int planc::runtime::runCalibration(int argc, char **argv, CalibrationKernel kernel, CalibrationGelu gelu) {
  int64_t rank = 0, size = 1;
  const bool mpi = launchedByMpi();
  if (mpi) {
    Status s = initMpi(argc, argv, rank, size);
    if (!s.ok()) {
      std::cerr << "calibrate: " << s.message() << "\n";
      return 1;
    }
  }
  nlohmann::json out;
  if (rank != 0) {
    // Wait for rank 0's measurements asleep: a blocking barrier would poll
    // and take the cores the GEMMs are timed on.
    MPI_Request done;
    MPI_Ibarrier(MPI_COMM_WORLD, &done);
    for (int finished = 0; !finished;) {
      MPI_Test(&done, &finished, MPI_STATUS_IGNORE);
      if (!finished) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  } else {
    double f32 = 0, f64 = 0;
    out["gemm"] = measureGemm(f32, f64);
    out["peak_flops"] = {{"f32", f32}, {"f64", f64}};
    out["memory_bandwidth"] = measureMemory(kernel);
    out["kernel_launch_us"] = measureLaunch(kernel) * 1e6;
    out["elementwise_flops"] = measureElementwise(gelu);
  }
  out["ranks"] = size;
  if (mpi && rank == 0) {
    MPI_Request done;
    MPI_Ibarrier(MPI_COMM_WORLD, &done);
    MPI_Wait(&done, MPI_STATUS_IGNORE);
  }
  if (mpi && size > 1) out["allreduce"] = measureAllReduce(int(size));
  if (rank == 0) std::cout << out.dump() << std::endl;
  if (mpi) finalizeMpi();
  return 0;
}
