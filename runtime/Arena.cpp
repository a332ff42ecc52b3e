//===- runtime/Arena.cpp - aligned, poisoned storage ---------------------===//

#include "runtime/Arena.h"

#include <cstring>
#include <new>

using namespace planc::runtime;

void Arena::Free::operator()(uint8_t *p) const { ::operator delete[](p, std::align_val_t(kAlignment)); }

Arena::Arena(uint64_t bytes) : bytes(bytes) {
  // One byte at least, so data() is a valid aligned pointer even when empty.
  storage.reset(static_cast<uint8_t *>(::operator new[](size_t(bytes ? bytes : 1), std::align_val_t(kAlignment))));
  poison();
}

void Arena::poison() { std::memset(storage.get(), kPoison, size_t(bytes)); }
