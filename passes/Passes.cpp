//===- passes/Passes.cpp - the registry of passes -------------------------===//
//
// Every pass is listed here once, by name, with its one-line description and
// its factory. The list is in the order the default pipeline runs them.
//
//===----------------------------------------------------------------------===//

#include "passes/Pass.h"
#include "passes/Passes.h"

using namespace planc;

const std::vector<PassInfo> &planc::registeredPasses() {
  static const std::vector<PassInfo> passes = {
      {"canonicalize", "removes ops whose results nothing uses and folds identity reshapes and casts",
       [](const PassOptions &) { return createCanonicalizePass(); }},
  };
  return passes;
}
