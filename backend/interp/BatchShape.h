//===- backend/interp/BatchShape.h - the batch a model's inputs want -*- C++ -*-===//
//
// The data sources (runtime/Data.h) fill a batch of a shape they are given;
// which shape a model wants is read off its IR, so it is done here, beside
// the interpreter, and not in runtime/.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_INTERP_BATCHSHAPE_H
#define PLANC_BACKEND_INTERP_BATCHSHAPE_H

#include "ir/IR.h"
#include "runtime/Data.h"

#include "llvm/Support/Error.h"

namespace planc::interp {

/// The model's token inputs: `input tokens : i32[batch, seq]` and `input
/// targets` of the same type, and the vocabulary of the embedding table the
/// tokens index. Any other shape of model is an error saying what is needed.
llvm::Expected<runtime::BatchShape> batchShapeOf(const ir::Module &m);

} // namespace planc::interp

#endif
