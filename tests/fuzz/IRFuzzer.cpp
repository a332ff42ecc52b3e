//===- tests/fuzz/IRFuzzer.cpp - libFuzzer entry for textual IR and plan-opt -===//
//
// Feeds arbitrary bytes to what `plan-opt` does with an .ir file: the textual
// IR parser, the verifier, the printer and a pass pipeline. The first byte
// picks the pipeline, the rest is the IR text. What counts:
//  - the parser, the verifier and the passes return (an error is an answer:
//    a pass may refuse a module it does not apply to) and never crash, trip a
//    sanitizer or hang;
//  - a module that verifies prints as text that parses and prints the same
//    again (textual IR round-trips exactly), before the passes and after them.
// Anything else is a compiler bug, and the fuzzer stops on it.
//
//   scripts/build.sh --fuzz ir-fuzz
//   build-asan/bin/ir-fuzz -dict=tests/fuzz/ir.dict CORPUS_DIR SEED_DIR
//
//===----------------------------------------------------------------------===//

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"

#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace {

/// The pipelines a test of plan-opt runs: one pass alone, the training step,
/// the partitioner's first passes, and both whole.
const char *const kPipelines[] = {
    "canonicalize",
    "autodiff,optimizer,canonicalize",
    "mixed-precision,autodiff",
    "recompute,zero,propagate-sharding",
    "lora,mixed-precision,autodiff,optimizer,loss-scaling,canonicalize",
    "propagate-sharding,grad-buckets,pipeline,check-deadlock",
};

/// Stops the fuzzer on a broken round trip, showing both texts.
void roundTrip(const planc::ir::Module &m, const char *when) {
  std::string text = planc::ir::toText(m);
  auto again = planc::ir::parseIR(text, "<printed>");
  if (!again) {
    llvm::errs() << "printed IR " << when << " does not parse: " << llvm::toString(again.takeError()) << "\n"
                 << text;
    __builtin_trap();
  }
  std::string second = planc::ir::toText(**again);
  if (second != text) {
    llvm::errs() << "printed IR " << when << " prints differently once parsed:\n" << text << "---\n" << second;
    __builtin_trap();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const char *pipeline = kPipelines[data[0] % (sizeof kPipelines / sizeof kPipelines[0])];
  llvm::StringRef text(reinterpret_cast<const char *>(data + 1), size - 1);
  auto parsed = planc::ir::parseIR(text, "fuzz.ir");
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    return 0;
  }
  planc::ir::Module &m = **parsed;
  if (llvm::Error e = planc::ir::verify(m)) {
    llvm::consumeError(std::move(e));
    return 0;
  }
  roundTrip(m, "before the passes");
  planc::PassManagerOptions options;
  options.reproducerDir = ""; // a fuzzer writes no files beside its artifacts
  options.verifyEach = true;
  planc::PassManager pm(options);
  if (llvm::Error e = pm.addPipeline(pipeline)) {
    llvm::errs() << "pipeline '" << pipeline << "': " << llvm::toString(std::move(e)) << "\n";
    __builtin_trap();
  }
  if (llvm::Error e = pm.run(m)) {
    llvm::consumeError(std::move(e));
    return 0;
  }
  roundTrip(m, "after the passes");
  return 0;
}
