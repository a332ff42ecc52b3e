//===- tools/planc/planc.cpp - the planc driver ---------------------------===//
//
// Thin: the help texts, then the library's command line reader
// (compiler/CommandLine.h) and runCommand (compiler/Commands.h). Exit codes:
// 0 clean, 1 errors in the plan, 2 a usage error.
//
//===----------------------------------------------------------------------===//

#include "compiler/CommandLine.h"
#include "compiler/Commands.h"
#include "compiler/LargeStack.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <vector>

using namespace planc;

namespace {

const char *const kMainHelp =
#include "HelpMain.inc"
    ;

/// Each command's --help, in the order of compiler/Commands.h's Command.
const char *const kCommandHelp[] = {
#include "HelpCheck.inc"
    ,
#include "HelpEmit.inc"
    ,
#include "HelpBuild.inc"
    ,
#include "HelpRun.inc"
    ,
#include "HelpVerify.inc"
    ,
#include "HelpConvert.inc"
    ,
#include "HelpAuto.inc"
    ,
#include "HelpReport.inc"
    ,
#include "HelpCalibrate.inc"
};

} // namespace

int main(int argc, char **argv) {
#ifdef __GLIBC__
  // A compiler run allocates and frees a lot and then exits: keep freed
  // memory for reuse rather than hand it back to the kernel (and fault it in
  // again), and grow the heap in large steps. A 10 MB plan checks ~8% faster
  // (tests/e2e/scaling.py's largest plans).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
  CommandOptions o;
  int early = parseCommandLine(std::vector<std::string>(argv + 1, argv + argc), {kMainHelp, kCommandHelp}, o);
  if (early >= 0) return early;
  // Pipelines verify their result; after every pass only when asked (tests):
  // verifying a large model after each of a dozen passes costs more than the
  // passes.
  const char *verifyEach = std::getenv("PLANC_VERIFY_EACH");
  o.passes.verifyEach = verifyEach && llvm::StringRef(verifyEach) == "1";
  o.run.verifyEach = o.passes.verifyEach;
  // An installed planc builds with the runtime installed beside it
  // (<prefix>/include/planc, <prefix>/lib); in its build tree, with that tree's.
  useRuntimeBesideExecutable(llvm::sys::fs::getMainExecutable(argv[0], (void *)&kMainHelp), o.build);
  // Hostile but legal nesting recurses deeply (compiler/LargeStack.h).
  int code = 1;
  runOnLargeStack([&] { code = runCommand(o); });
  llvm::outs().flush();
  llvm::errs().flush();
  return code;
}
