//===- tests/unit/ir/IRExamplesTest.cpp - every example's IR round-trips -----===//
//
// The property the textual IR promises, on real modules: for the lowered IR
// of every plan in examples/, print(parse(print(m))) == print(m), and the
// parsed module verifies like the lowered one; and a clone of the training
// step and of the partitioned step prints the same text and verifies.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"
#include "frontend/Frontend.h"
#include "frontend/Verify.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

using namespace planc;

namespace {

std::vector<std::string> examplePlans() {
  // The build passes the source tree's location; the environment may override it.
  const char *root = std::getenv("PLANC_SOURCE_DIR");
  if (!root) root = PLANC_SOURCE_DIR;
  std::vector<std::string> plans;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(std::string(root) + "/examples", ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".plan") plans.push_back(it->path());
  std::sort(plans.begin(), plans.end());
  return plans;
}

TEST(IRExamplesTest, EveryExampleRoundTripsAndVerifies) {
  std::vector<std::string> plans = examplePlans();
  ASSERT_FALSE(plans.empty());
  for (const std::string &plan : plans) {
    SCOPED_TRACE(plan);
    Compilation c;
    c.setDiagnosticConsumer(std::make_unique<CollectingConsumer>());
    ASSERT_TRUE(c.loadFile(plan) && c.check());
    std::unique_ptr<ir::Module> lowered = lowerToIR(c);
    ASSERT_TRUE(lowered);
    llvm::Error lowerError = ir::verify(*lowered);
    EXPECT_FALSE(bool(lowerError)) << llvm::toString(std::move(lowerError));

    std::string text = ir::toText(*lowered);
    auto parsed = ir::parseIR(text, plan + ".ir");
    ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
    EXPECT_EQ(ir::toText(**parsed), text);
    llvm::Error e = ir::verify(**parsed);
    EXPECT_FALSE(bool(e)) << llvm::toString(std::move(e));
  }
}

void expectCloneSameAndVerifies(const ir::Module &original) {
  std::unique_ptr<ir::Module> copy = original.clone();
  ASSERT_TRUE(copy);
  EXPECT_EQ(ir::toText(*copy), ir::toText(original));
  llvm::Error e = ir::verify(*copy);
  EXPECT_FALSE(bool(e)) << llvm::toString(std::move(e));
}

TEST(IRExamplesTest, EveryExampleStepClonesToTheSameText) {
  std::vector<std::string> plans = examplePlans();
  ASSERT_FALSE(plans.empty());
  for (const std::string &plan : plans) {
    SCOPED_TRACE(plan);
    Compilation c;
    c.setDiagnosticConsumer(std::make_unique<CollectingConsumer>());
    ASSERT_TRUE(c.loadFile(plan) && c.check());
    CompileOptions options;
    options.passes.reproducerDir = "";
    // The clones are the subject: the IR is verified after the passes and
    // after cloning, not after each pass (as the lit suite does), which was
    // most of this test's time under the sanitizers.
    options.passes.verifyEach = false;
    options.stopAfter = CompileStage::TrainingStep;
    options.batch = BatchScope::MicroBatch;
    auto step = planc::compile(c, options);
    ASSERT_TRUE(bool(step)) << llvm::toString(step.takeError());
    ASSERT_TRUE(step->module);
    expectCloneSameAndVerifies(*step->module);
    // One micro-batch's placed step (--emit=ir-partitioned).
    options.stopAfter = CompileStage::Partitioned;
    auto placed = planc::compile(c, options);
    ASSERT_TRUE(bool(placed)) << llvm::toString(placed.takeError());
    ASSERT_TRUE(placed->module);
    expectCloneSameAndVerifies(*placed->module);
  }
}

} // namespace
