//===- backend/c/RowReduction.h - reductions along the last dims as row kernels -*- C++ -*-===//
//
// The row kernels of the reduction class, for reductions along the
// innermost dims (softmax and log_softmax along the last dim and
// softmax_grad, layer and RMS norm, reduce_sum/mean/max over trailing dims):
// the operands are `rows` rows of `length` elements, and each row goes
// through
//
//   stages   s_k = combine over j of f_k(operands at j, s_0 .. s_k-1)   (sum or max)
//   output   out[r, j] = g(operands at j, s_0 ..)   -- per element
//         or out[r]    = g(s_0 ..)                  -- per row (a reduction)
//
// with f_k and g formulas (ir/ops/Formula.h), which each op declares
// (KernelDesc::rowReduction, ir/KernelDesc.h): inputs 0 .. n-1 are the
// operands' elements at (r, j) (a weight or bias of `length` elements is
// read at j alone), inputs n, n+1, ... the stage values. Stages accumulate in
// f64, element arithmetic is f32. The CPU flavour runs rows in parallel
// (OpenMP), the CUDA flavour one thread per row.
//
// sum_to (a sum over broadcast dims, any of them) is a SumToKernel below.
// The norms' gradients (their weight gradients sum over rows) and the
// cross-entropy pieces are not described yet.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_C_ROWREDUCTION_H
#define PLANC_BACKEND_C_ROWREDUCTION_H

#include "backend/c/CFamily.h"
#include "ir/KernelDesc.h"

namespace planc::backend {

using ir::Combiner;
using ir::RowStage;

/// The op's row reduction (its stages and output, declared with the op:
/// ir/KernelDesc.h) on these buffers.
struct RowKernel : ir::RowReduction {
  std::string name;
  ir::OpKind kind = ir::OpKind::NumOps;
  std::vector<KernelBuffer> inputs;
  KernelBuffer out;
  bool accumulate = false;
  std::string comment;
  /// A folded elementwise step (backend::RenderOptions::foldProducers):
  /// operand 0 (f32) is `prologue` of `prologueInputs` (each of operand 0's
  /// shape, read at the same element, or a row's length, read at the
  /// column), computed in the first pass over a
  /// row and written to operand 0's buffer, which the later passes read.
  /// The kernel takes them after its operands.
  std::shared_ptr<const ir::Formula> prologue;
  std::vector<KernelBuffer> prologueInputs;
};

/// sum_to (and reduce_sum over any dims): each result element sums, in f64
/// and in the interpreter's order, the operand's elements that broadcast to
/// it -- the result's coordinates fixed, the reduced dims enumerated
/// row-major. Result elements run in parallel.
struct SumToKernel {
  std::string name;
  ir::OpKind kind = ir::OpKind::NumOps;
  KernelBuffer input, output;
  Shape aligned; // the result's shape aligned at the right to the operand's rank (1 where absent)
  bool accumulate = false;
  std::string comment;
};

/// The sum of `input` to `output`'s shape (an op with a sum over dims,
/// KernelDesc::sumDims: sum_to, or reduce_sum whose result keeps or drops
/// the dims); "" and `k` filled, or why not.
std::string makeSumToKernel(ir::OpKind kind, const ir::AttrMap &attrs, const KernelBuffer &input,
                            const KernelBuffer &output, SumToKernel &k);
void renderSumToKernel(const SumToKernel &k, const CLanguage &lang, llvm::raw_ostream &os);

/// The row kernel of `kind` with `attrs` on these buffers (the op's rule,
/// on buffers of a dtype it renders); "" and `k` filled, or why there is
/// none.
std::string makeRowKernel(ir::OpKind kind, const ir::AttrMap &attrs, const std::vector<KernelBuffer> &inputs,
                          const KernelBuffer &output, RowKernel &k);

void renderRowKernel(const RowKernel &k, const CLanguage &lang, llvm::raw_ostream &os);

} // namespace planc::backend

#endif
