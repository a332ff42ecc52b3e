//===- runtime/Crc32c.cpp - the CRC-32C checksum --------------------------===//

#include "runtime/Crc32c.h"

#include <array>
#include <cstring>

using namespace planc::runtime;

namespace {

constexpr uint32_t kPolynomial = 0x82f63b78; // CRC-32C, reflected

/// Slicing-by-8 tables: table[k][b] is the CRC of byte b followed by k zero bytes.
struct Tables {
  uint32_t table[8][256];
  Tables() {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t c = b;
      for (int i = 0; i < 8; ++i) c = (c >> 1) ^ (kPolynomial & (0u - (c & 1)));
      table[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; ++b)
      for (int k = 1; k < 8; ++k) table[k][b] = (table[k - 1][b] >> 8) ^ table[0][table[k - 1][b] & 0xff];
  }
};

uint32_t crcTable(uint32_t crc, const uint8_t *p, size_t n) {
  static const Tables t;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8); // little-endian machines only, as the rest of the runtime
    word ^= crc;
    crc = t.table[7][word & 0xff] ^ t.table[6][(word >> 8) & 0xff] ^ t.table[5][(word >> 16) & 0xff] ^
          t.table[4][(word >> 24) & 0xff] ^ t.table[3][(word >> 32) & 0xff] ^ t.table[2][(word >> 40) & 0xff] ^
          t.table[1][(word >> 48) & 0xff] ^ t.table[0][word >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ t.table[0][(crc ^ *p++) & 0xff];
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crcHardware(uint32_t crc, const uint8_t *p, size_t n) {
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = uint32_t(c);
  while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}

bool hasHardware() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

} // namespace

uint32_t planc::runtime::crc32c(uint32_t crc, const void *data, size_t size) {
  const auto *p = static_cast<const uint8_t *>(data);
  crc = ~crc;
#if defined(__x86_64__)
  if (hasHardware()) return ~crcHardware(crc, p, size);
#endif
  return ~crcTable(crc, p, size);
}

std::string planc::runtime::crc32cText(uint32_t crc) {
  static const char digits[] = "0123456789abcdef";
  std::string s(8, '0');
  for (int i = 7; i >= 0; --i, crc >>= 4) s[size_t(i)] = digits[crc & 0xf];
  return s;
}

std::optional<uint32_t> planc::runtime::parseCrc32cText(std::string_view text) {
  if (text.size() != 8) return std::nullopt;
  uint32_t v = 0;
  for (char c : text) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v << 4 | uint32_t(d);
  }
  return v;
}
