//===- runtime/ExecutableOptions.h - a compiled plan's command line -*- C++ -*-===//
//
// The options of an executable `planc build` writes (`./model --help`,
// docs/cpu-backend.md): parsed before anything is allocated, so that a
// wrong option costs nothing.
//
//===----------------------------------------------------------------------===//

#ifndef PLANC_RUNTIME_EXECUTABLEOPTIONS_H
#define PLANC_RUNTIME_EXECUTABLEOPTIONS_H

#include "runtime/Data.h"
#include "runtime/Executable.h"

#include <cstdint>
#include <optional>
#include <string>

namespace planc::runtime {

/// What the command line asked for; unset: the plan's own setting.
struct ExecutableOptions {
  std::optional<int64_t> steps, seed, threads, checkpointEvery, checkpointKeep;
  double commTimeout = 300;
  std::optional<std::string> data, checkpointDir, resume, initFrom, metrics, trace;
  int64_t traceSteps = 10;
  std::string prompt = "\n";
  double temperature = 0.8;
  int64_t topK = 200;
  int64_t logEvery = 1;
  bool profile = false;
  bool dropUnusedTensors = false; // --resume, --init-from pass over the file's tensors the plan lacks
  int64_t sample = -1; // -1: the default (200 bytes for a byte-level model, else none)
  bool help = false;
};

/// Parses argv; an error message, or "".
std::string parseExecutableOptions(int argc, char **argv, ExecutableOptions &o);

/// `./model --help`: the plan, its mesh and every option.
void printExecutableHelp(const ExecutableModel &m, const char *argv0);

/// --data's "synthetic", "text:FILE", "u16:FILE", "u32:FILE"; an error
/// message, or "".
std::string parseDataSource(const std::string &s, DataSpec &spec);

} // namespace planc::runtime

#endif // PLANC_RUNTIME_EXECUTABLEOPTIONS_H
