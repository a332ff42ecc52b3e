//===- tests/fuzz/FrontendFuzzer.cpp - libFuzzer entry for the frontend ---===//
//
// Feeds arbitrary bytes to the frontend as the text of one .plan file: byte
// checks, lexer, parser, AST builder, imports of the embedded standard library,
// settings and elaboration. Diagnostics are dropped; what counts is that the
// frontend returns (no crash, no sanitizer report, no uncaught exception, no
// hang) whatever the input. A plan the frontend accepts must also lower to IR
// that verifies: anything else is a compiler bug, and the fuzzer stops on it.
//
//   scripts/build.sh --fuzz
//   build-fuzz/bin/plan-fuzz -dict=tests/fuzz/plan.dict CORPUS_DIR SEED_DIR
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "ir/Verifier.h"

#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace {

/// Receives every diagnostic and keeps none of them.
class DropDiagnostics : public planc::DiagnosticConsumer {
public:
  void handle(const planc::Diagnostic &) override {}
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  planc::FrontendOptions opts;
  planc::Compilation c(opts);
  c.setDiagnosticConsumer(std::make_unique<DropDiagnostics>());
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  if (!c.loadString("fuzz.plan", text) || !c.check()) return 0;
  std::unique_ptr<planc::ir::Module> m = planc::lowerToIR(c);
  if (!m) return 0; // a plan without a model lowers to nothing
  if (llvm::Error e = planc::ir::verify(*m)) {
    llvm::errs() << "checked plan lowered to IR that does not verify:\n" << llvm::toString(std::move(e)) << "\n";
    __builtin_trap();
  }
  return 0;
}
