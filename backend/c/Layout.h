//===- backend/c/Layout.h - data movement as strided gathers ---*- C++ -*-===//
//
// The kernel description of the data-movement class: transpose, slice, pad,
// reshape, broadcast_to and fill move or make elements without arithmetic,
// so each is one gather
//
//   out[i] = i's coordinate along `window` in [lo, hi) ? in[base + sum_d c_d * stride_d] : fill
//
// with c_d the coordinates of result index i, one input stride per result
// dim (0 where broadcast, permuted for a transpose) and the window of a pad.
// Elements are moved as their bits (an integer of the dtype's width), so
// every dtype is exact; fill's value is encoded to its dtype's bits when the
// kernel is made (runtime/ElementBits.h, the interpreter's rounding).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_C_LAYOUT_H
#define PLANC_BACKEND_C_LAYOUT_H

#include "backend/c/CFamily.h"

namespace planc::backend {

struct LayoutKernel {
  std::string name;
  ir::OpKind kind = ir::OpKind::NumOps;
  bool hasInput = true;         // fill has none
  KernelBuffer input, output;
  std::vector<int64_t> strides; // per result dim, in input elements
  int64_t base = 0;
  int window = -1;              // pad: the result dim with the window
  int64_t lo = 0, hi = 0;
  uint64_t fillBits = 0;        // outside the window, or fill's value
  std::string comment;
};

/// The gather of `kind` with `attrs` on these buffers; "" and `k` filled, or
/// why there is none ("not data movement").
std::string makeLayoutKernel(ir::OpKind kind, const ir::AttrMap &attrs, const KernelBuffer *input,
                             const KernelBuffer &output, LayoutKernel &k);

/// `k.name(const void *in, void *out)` (fill: `k.name(void *out)`), CPU or
/// CUDA flavour.
void renderLayoutKernel(const LayoutKernel &k, Flavor flavor, llvm::raw_ostream &os);

} // namespace planc::backend

#endif
