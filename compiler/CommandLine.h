//===- compiler/CommandLine.h - planc's command line into CommandOptions -*- C++ -*-===//
//
// The words of a `planc` command line, checked and read into CommandOptions
// (compiler/Commands.h), with the usage errors, --help and --version the
// driver prints. tools/planc is this call and runCommand.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_COMMANDLINE_H
#define PLANC_COMPILER_COMMANDLINE_H

#include "compiler/Commands.h"

#include <string>
#include <vector>

namespace planc {

/// The help texts --help prints (the driver's, tools/planc/Help*.inc).
struct CommandLineHelp {
  const char *main = "";                  // planc --help, and planc with no arguments
  const char *const *commands = nullptr;  // planc <command> --help, one per Command in its order
};

/// Reads `args` (the words after the program's name) into `o`. Returns -1
/// when the command is to run, else the exit code after printing what the
/// words asked for or what is wrong with them: 0 for --help and --version,
/// 2 for a usage error (on llvm::errs(), with "run 'planc --help' for usage")
/// and for no words at all (the main help).
int parseCommandLine(std::vector<std::string> args, const CommandLineHelp &help, CommandOptions &o);

/// Where an installed planc (<prefix>/bin/planc) finds the runtime it builds
/// programs with: <prefix>/include/planc and <prefix>/lib/libplanc_runtime.a,
/// set in `build` when both are there; in a build tree, nothing changes and
/// the build tree's own runtime is used.
void useRuntimeBesideExecutable(const std::string &executable, BuildOptions &build);

} // namespace planc

#endif
