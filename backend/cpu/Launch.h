//===- backend/cpu/Launch.h - starting a built executable -------*- C++ -*-===//
//
// How `planc run --target=cpu` starts the executable it built, and `planc
// calibrate` its measuring program: one process for a mesh of one rank,
// `mpirun --oversubscribe -np N` for more (one process per rank; more ranks
// than cores is allowed: slow, but the same numbers). OpenMPI refuses to run
// as root unless told; planc run is a local convenience, so it tells it
// (mpirun itself keeps the rule).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_CPU_LAUNCH_H
#define PLANC_BACKEND_CPU_LAUNCH_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace planc::cpu {

struct LaunchOptions {
  int64_t ranks = 1;             // processes; more than one runs under mpirun
  int64_t steps = 0;             // --steps; 0: the executable's own
  std::optional<uint64_t> seed;  // --seed; none: the executable's own
  /// Where the processes' stdout and stderr go (files); empty: this
  /// process's own.
  std::string stdoutFile, stderrFile;
  unsigned secondsToWait = 0;    // then it is killed; 0: no limit
};

/// The launcher a run of `ranks` processes needs: empty for one, else the
/// path of `mpirun` (a path, or a name found on PATH; empty: mpirun). An
/// error saying how to install it where it is missing.
llvm::Expected<std::string> findLauncher(int64_t ranks, const std::string &mpirun = "");

/// Runs `executable` (under `launcher` when not empty) to its end and
/// returns its exit status; an error where it could not run to its end
/// (killed, timed out, not started).
llvm::Expected<int> launchExecutable(const std::string &executable, const std::string &launcher,
                                     const LaunchOptions &options);

} // namespace planc::cpu

#endif
