//===- backend/host/HostText.h - the host program's words -------*- C++ -*-===//
//
// The spellings every host program (backend/host/HostProgram.h) writes:
// strings as C++ literals, dtypes as the runtime's ElementType names, shapes
// as braced lists, a rank class as the banner names it.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_HOST_HOSTTEXT_H
#define PLANC_BACKEND_HOST_HOSTTEXT_H

#include "exec/ExecutionPlan.h"
#include "runtime/ElementType.h"

#include "llvm/ADT/StringRef.h"

#include <string>

namespace planc::host {

/// `s` as a C++ string literal: printable ASCII kept but for '"', '\\' and
/// '?' (no trigraph can form), everything else an octal escape.
std::string cString(llvm::StringRef s);

/// The runtime's ElementType enumerator of a dtype ("F32", "BF16", ...).
const char *elementTypeName(ir::DType t);
const char *elementTypeName(runtime::ElementType t);

/// "{2, 4}".
std::string ints(const Shape &s);

/// "pipeline stage 0 (rank 0)" / "pipeline stage 1 (ranks 2, 3)".
std::string rankClassOf(const exec::RankProgram &p);

} // namespace planc::host

#endif
