//===- runtime/Arena.cpp - aligned, poisoned storage ---------------------===//

#include "runtime/Arena.h"

#include <cstring>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

using namespace planc::runtime;

void Arena::Free::operator()(uint8_t *p) const { ::operator delete[](p, std::align_val_t(alignment)); }

namespace {
constexpr uint64_t kHugePage = uint64_t(2) << 20;
size_t alignmentFor(uint64_t bytes) { return bytes >= 2 * kHugePage ? size_t(kHugePage) : size_t(Arena::kAlignment); }
} // namespace

Arena::Arena(uint64_t bytes)
    // One byte at least, so data() is a valid aligned pointer even when empty.
    : storage(static_cast<uint8_t *>(
                  ::operator new[](size_t(bytes ? bytes : 1), std::align_val_t(alignmentFor(bytes)))),
              Free{alignmentFor(bytes)}),
      bytes(bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Before the first touch (poison below), so the pages are made huge.
  // Advice only: where huge pages are off, nothing changes.
  if (alignmentFor(bytes) == kHugePage) ::madvise(storage.get(), size_t(bytes), MADV_HUGEPAGE);
#endif
  poison();
}

void Arena::poison() { std::memset(storage.get(), kPoison, size_t(bytes)); }
