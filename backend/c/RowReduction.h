//===- backend/c/RowReduction.h - reductions along the last dims as row kernels -*- C++ -*-===//
//
// The kernel description of the reduction class, for reductions along the
// innermost dims (softmax and log_softmax along the last dim and
// softmax_grad, layer and RMS norm, reduce_sum/mean/max over trailing dims):
// the operands are `rows` rows of `length` elements, and each row goes
// through
//
//   stages   s_k = combine over j of f_k(operands at j, s_0 .. s_k-1)   (sum or max)
//   output   out[r, j] = g(operands at j, s_0 ..)   -- per element
//         or out[r]    = g(s_0 ..)                  -- per row (a reduction)
//
// with f_k and g formulas (ir/ops/Formula.h): inputs 0 .. n-1 are the
// operands' elements at (r, j) (a weight or bias of `length` elements is
// read at j alone), inputs n, n+1, ... the stage values. Stages accumulate in
// f64, element arithmetic is f32. The CPU flavour runs rows in parallel
// (OpenMP), the CUDA flavour one thread per row.
//
// Reductions along other dims (sum_to's leading dims, the norms' weight
// gradients summed over rows) and the cross-entropy pieces are not described
// yet.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_C_ROWREDUCTION_H
#define PLANC_BACKEND_C_ROWREDUCTION_H

#include "backend/c/CFamily.h"

namespace planc::backend {

enum class Combiner { Sum, Max };

struct RowStage {
  Combiner combiner = Combiner::Sum;
  ir::Formula value;
};

struct RowKernel {
  std::string name;
  ir::OpKind kind = ir::OpKind::NumOps;
  int64_t rows = 0, length = 0;
  std::vector<KernelBuffer> inputs;
  std::vector<bool> perColumn; // per input: `length` elements read at j
  std::vector<RowStage> stages;
  ir::Formula output;
  bool outputPerElement = true;
  KernelBuffer out;
  bool accumulate = false;
  std::string comment;
};

/// The row kernel of `kind` with `attrs` on these buffers; "" and `k`
/// filled, or why there is none.
std::string makeRowKernel(ir::OpKind kind, const ir::AttrMap &attrs, const std::vector<KernelBuffer> &inputs,
                          const KernelBuffer &output, RowKernel &k);

void renderRowKernel(const RowKernel &k, Flavor flavor, llvm::raw_ostream &os);

} // namespace planc::backend

#endif
