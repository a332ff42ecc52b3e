//===- numerics/InitialValues.cpp - the initial values of parameters ------===//

#include "numerics/InitialValues.h"
#include "numerics/Philox.h"

#include <cmath>

uint64_t planc::numerics::initKey(std::string_view path, uint64_t seed) {
  uint64_t h = 0xcbf29ce484222325ull; // FNV-1a
  for (unsigned char c : path) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  uint64_t x = seed + 0x9e3779b97f4a7c15ull; // SplitMix64's finaliser
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return h ^ (x ^ (x >> 31));
}

double planc::numerics::initialNormal(uint64_t key, uint64_t index) {
  double u1 = philoxUniform(key, 2 * index), u2 = philoxUniform(key, 2 * index + 1);
  return std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * M_PI * u2);
}
