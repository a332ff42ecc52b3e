//===- numerics/Philox.cpp - Philox4x32-10 ---------------------------------===//

#include "numerics/Philox.h"

std::array<uint32_t, 4> planc::numerics::philox4x32(std::array<uint32_t, 4> c, uint64_t key) {
  constexpr uint32_t kMul0 = 0xD2511F53, kMul1 = 0xCD9E8D57;
  constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(kMul0) * c[0], p1 = uint64_t(kMul1) * c[2];
    uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    c = {hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0};
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return c;
}

double planc::numerics::philoxUniform(uint64_t key, uint64_t counter) {
  std::array<uint32_t, 4> r = philox4x32({uint32_t(counter), uint32_t(counter >> 32), 0, 0}, key);
  // Every double in [0, 1) with spacing 2^-53, so 1 - u is never 0.
  uint64_t bits = (uint64_t(r[1]) << 32) | r[0];
  return double(bits >> 11) * 0x1.0p-53;
}
