//===- passes/PassManager.h - running pipelines of passes ------*- C++ -*-===//
//
// LLVM's conventions, kept out of the passes themselves: a pipeline from a
// string (`autodiff,optimizer`), --verify-each, --print-after=NAME,
// --print-after-all, --print-after-change, --time-passes, and on an internal
// failure a reproducer: the IR the failing pass was given, written to a file
// whose name the error message gives.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_PASSES_PASSMANAGER_H
#define PLANC_PASSES_PASSMANAGER_H

#include "passes/Pass.h"

#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <memory>
#include <set>

namespace planc {

struct PassManagerOptions {
  /// Verify the IR after every pass (pipelines always verify it after the
  /// last one). On in the library and its tests; the planc driver turns it
  /// off, as verifying a large model a dozen times costs more than the
  /// passes, unless PLANC_VERIFY_EACH=1 (which the lit suite sets).
  bool verifyEach = true;
  std::set<std::string> printAfter;   // pass names
  bool printAfterAll = false;
  bool printAfterChange = false;      // print only when the pass changed the IR
  bool timePasses = false;
  std::string reproducerDir = ".";    // "" disables reproducers
  /// Makes the pipeline's input again (lowering is deterministic, and so are
  /// the passes). With it the reproducer costs nothing until a pass fails:
  /// then the input is rebuilt, the passes before the failing one rerun on
  /// it, and the result printed. Without it the input is printed before the
  /// first pass, as a large model's text is kept for that case.
  std::function<std::unique_ptr<ir::Module>()> rebuildInput;
  llvm::raw_ostream *printStream = nullptr; // default: stderr
};

class PassManager {
public:
  explicit PassManager(PassManagerOptions options = {}, PassPipelineOptions passOptions = {});
  /// Adds one registered pass by name; an error lists the known passes.
  llvm::Error add(llvm::StringRef name);
  /// Adds "a,b,c".
  llvm::Error addPipeline(llvm::StringRef pipeline);
  /// Runs the passes in order. Stops at the first failure: a pass error or a
  /// verifier error after a pass (both internal errors, with a reproducer).
  llvm::Error run(ir::Module &m);
  /// The time each pass took in the last run, in order (for --time-passes).
  const std::vector<std::pair<std::string, double>> &timings() const { return times; }
  void printTimings(llvm::raw_ostream &os) const;

private:
  PassManagerOptions options;
  PassPipelineOptions passOptions;
  std::vector<const PassInfo *> pipeline;
  std::vector<std::pair<std::string, double>> times;
};

} // namespace planc

#endif
