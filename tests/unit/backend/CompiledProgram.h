//===- tests/unit/backend/CompiledProgram.h - build and run rendered kernels -*- C++ -*-===//
//
// What the kernel tests share: a scratch folder, tensors written and read as
// their dtype's bytes, and a generated program compiled by the compiler that
// builds planc (PLANC_TEST_CXX) and run in that folder.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_TESTS_UNIT_BACKEND_COMPILEDPROGRAM_H
#define PLANC_TESTS_UNIT_BACKEND_COMPILEDPROGRAM_H

#include "backend/interp/TensorAdapters.h"
#include "ir/Tensor.h"
#include "runtime/ElementBits.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace planc::testing {

class ScratchDir {
public:
  ScratchDir() {
    llvm::SmallString<128> d;
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("planc-kernels", d));
    path = std::string(d);
  }
  ~ScratchDir() { llvm::sys::fs::remove_directories(path); }
  std::string path;
};

/// `t`'s elements as its dtype's little-endian bytes, into `file`.
inline void writeTensor(const std::string &file, const ir::Tensor &t) {
  runtime::ElementType e = interp::toElementType(t.dtype);
  std::vector<char> bytes(t.data.size() * runtime::byteSize(e));
  runtime::encodeBuffer(e, t.data.data(), t.data.size(), bytes.data());
  std::ofstream(file, std::ios::binary).write(bytes.data(), long(bytes.size()));
}

/// The elements of `file` read as `like`'s dtype and shape; empty data when
/// the file has another size (the caller's size check reports it).
inline ir::Tensor readTensor(const std::string &file, const ir::Tensor &like) {
  std::ifstream f(file, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
  runtime::ElementType e = interp::toElementType(like.dtype);
  ir::Tensor t(like.shape, like.dtype);
  if (bytes.size() != t.data.size() * runtime::byteSize(e)) {
    t.data.clear();
    return t;
  }
  runtime::decodeBuffer(e, bytes.data(), t.data.size(), t.data.data());
  return t;
}

/// The source of a main() that reads files of `dir` (argv[1]) into byte
/// vectors; generated tests call their kernels on them.
inline const char *kReadFileHelper = "#include <fstream>\n#include <iterator>\n#include <string>\n#include <vector>\n"
                                     "static std::vector<char> readFile(const std::string &p) {\n"
                                     "  std::ifstream f(p, std::ios::binary);\n"
                                     "  return std::vector<char>(std::istreambuf_iterator<char>(f), {});\n}\n"
                                     "static void writeFile(const std::string &p, const std::vector<char> &b) {\n"
                                     "  std::ofstream(p, std::ios::binary).write(b.data(), long(b.size()));\n}\n";

/// The compiler's include path of the source tree (the rendered prelude
/// includes runtime/FastMath.h): $PLANC_SOURCE_DIR, else the tree this test
/// was built from.
inline std::string sourceInclude() {
  if (const char *root = std::getenv("PLANC_SOURCE_DIR")) return std::string("-I") + root;
  return std::string("-I") + PLANC_TEST_SOURCE_DIR;
}

/// Compiles `source` (with `libs` after it) and runs it with `dir` as its
/// argument; a failure is reported with the compiler's or program's words.
inline bool compileAndRun(const std::string &source, const std::string &dir, std::vector<std::string> libs = {}) {
  std::ofstream(dir + "/program.cpp") << source;
  auto cxx = llvm::sys::findProgramByName(PLANC_TEST_CXX);
  if (!cxx) {
    ADD_FAILURE() << "no C++ compiler '" << PLANC_TEST_CXX << "'";
    return false;
  }
  std::string exe = dir + "/program", err;
  // The generated code's flags (compiler/Build.cpp) that matter to it.
  // (-Wno-pass-failed: clang reports an `omp simd` loop it leaves scalar;
  // that is a missed speed-up, not an error in the code.)
  std::vector<std::string> words = {*cxx,    "-std=c++17", "-O2",           "-fopenmp", "-fno-math-errno",
                                    "-Wall",  "-Werror",    "-Wno-pass-failed", sourceInclude(),
                                    "-o",     exe,          dir + "/program.cpp"};
  words.insert(words.end(), libs.begin(), libs.end());
  std::vector<llvm::StringRef> args(words.begin(), words.end());
  if (llvm::sys::ExecuteAndWait(*cxx, args, llvm::None, {}, 0, 0, &err) != 0) {
    ADD_FAILURE() << "the rendered kernels do not compile: " << err << "\n" << source;
    return false;
  }
  if (llvm::sys::ExecuteAndWait(exe, {exe, dir}, llvm::None, {}, 0, 0, &err) != 0) {
    ADD_FAILURE() << "the compiled kernels failed: " << err;
    return false;
  }
  return true;
}

} // namespace planc::testing

#endif
