//===- runtime/Philox.h - the counter-based random numbers of planc -*- C++ -*-===//
//
// Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3",
// SC11), the counter-based generator of cuRAND and PyTorch's CUDA RNG: the
// data sources and dropout draw from it, so a number depends only on its key
// and counter, never on the order of calls. The interpreter has the same
// generator (ir::EvalContext::philoxUniform); a unit test checks they agree.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_PHILOX_H
#define PLANC_RUNTIME_PHILOX_H

#include <array>
#include <cstdint>

namespace planc::runtime {

/// The four output words of Philox4x32-10 for a 128-bit counter and a 64-bit
/// key (the two key words, low first), ten rounds.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, uint64_t key);

/// A uniform double in [0, 1) with spacing 2^-53 from (key, counter): the
/// 64-bit counter fills counter words 0 and 1 (low first), the value is the
/// top 53 bits of output words 0 (low) and 1 (high).
double philoxUniform(uint64_t key, uint64_t counter);

} // namespace planc::runtime

#endif
