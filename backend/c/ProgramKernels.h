//===- backend/c/ProgramKernels.h - the kernel of every step of a rank's program -*- C++ -*-===//
//
// Which kernel each step of an execution plan's program gets (its op's
// kernel description, ir/KernelDesc.h: class, formula, row reduction,
// library signature), and the source of every step whose class is rendered
// today. The classes:
//
//   communication  a call on the runtime's communicator (exec/Groups.h rules)
//   elementwise    a formula (ir/ops/Formula.h); cast is a load and a store
//   gemm           matmul as library GEMM calls (Gemm.h)
//   layout         data movement as a strided gather (Layout.h), with
//                  shard_slice and stage_merge, which read the rank's place
//   reduction      row reductions (RowReduction.h: softmax, norms, trailing
//                  sums, sums over broadcast dims); cross-entropy, the
//                  vocab-parallel cross-entropy and the norms' backward by hand
//   library        hand-written kernels (LibraryKernels.h: SGD, embedding
//                  gather and scatter, masks, dropout, ...), CPU only
//
// One program serves every rank of its pipeline stage: what depends on the
// rank reads its mesh coordinates from the prelude's planc_mesh_coord
// (RankPlace.h), which the executable sets before the first step. A
// stage_merge step's operands made on other stages are -1 in its inputs;
// its kernel takes one pointer per stage, and the call passes null for
// those (it reads only planc_mesh_coord[pp]'s).
//
// A step of a rendered class whose buffers the renderer cannot take (a
// dtype without generated loads) says why. `planc emit --emit=kernels`
// prints this for one rank's program, with a count per class.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_C_PROGRAMKERNELS_H
#define PLANC_BACKEND_C_PROGRAMKERNELS_H

#include "backend/c/CFamily.h"
#include "ir/KernelDesc.h"
#include "exec/ExecutionPlan.h"

#include <map>
#include <string>

namespace planc::backend {

/// Each op declares its class (OpDef::kernel, ir/KernelDesc.h).
using ir::KernelClass;
using ir::spelling; // "elementwise", ...

struct StepKernel {
  KernelClass kind = KernelClass::Library;
  bool rendered = false;
  std::string name;   // the function's name, when rendered
  std::string reason; // why not, otherwise
  /// Folded (RenderOptions::foldProducers): the step whose kernel
  /// computes this one's result where it reads it; this step has no call.
  int64_t foldedInto = -1;
  /// The buffers the call passes before the outputs, where they are not the
  /// step's inputs (a kernel with a folded step reads that step's operands).
  std::vector<int64_t> callInputs;
};

struct RenderOptions {
  /// The prefix of every function's name, and whether to render the
  /// prelude: a second program in the same translation unit (an inference
  /// step beside the training step) takes another prefix and no prelude.
  std::string prefix;
  bool prelude = true;
  /// An elementwise step of one result computed inside the next step's
  /// kernel (docs/fusion.md, "Folded into the next kernel"):
  /// - into an update of several results (AdamW's, SGD's) that alone reads
  ///   it, f32 or f64: the clipped gradient is never written;
  /// - into a row reduction (layer or RMS norm, softmax) that reads it as
  ///   its rows, f32: the kernel's first pass computes it and writes it for
  ///   its other readers (a residual add and the norm after it, llm.c's
  ///   fused residual forward), so it is not read back from memory.
  /// fused_elementwise (one op, one result) holds neither; plans with a
  /// fusion policy other than `none` get them.
  bool foldProducers = false;
  /// The kernels already rendered into the same translation unit, by their
  /// source but for name and banner: a program after the first calls the
  /// one of the same source (the same op on the same shapes in another
  /// pipeline stage) rather than rendering a copy. Null: this program's own.
  std::map<std::string, std::string> *rendered = nullptr;
};

/// The kernels of `program` in `lang`: the prelude, then one function per
/// step rendered (named after the step index and op, "s12_gelu"), each with
/// a banner naming the step's micro-batch, op and layer path; a closing
/// comment counts the steps per class and how many are rendered. Returns
/// the choice made for every step.
std::vector<StepKernel> renderProgramKernels(const exec::ExecutionPlan &plan, const exec::RankProgram &program,
                                             const CLanguage &lang, llvm::raw_ostream &os, const RenderOptions &options = {});

} // namespace planc::backend

#endif
