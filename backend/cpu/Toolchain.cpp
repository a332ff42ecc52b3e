//===- backend/cpu/Toolchain.cpp - C++ into an executable -----------------===//

#include "backend/cpu/Toolchain.h"

#include "support/Error.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cstdlib>
#include <string>
#include <vector>

using namespace planc;

// Where this build's runtime, compiler and libraries are (backend/cpu/CMakeLists.txt).
#ifndef PLANC_RUNTIME_INCLUDE_DIR
#define PLANC_RUNTIME_INCLUDE_DIR ""
#endif
#ifndef PLANC_RUNTIME_LIBRARY
#define PLANC_RUNTIME_LIBRARY ""
#endif
#ifndef PLANC_NUMERICS_LIBRARY
#define PLANC_NUMERICS_LIBRARY ""
#endif
#ifndef PLANC_RUNTIME_EXTRA_FLAGS
#define PLANC_RUNTIME_EXTRA_FLAGS ""
#endif
#ifndef PLANC_RUNTIME_CXX
#define PLANC_RUNTIME_CXX "c++"
#endif
#ifndef PLANC_BLAS_LIBRARIES
#define PLANC_BLAS_LIBRARIES "-lopenblas"
#endif
#ifndef PLANC_MPI_LIBRARIES
#define PLANC_MPI_LIBRARIES ""
#endif

llvm::Error cpu::compileCppProgram(const std::string &source, const std::string &sourceName,
                                   const backend::ToolchainOptions &options, llvm::raw_ostream &log) {
  // The toolchain: the compiler and where the runtime is.
  std::string cxx = options.cxx;
  if (cxx.empty()) {
    const char *env = std::getenv("CXX");
    cxx = env && *env ? env : PLANC_RUNTIME_CXX;
  }
  auto cxxPath = llvm::sys::findProgramByName(cxx);
  if (!cxxPath) return makeError("cannot find the C++ compiler '" + cxx + "' (set CXX, or install g++)");
  const std::string include = options.runtimeInclude.empty() ? PLANC_RUNTIME_INCLUDE_DIR : options.runtimeInclude;
  const std::string library = options.runtimeLibrary.empty() ? PLANC_RUNTIME_LIBRARY : options.runtimeLibrary;
  if (!llvm::sys::fs::exists(include + "/runtime/Executable.h"))
    return makeError("cannot find the planc runtime's headers (runtime/Executable.h) under '" + include + "'");
  if (!llvm::sys::fs::exists(library)) return makeError("cannot find the planc runtime library '" + library + "'");
  // The runtime's numerics (element types, rounding, Philox: numerics/) are
  // their own library, installed beside the runtime's.
  std::string numerics = PLANC_NUMERICS_LIBRARY;
  if (!options.runtimeLibrary.empty()) {
    llvm::SmallString<256> beside(llvm::sys::path::parent_path(library));
    llvm::sys::path::append(beside, "libplanc_numerics.a");
    numerics = beside.str().str();
  }
  if (!llvm::sys::fs::exists(numerics)) return makeError("cannot find the planc numerics library '" + numerics + "'");

  // The source beside the output (removed afterwards unless kept), the
  // executable to a temporary name renamed into place.
  const std::string cppPath = options.output + ".cpp";
  const std::string tmpCpp = options.keepSource ? cppPath : options.output + ".planc-tmp.cpp";
  const std::string tmpExe = options.output + ".planc-tmp";
  {
    std::error_code ec;
    llvm::raw_fd_ostream f(tmpCpp, ec);
    if (ec) return makeError("cannot write '" + tmpCpp + "': " + ec.message());
    f << source;
    f.close();
    if (f.has_error()) return makeError("cannot write '" + tmpCpp + "': " + f.error().message());
  }
  if (options.optLevel < 0 || options.optLevel > 3)
    return makeError("the optimisation level must be 0 to 3, not " + std::to_string(options.optLevel));
  // -fno-math-errno: the kernels never read errno, and with it set libm's
  // sqrtf is a call on a branch for negative operands, so a loop over it (an
  // AdamW update) does not vectorise -- 2.5x slower. Results do not change.
  std::vector<std::string> args = {*cxxPath, "-std=c++17", "-O" + std::to_string(options.optLevel), "-fopenmp",
                                   "-fno-math-errno", "-w"};
  if (options.native) args.push_back("-march=native");
  // This build's runtime library's own needs (a sanitized build's).
  if (options.runtimeLibrary.empty())
    for (llvm::StringRef flag : llvm::split(llvm::StringRef(PLANC_RUNTIME_EXTRA_FLAGS), ' '))
      if (!flag.empty()) args.push_back(flag.str());
  args.insert(args.end(), {"-I" + include, tmpCpp, library, numerics});
  // OpenBLAS (the OpenMP-threaded one where this planc was built with it).
  for (llvm::StringRef lib : llvm::split(llvm::StringRef(PLANC_BLAS_LIBRARIES), ' '))
    if (!lib.empty()) args.push_back(lib.str());
  // MPI, which the runtime's communicator calls (the libraries this planc was built with).
  for (llvm::StringRef lib : llvm::split(llvm::StringRef(PLANC_MPI_LIBRARIES), ' '))
    if (!lib.empty()) args.push_back(lib.str());
  args.insert(args.end(), {"-o", tmpExe});
  std::vector<llvm::StringRef> argv(args.begin(), args.end());
  llvm::SmallString<128> errPath;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("planc-build", "log", errPath))
    return makeError("cannot create a temporary file: " + ec.message());
  log << "planc build: compiling " << (source.size() / 1024) << " KiB of C++ with " << cxx << "\n";
  log.flush();
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::None, llvm::StringRef(errPath), llvm::StringRef(errPath)};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(*cxxPath, argv, llvm::None, redirects, 0, 0, &execError);
  std::string compilerOutput;
  if (auto buf = llvm::MemoryBuffer::getFile(errPath)) compilerOutput = (*buf)->getBuffer().str();
  llvm::sys::fs::remove(errPath);
  if (!options.keepSource) llvm::sys::fs::remove(tmpCpp);
  if (rc != 0) {
    llvm::sys::fs::remove(tmpExe);
    if (compilerOutput.size() > 4000) compilerOutput = "...\n" + compilerOutput.substr(compilerOutput.size() - 4000);
    return makeError("the C++ compiler failed" + (execError.empty() ? "" : " (" + execError + ")") + " on the code of '" +
                     sourceName + "':\n" + compilerOutput);
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmpExe, options.output)) {
    llvm::sys::fs::remove(tmpExe);
    return makeError("cannot write '" + options.output + "': " + ec.message());
  }
  return llvm::Error::success();
}
