//===- ir/Parser.h - reading the textual IR ---------------------*- C++ -*-===//
//
// Parses the textual IR that ir/Printer.h writes (docs/ir.md) back into a
// Module. The parser checks syntax and names: unknown ops, dtypes and mesh
// axes, undefined values (operands must be defined above their use),
// redefinitions, malformed attributes and shardings. Whether the ops type
// check is the verifier's job (ir/Verifier.h), so a tool can parse a broken
// module, verify it and report every problem.
//
// Errors are clang-style `file:line:col: error:` diagnostics rendered by
// llvm::SourceMgr; nothing is printed here. The parser stops at the first
// error, recurses nowhere and never crashes, whatever the bytes.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_PARSER_H
#define PLANC_IR_PARSER_H

#include "ir/IR.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <vector>

namespace planc::ir {

/// The diagnostics of a failed parse: an error, maybe followed by notes.
/// log() renders them without colours; a driver that wants colours prints
/// each with SMDiagnostic::print.
class IRParseError : public llvm::ErrorInfo<IRParseError> {
public:
  static char ID;
  explicit IRParseError(std::vector<llvm::SMDiagnostic> diagnostics) : diagnostics(std::move(diagnostics)) {}
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;

  std::vector<llvm::SMDiagnostic> diagnostics;
};

/// Parses buffer `bufferId` of `sm` (the buffer's identifier names the file
/// in diagnostics).
llvm::Expected<std::unique_ptr<Module>> parseIR(const llvm::SourceMgr &sm, unsigned bufferId);

/// Parses `text`, named `bufferName` in diagnostics.
llvm::Expected<std::unique_ptr<Module>> parseIR(llvm::StringRef text, llvm::StringRef bufferName = "<ir>");

} // namespace planc::ir

#endif
