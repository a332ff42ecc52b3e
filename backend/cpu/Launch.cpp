//===- backend/cpu/Launch.cpp - starting a built executable ---------------===//

#include "backend/cpu/Launch.h"

#include "support/Error.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Program.h"

#include <cstdlib>
#include <unistd.h>
#include <vector>

using namespace planc;

llvm::Expected<std::string> cpu::findLauncher(int64_t ranks, const std::string &mpirun) {
  if (ranks <= 1) return std::string();
  const std::string name = mpirun.empty() ? "mpirun" : mpirun;
  auto found = llvm::sys::findProgramByName(name);
  if (!found)
    return makeError("running " + std::to_string(ranks) + " ranks needs " +
                     (mpirun.empty() ? "mpirun" : "mpirun: cannot find '" + mpirun + "'") +
                     " (Debian: apt-get install openmpi-bin)");
  return *found;
}

llvm::Expected<int> cpu::launchExecutable(const std::string &executable, const std::string &launcher,
                                          const LaunchOptions &options) {
  std::vector<std::string> args;
  if (!launcher.empty()) {
    args = {launcher, "--oversubscribe", "-np", std::to_string(options.ranks)};
    if (::geteuid() == 0) {
      ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
      ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    }
  }
  args.push_back(executable);
  if (options.steps > 0) args.insert(args.end(), {"--steps", std::to_string(options.steps)});
  if (options.seed) args.insert(args.end(), {"--seed", std::to_string(*options.seed)});
  std::vector<llvm::StringRef> argv(args.begin(), args.end());
  auto file = [](const std::string &path) -> llvm::Optional<llvm::StringRef> {
    if (path.empty()) return llvm::None; // inherited
    return llvm::StringRef(path);
  };
  const llvm::Optional<llvm::StringRef> files[] = {llvm::None, file(options.stdoutFile), file(options.stderrFile)};
  llvm::ArrayRef<llvm::Optional<llvm::StringRef>> redirects;
  if (!options.stdoutFile.empty() || !options.stderrFile.empty()) redirects = files;
  std::string why;
  int rc = llvm::sys::ExecuteAndWait(args.front(), argv, llvm::None, redirects, options.secondsToWait, 0, &why);
  if (rc < 0) return makeError("the executable did not run to its end: " + why);
  return rc;
}
