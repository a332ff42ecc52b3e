//===- runtime/Crc32c.h - the CRC-32C checksum of checkpoint bytes -*- C++ -*-===//
//
// CRC-32C (Castagnoli, the polynomial of iSCSI, ext4 and RocksDB): every
// single-bit and double-bit error and every burst of up to 32 bits in a
// file of any size checkpoints are is detected, and any other corruption
// is missed with probability 2^-32. x86-64's SSE 4.2 computes it in
// hardware (several GB/s, far above a disk's speed); other machines use a
// table, eight bytes a round. docs/checkpoints.md says what it covers.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_CRC32C_H
#define PLANC_RUNTIME_CRC32C_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace planc::runtime {

/// The CRC-32C of `size` bytes at `data`, continuing `crc` (the CRC of the
/// bytes before them; 0 for none): crc32c(crc32c(0, a), b) == crc32c(0, ab).
uint32_t crc32c(uint32_t crc, const void *data, size_t size);

inline uint32_t crc32c(std::string_view bytes) { return crc32c(0, bytes.data(), bytes.size()); }

/// "e3069283": eight lower-case hex digits, as checkpoints record it.
std::string crc32cText(uint32_t crc);

/// The value of eight hex digits; nullopt for anything else.
std::optional<uint32_t> parseCrc32cText(std::string_view text);

} // namespace planc::runtime

#endif
