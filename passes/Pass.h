//===- passes/Pass.h - a transformation of one IR module -------*- C++ -*-===//
//
// A pass transforms a module in place. It states what it needs before and
// guarantees after in its doc comment; it never prints, times or verifies —
// the PassManager does that around every pass.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_PASSES_PASS_H
#define PLANC_PASSES_PASS_H

#include "ir/IR.h"
#include "passes/PassPipelineOptions.h"

#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace planc {

class Pass {
public:
  virtual ~Pass() = default;
  virtual llvm::Error run(ir::Module &m) = 0;
};

struct PassInfo {
  std::string name;
  std::string description; // one line, for --help and --list-passes
  /// Makes the pass from the part of the options it reads.
  std::function<std::unique_ptr<Pass>(const PassPipelineOptions &)> create;
};

/// Every pass, in the order of the default pipeline's table of contents.
const std::vector<PassInfo> &registeredPasses();
const PassInfo *findPass(llvm::StringRef name);

} // namespace planc

#endif
