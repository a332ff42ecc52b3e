//===- numerics/Philox.h - the counter-based random numbers of planc -*- C++ -*-===//
//
// Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3",
// SC11), the counter-based generator of cuRAND and PyTorch's CUDA RNG. The
// interpreter's dropout and initialisation and the executables' data sources,
// dropout and initialisation all draw from this one definition, so a number
// depends only on its key and counter, never on the order of calls or on who
// draws it.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_NUMERICS_PHILOX_H
#define PLANC_NUMERICS_PHILOX_H

#include <array>
#include <cstdint>

namespace planc::numerics {

/// The four output words of Philox4x32-10 for a 128-bit counter and a 64-bit
/// key (the two key words, low first), ten rounds, as Random123's.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, uint64_t key);

/// A uniform double in [0, 1) with spacing 2^-53 from (key, counter): the
/// 64-bit counter fills counter words 0 and 1 (low first), words 2 and 3 are
/// zero; the value is the top 53 bits of output words 0 (low) and 1 (high).
/// 1 - u is never 0.
double philoxUniform(uint64_t key, uint64_t counter);

} // namespace planc::numerics

#endif
