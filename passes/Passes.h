//===- passes/Passes.h - the factories of every pass ------------*- C++ -*-===//
#ifndef PLANC_PASSES_PASSES_H
#define PLANC_PASSES_PASSES_H

#include "passes/Pass.h"

namespace planc {

/// Removes ops with no used results (and no side effects: sends and
/// collectives stay) and folds reshapes to the same shape and casts to the
/// same dtype. Needs: a verified module. Keeps: outputs and their values.
std::unique_ptr<Pass> createCanonicalizePass();

} // namespace planc

#endif
