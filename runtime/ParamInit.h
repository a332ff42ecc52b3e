//===- runtime/ParamInit.h - the initial values of parameters -----*- C++ -*-===//
//
// A compiled plan starts from the numbers the interpreter starts from
// (ir::initialParams), so the two train the same model: element i of a
// normal-initialised parameter is std * z with z the cosine half of a
// Box-Muller draw from Philox (Philox.h) at counters 2i and 2i + 1, keyed by
// FNV-1a of the parameter's path xor SplitMix64 of the seed. Element i
// counts in the whole (global) value, so a rank holding a block draws that
// block of it. A unit test checks this against the interpreter's.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_PARAMINIT_H
#define PLANC_RUNTIME_PARAMINIT_H

#include <cstdint>
#include <string_view>

namespace planc::runtime {

/// The Philox key of the parameter keyed by `path` under `seed`.
uint64_t initKey(std::string_view path, uint64_t seed);

/// The standard normal draw of element `index` under `key`.
double initialNormal(uint64_t key, uint64_t index);

} // namespace planc::runtime

#endif
