//===- tests/unit/backend/LaunchTest.cpp - starting a built executable -----===//
//
// The one launcher `planc run --target=cpu` and `planc calibrate` start
// programs through (backend/cpu/Launch.h): which mpirun a mesh needs, the
// command line it builds, and the output files a caller reads back. echo
// stands in for mpirun: it prints the command line it was given.
//
//===----------------------------------------------------------------------===//

#include "backend/cpu/Launch.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

using namespace planc;

namespace {

TEST(LaunchTest, OneRankNeedsNoLauncherAndAMeshNeedsMpirun) {
  auto none = cpu::findLauncher(1, "planc-no-such-mpirun");
  ASSERT_TRUE(bool(none)) << llvm::toString(none.takeError());
  EXPECT_EQ(*none, "");
  auto missing = cpu::findLauncher(4, "planc-no-such-mpirun");
  ASSERT_FALSE(bool(missing));
  EXPECT_EQ(llvm::toString(missing.takeError()),
            "running 4 ranks needs mpirun: cannot find 'planc-no-such-mpirun' (Debian: apt-get install openmpi-bin)");
}

TEST(LaunchTest, AMeshRunsUnderTheLauncherWithItsOutputInFiles) {
  auto echo = cpu::findLauncher(2, "echo");
  ASSERT_TRUE(bool(echo)) << llvm::toString(echo.takeError());
  llvm::SmallString<128> out;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("planc-launch", "out", out));
  cpu::LaunchOptions launch;
  launch.ranks = 2;
  launch.steps = 3;
  launch.stdoutFile = out.str().str();
  launch.secondsToWait = 60;
  auto status = cpu::launchExecutable("./model", *echo, launch);
  ASSERT_TRUE(bool(status)) << llvm::toString(status.takeError());
  EXPECT_EQ(*status, 0);
  auto text = llvm::MemoryBuffer::getFile(out);
  ASSERT_TRUE(bool(text));
  EXPECT_EQ((*text)->getBuffer(), "--oversubscribe -np 2 ./model --steps 3\n");
  llvm::sys::fs::remove(out);
}

} // namespace
