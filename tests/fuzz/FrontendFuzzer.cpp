//===- tests/fuzz/FrontendFuzzer.cpp - libFuzzer entry for the frontend ---===//
//
// Feeds arbitrary bytes to the frontend as the text of one .plan file: byte
// checks, lexer, parser, AST builder, imports of the embedded standard library,
// settings and elaboration. Diagnostics are dropped; what counts is that the
// frontend returns (no crash, no sanitizer report, no uncaught exception, no
// hang) whatever the input. A plan the frontend accepts must also lower to IR
// that verifies, and a small one (few ops, a small mesh) goes through the whole
// memory check of `planc check` — partitioning, the schedule, the memory plan
// and, over budget, the fixes — which may find the plan cannot be partitioned
// (a finding about the plan) but never fail otherwise. Anything else is a
// compiler bug, and the fuzzer stops on it.
//
//   scripts/build.sh --fuzz
//   build-asan/bin/plan-fuzz -dict=tests/fuzz/plan.dict CORPUS_DIR SEED_DIR
//
//===----------------------------------------------------------------------===//

#include "compiler/MemoryCheck.h"
#include "frontend/Frontend.h"
#include "ir/PlanError.h"
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

/// The memory check partitions the plan and plans every stage, and over
/// budget analyses each fix again: bounded, so one input stays well under the
/// fuzzer's time limit.
constexpr size_t kMaxOps = 400;
constexpr int64_t kMaxRanks = 16;

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
  if (m->ops.size() > kMaxOps || c.getConfig().parallel.meshSize() > kMaxRanks) return 0;
  auto checked = planc::checkMemory(c);
  if (!checked)
    llvm::handleAllErrors(
        checked.takeError(), [](const planc::ir::PlanError &) {},
        [](const llvm::ErrorInfoBase &e) {
          llvm::errs() << "the memory check of a checked plan failed: " << e.message() << "\n";
          __builtin_trap();
        });
  return 0;
}
