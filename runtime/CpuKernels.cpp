//===- runtime/CpuKernels.cpp - the library kernels' error channel ---------===//

#include "runtime/CpuKernels.h"

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
