//===- tests/unit/passes/PassManagerTest.cpp - the reproducer of a failing pass ---===//
//
// A failing pass leaves a reproducer: the IR it was given. When the caller
// can make the pipeline's input again (PassManagerOptions::rebuildInput), a
// pipeline that succeeds never prints the module or rebuilds it; one that
// fails rebuilds it once, reruns the passes before the failing one and
// writes what they made. The pipeline `autodiff,autodiff` fails in its
// second pass (autodiff runs once), so the reproducer is the differentiated
// module, not the input.
//
//===----------------------------------------------------------------------===//

#include "passes/PassManager.h"

#include "ir/Parser.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

using namespace planc;

namespace {

const char *kScalarLoss = R"(module @m {
  param %w : f32[3] init normal(0.02) path "w"
  %l = reduce_sum(%w) {dims = [0], keepdim = false} : f32[]
  return %l as "loss"
}
)";

std::unique_ptr<ir::Module> parsed() {
  auto m = ir::parseIR(kScalarLoss);
  EXPECT_TRUE(bool(m)) << llvm::toString(m.takeError());
  return std::move(*m);
}

struct ReproducerDir {
  llvm::SmallString<128> path;
  ReproducerDir() { EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("planc-pm-test", path)); }
  ~ReproducerDir() { llvm::sys::fs::remove_directories(path); }
  std::string file(const std::string &pass) const {
    llvm::SmallString<128> f(path);
    llvm::sys::path::append(f, "planc-reproducer-" + pass + ".ir");
    return std::string(f.str());
  }
};

TEST(PassManager, SucceedingPipelineNeverRebuildsItsInput) {
  ReproducerDir dir;
  int rebuilt = 0;
  PassManagerOptions o;
  o.reproducerDir = std::string(dir.path.str());
  o.rebuildInput = [&] {
    ++rebuilt;
    return parsed();
  };
  PassManager pm(o);
  ASSERT_FALSE(bool(pm.addPipeline("autodiff")));
  auto m = parsed();
  llvm::Error e = pm.run(*m);
  EXPECT_FALSE(bool(e)) << llvm::toString(std::move(e));
  EXPECT_EQ(rebuilt, 0);
  EXPECT_FALSE(llvm::sys::fs::exists(dir.file("autodiff")));
}

TEST(PassManager, FailingPassReproducesFromTheRebuiltInput) {
  for (bool rebuild : {false, true}) {
    ReproducerDir dir;
    int rebuilt = 0;
    PassManagerOptions o;
    o.reproducerDir = std::string(dir.path.str());
    if (rebuild)
      o.rebuildInput = [&] {
        ++rebuilt;
        return parsed();
      };
    PassManager pm(o);
    ASSERT_FALSE(bool(pm.addPipeline("autodiff,autodiff")));
    auto m = parsed();
    llvm::Error e = pm.run(*m);
    ASSERT_TRUE(bool(e));
    std::string message = llvm::toString(std::move(e));
    EXPECT_NE(message.find("internal error in pass 'autodiff'"), std::string::npos) << message;
    EXPECT_NE(message.find(dir.file("autodiff")), std::string::npos) << message;
    EXPECT_EQ(rebuilt, rebuild ? 1 : 0);
    // The reproducer is what the second autodiff was given: the first's output.
    auto text = llvm::MemoryBuffer::getFile(dir.file("autodiff"));
    ASSERT_TRUE(bool(text));
    llvm::StringRef ir = (*text)->getBuffer();
    EXPECT_TRUE(ir.contains("%grad.loss")) << ir.str();
    auto reparsed = ir::parseIR(ir);
    EXPECT_TRUE(bool(reparsed)) << llvm::toString(reparsed.takeError());
  }
}

TEST(PassManager, UnrebuildableInputWritesNoReproducer) {
  ReproducerDir dir;
  PassManagerOptions o;
  o.reproducerDir = std::string(dir.path.str());
  o.rebuildInput = [] { return std::unique_ptr<ir::Module>(); };
  PassManager pm(o);
  ASSERT_FALSE(bool(pm.addPipeline("autodiff,autodiff")));
  auto m = parsed();
  llvm::Error e = pm.run(*m);
  ASSERT_TRUE(bool(e));
  std::string message = llvm::toString(std::move(e));
  EXPECT_EQ(message.find("rerun with"), std::string::npos) << message;
  EXPECT_FALSE(llvm::sys::fs::exists(dir.file("autodiff")));
}

} // namespace
