//===- frontend/Verify.h - `--verify`: expected diagnostics in comments -*- C++ -*-===//
//
// clang's -verify for .plan files. A comment beside the offending line says what
// must be reported there:
//
//   x = y @ w          // expected-error {{inner dimensions 64 and 32 differ}}
//   // expected-error@+1 {{unknown device 'a100'}}
//   // expected-note@-2 {{did you mean 'a100_80gb'?}}
//   // expected-error@12 {{...}}         (on line 12)
//   // expected-warning@* {{...}}        (anywhere in the file, or no location)
//
// The text between {{ }} must occur in the message. Every expectation must be
// matched by one diagnostic and every diagnostic (notes included) by one
// expectation; what is left over is reported and the check fails.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_VERIFY_H
#define PLANC_FRONTEND_VERIFY_H

#include "support/Diagnostics.h"

#include "llvm/Support/raw_ostream.h"

#include <memory>

namespace llvm {
class SourceMgr;
}

namespace planc {

/// Collects every diagnostic instead of printing it.
class CollectingConsumer : public DiagnosticConsumer {
public:
  void handle(const Diagnostic &d) override { diagnostics.push_back(d); }
  std::vector<Diagnostic> diagnostics;
};

/// Compares the collected diagnostics with the `expected-*` comments of every
/// buffer in `sm` that is not part of the standard library; prints mismatches
/// to `os`. Returns true when they agree exactly.
bool verifyDiagnostics(const std::vector<Diagnostic> &diagnostics, llvm::SourceMgr &sm, llvm::raw_ostream &os);

} // namespace planc

#endif
