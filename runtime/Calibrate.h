//===- runtime/Calibrate.h - measure this machine for the cost model -*- C++ -*-===//
//
// The program `planc calibrate` builds and runs (compiler/Calibrate.h): it
// measures what this machine reaches and prints it as one JSON object on
// stdout (rank 0):
//
//   gemm             [[FLOPs of one call, FLOP/s], ...]: OpenBLAS sgemm of
//                    square sizes 32 to 1024, the best of repeated calls
//   peak_flops       {"f32": best sgemm FLOP/s, "f64": best dgemm FLOP/s}
//   memory_bandwidth bytes/s of `kernel` streaming 64 MiB in place (read and
//                    write counted)
//   kernel_launch_us the time of a call of `kernel` on 64 elements
//   elementwise_flops FLOP/s of `gelu` on 16 Ki elements (in cache)
//   ranks            the MPI ranks it ran on (1 without mpirun)
//   allreduce        with several ranks: [[bytes, seconds], ...] of
//                    MPI_Allreduce over every rank, 4 KiB to 64 MiB
//
// Under mpirun every rank takes part in the all-reduces; only rank 0
// measures the GEMMs and the memory, while the others wait, so that they do
// not compete for the cores.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_CALIBRATE_H
#define PLANC_RUNTIME_CALIBRATE_H

#include <cstdint>

namespace planc::runtime {

/// x[i] = x[i] * 0.5 + 1 for i < n: an elementwise kernel as the CPU
/// backend renders one (compiler/Calibrate.cpp writes it with the backend's
/// loop), so that its cost is a generated kernel's.
using CalibrationKernel = void (*)(float *x, int64_t n);

/// The same loop computing GELU's tanh form, 0.5 x (1 + tanh(0.79788456 (x +
/// 0.044715 x^3))), which the op table counts as 8 FLOPs an element: the
/// compute rate of elementwise code, timed on data that stays in cache.
using CalibrationGelu = void (*)(const float *x, float *y, int64_t n);

/// main() of the calibration program; returns its exit status.
int runCalibration(int argc, char **argv, CalibrationKernel kernel, CalibrationGelu gelu);

} // namespace planc::runtime

#endif
