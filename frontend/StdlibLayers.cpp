//===- frontend/StdlibLayers.cpp - which std module defines a layer -------===//
//
// Reads the declarations off the embedded text (`layer NAME(`) rather than
// parsing the modules: it runs only for an unknown callee, and a module the
// plan did not import was never parsed.
//
//===----------------------------------------------------------------------===//

#include "frontend/StdlibLayers.h"
#include "frontend/Frontend.h"

#include "llvm/ADT/StringExtras.h"

using namespace planc;

namespace {

/// True when `text` declares `layer <name>(` at the start of a line.
bool declares(llvm::StringRef text, llvm::StringRef name) {
  std::string head = ("layer " + name).str();
  for (size_t at = text.find(head); at != llvm::StringRef::npos; at = text.find(head, at + 1)) {
    bool lineStart = at == 0 || text[at - 1] == '\n';
    llvm::StringRef rest = text.drop_front(at + head.size()).ltrim(" \t");
    if (lineStart && rest.startswith("(")) return true;
  }
  return false;
}

} // namespace

std::string planc::stdModuleDeclaring(llvm::StringRef layer) {
  if (layer.empty()) return "";
  for (const auto &[module, text] : embeddedStdlib())
    if (declares(text, layer)) return "std." + module;
  return "";
}
