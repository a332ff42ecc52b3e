//===- runtime/CpuKernels.cpp - the library kernels' error channel ---------===//
//
// The one part of runtime/kernels/cpu/ that is not header-only.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Common.h"

#include <mutex>

namespace {

std::mutex errorLock;
std::string firstError;

} // namespace

void planc::cpu::kernelError(const std::string &message) {
  std::lock_guard<std::mutex> hold(errorLock);
  if (firstError.empty()) firstError = message;
}

std::string planc::cpu::takeKernelError() {
  std::lock_guard<std::mutex> hold(errorLock);
  std::string e;
  e.swap(firstError);
  return e;
}
