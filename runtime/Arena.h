//===- runtime/Arena.h - the one block of memory a rank's buffers live in -*- C++ -*-===//
//
// The execution plan places every buffer of a rank at a fixed offset of one
// arena (exec/ExecutionPlan.h); this is that arena on the host. Its storage is
// 64-byte aligned, the alignment of every buffer's offset.
//
// An arena of 4 MiB or more is aligned to 2 MiB and asks the kernel for huge
// pages (madvise; Linux's transparent huge pages are often "madvise" only):
// a 2 GB arena in 4 KiB pages misses the TLB on nearly every row a GEMM or an
// optimizer update streams through.
//
// Fresh and after poison() every byte is 0xFF: in every float type that is a
// NaN (f64, f32, bf16, f16, fp8_e4m3, fp8_e5m2 alike), so a step that reads
// bytes no step wrote shows up as NaN in its result instead of passing with
// a stale or zero value.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_ARENA_H
#define PLANC_RUNTIME_ARENA_H

#include <cstdint>
#include <memory>

namespace planc::runtime {

class Arena {
public:
  static constexpr uint64_t kAlignment = 64;
  static constexpr uint8_t kPoison = 0xFF;

  /// `bytes` of storage, every one kPoison. Throws std::bad_alloc when the
  /// host has not that much memory.
  explicit Arena(uint64_t bytes);

  uint8_t *data() { return storage.get(); }
  const uint8_t *data() const { return storage.get(); }
  uint64_t size() const { return bytes; }
  /// Sets every byte to kPoison again (between steps, to catch reads of
  /// what the last step left).
  void poison();

private:
  struct Free {
    size_t alignment = kAlignment;
    void operator()(uint8_t *p) const;
  };
  std::unique_ptr<uint8_t[], Free> storage;
  uint64_t bytes = 0;
};

} // namespace planc::runtime

#endif
