//===- frontend/StdlibLayers.h - which std module defines a layer ---*- C++ -*-===//
//
// A call of `swiglu` without `import std.llama` is a missing import, not a
// misspelling of `silu`: the unknown-callee error names the module to import.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_STDLIBLAYERS_H
#define PLANC_FRONTEND_STDLIBLAYERS_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace planc {

/// "std.llama" for `swiglu`: the module of the standard library that declares
/// a layer of this name; empty when none does.
std::string stdModuleDeclaring(llvm::StringRef layer);

} // namespace planc

#endif
