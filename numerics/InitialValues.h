//===- numerics/InitialValues.h - the initial values of parameters -*- C++ -*-===//
//
// The draws a normal-initialised parameter starts from, for the interpreter
// (ir::initialParams) and the executables (runtime/Executable.h) alike, so
// the two train the same model: element i is std * z with z the cosine half
// of a Box-Muller draw from Philox (Philox.h) at counters 2i and 2i + 1,
// keyed by FNV-1a of the parameter's path xor SplitMix64 of the seed.
// Element i counts in the whole (global) value, so a rank holding a block
// draws that block of it.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_NUMERICS_INITIALVALUES_H
#define PLANC_NUMERICS_INITIALVALUES_H

#include <cstdint>
#include <string_view>

namespace planc::numerics {

/// The Philox key of the parameter keyed by `path` under `seed`: FNV-1a (a
/// hash stable across library versions, as std::hash is not) of the path,
/// xor SplitMix64's finaliser of the seed (which spreads its bits).
uint64_t initKey(std::string_view path, uint64_t seed);

/// The standard normal draw of element `index` under `key`.
double initialNormal(uint64_t key, uint64_t index);

} // namespace planc::numerics

#endif
