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
// Each op declares its gather in the op table (ir/KernelDesc.h's Gather,
// from its family in ir/ops/); this file renders it. Elements are moved as
// their bits (an integer of the dtype's width), so every dtype is exact;
// fill's value is encoded to its dtype's bits when the kernel is made
// (runtime/ElementBits.h, the interpreter's rounding).
//
// Two ops of a multi-rank program are gathers whose source depends on the
// rank (RankPlace.h's planc_mesh_coord): shard_slice keeps the rank's rows
// of its operand, which start at a place known only when it runs (the
// window's `shift`), and stage_merge copies the operand of the rank's
// pipeline stage. A step that accumulates (micro-batches summed into one
// gradient) adds each moved element to the result's; that is arithmetic,
// so only for the float dtypes, through CFamily's loads and stores (an
// addition of two values of the dtype, rounded once: exact as the
// interpreter's f64 sum rounded to the dtype).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_C_LAYOUT_H
#define PLANC_BACKEND_C_LAYOUT_H

#include "backend/c/CFamily.h"
#include "backend/c/RankPlace.h"

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
  /// shard_slice: a C expression of the rank's place added to the window
  /// dim's coordinate before it is read (the window is then [lo, hi) of
  /// the input's rows); "" for none.
  std::string shift;
  /// stage_merge: one operand per pipeline stage, of which the kernel reads
  /// planc_mesh_coord[pp]'s; 0 for the other gathers (one operand).
  int stageOperands = 0;
  bool accumulate = false;      // out += the moved element (float dtypes)
  std::string comment;
};

/// The gather of `kind` with `attrs` on these buffers, as its op table entry
/// describes it (KernelDesc::gather); "" and `k` filled, or why there is
/// none ("not data movement").
std::string makeLayoutKernel(ir::OpKind kind, const ir::AttrMap &attrs, const KernelBuffer *input,
                             const KernelBuffer &output, LayoutKernel &k);

/// shard_slice of `input` (a block of a value of type `from`) to `output`
/// (the rank's block of `to`, the same value split along `dim` over one more
/// axis): the rows of the operand's block from the result's offset in it,
/// those past the operand's end zeros (the padding of an uneven split), as
/// ir/ops/Collective.cpp's evalShardSlice.
std::string makeShardSliceKernel(const ir::AttrMap &attrs, const ir::TensorType &from, const ir::TensorType &to,
                                 const KernelBuffer &input, const KernelBuffer &output, const MeshSizes &mesh,
                                 LayoutKernel &k);

/// stage_merge of `stages` operands of the result's dtype and shape: a copy
/// of the one of the rank's pipeline stage.
std::string makeStageMergeKernel(int stages, const KernelBuffer &output, LayoutKernel &k);

/// "" when `k` may add to its result (`k.accumulate` set), else why not.
std::string accumulateLayout(LayoutKernel &k);

/// `k.name(const void *in, void *out)` (fill: `k.name(void *out)`; stage_merge
/// `k.name(const void *in0, ..., const void *in<stages-1>, void *out)`, the
/// operands of other stages may be null), CPU or CUDA flavour.
void renderLayoutKernel(const LayoutKernel &k, const CLanguage &lang, llvm::raw_ostream &os);

} // namespace planc::backend

#endif
