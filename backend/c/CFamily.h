//===- backend/c/CFamily.h - kernels as C-family source, for CPU and CUDA -*- C++ -*-===//
//
// The renderer both code generators share: a kernel description (today the
// elementwise class, ir/ops/Formula.h) becomes C-family source that is valid
// C++ for the CPU backend and CUDA C++ for the GPU backend. What differs is
// the language's data (CLanguage.h): for the CPU a function with an OpenMP
// loop whose body the compiler can vectorise; for CUDA a __global__
// function with one thread per element. Everything else is shared:
//
//  - expressions: one `const float tN = ...;` per formula node (SSA, so a
//    value used twice is computed once), computed in f32, constants as exact
//    hexadecimal literals, the math of <cmath>'s f32 functions (expf, tanhf);
//  - loads and stores per dtype: f32 and f64 as they are; bf16 and f16 from
//    and to their 16 bits with round-to-nearest-even (the prelude's helpers,
//    __host__ __device__ in CUDA); f64 is computed in f64;
//  - broadcasting as NumPy does it, each operand's offset from the result's
//    index by its broadcast strides (constants the compiler folds);
//  - a banner comment naming the kernel's op, and a shape comment on every
//    buffer it reads or writes.
//
// Nothing of the plan's text reaches the source but through cIdentifier()
// and cComment(), which make any string safe as an identifier or inside a
// comment.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_C_CFAMILY_H
#define PLANC_BACKEND_C_CFAMILY_H

#include "backend/c/CLanguage.h"
#include "ir/IR.h"
#include "ir/ops/Formula.h"

#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>
#include <vector>

namespace planc::backend {


/// One operand or the result of an elementwise kernel.
struct KernelBuffer {
  ir::DType dtype = ir::DType::F32;
  Shape shape; // an operand's own shape (broadcast to the result's)
};

/// An elementwise kernel: the formula of `kind` over its operands' elements.
struct ElementwiseKernel {
  std::string name;                 // the function's name (a C identifier)
  ir::OpKind kind = ir::OpKind::NumOps;
  const ir::Formula *formula = nullptr;
  /// A fused_elementwise step's formula, read from its attribute (`formula`
  /// points into it); null for an op kind with its own.
  std::shared_ptr<const ir::Formula> ownedFormula;
  std::vector<double> attrValues;   // in Formula::attrs() order
  std::vector<KernelBuffer> inputs; // one per formula input
  KernelBuffer output;
  std::vector<KernelBuffer> extraOutputs; // results after the first (an optimizer update's states)
  bool accumulate = false;          // out += result (the first result)
  std::string comment;              // a line for the banner (escaped on output)
};

/// The elementwise kernel of an op kind with a formula on these buffers;
/// "" and `k` filled, or a reason it has none ("no formula", "dtype i32").
std::string makeElementwiseKernel(ir::OpKind kind, const ir::AttrMap &attrs, const std::vector<KernelBuffer> &inputs,
                                  const KernelBuffer &output, ElementwiseKernel &k,
                                  const std::vector<KernelBuffer> &extraOutputs = {});

/// The helpers every translation unit of this language needs once (the
/// 16-bit float conversions, the includes).
void renderPrelude(const CLanguage &lang, llvm::raw_ostream &os);

/// The kernel as a function `k.name(const void *in0, ..., void *out[, void
/// *out1, ...])`: for
/// the CPU a static function with an OpenMP loop, for CUDA a __global__
/// function of one thread per element.
void renderElementwiseKernel(const ElementwiseKernel &k, const CLanguage &lang, llvm::raw_ostream &os);

/// The formula's body: a statement per node reading `inputs` (C expressions
/// of type float, or double where `f64`), each line prefixed by `indent`.
/// With `hoisted`, the nodes that depend only on constants, attributes and
/// the inputs marked in `invariantInputs` go there instead (prefixed by
/// `hoistIndent`), to be computed once before the loop. Returns the name
/// holding the result.
std::string renderFormula(const ir::Formula &f, llvm::ArrayRef<double> attrValues,
                          llvm::ArrayRef<std::string> inputs, bool f64, llvm::StringRef indent,
                          llvm::raw_ostream &os, llvm::ArrayRef<bool> invariantInputs = {},
                          llvm::raw_ostream *hoisted = nullptr, llvm::StringRef hoistIndent = "");

/// The C expression of the element offset, in an operand of shape
/// `operand`, of index `i` of the result of shape `out`: NumPy broadcasting,
/// the operand's shape aligned at the right (its size-1 and missing dims
/// stride 0).
std::string broadcastOffset(const Shape &operand, const Shape &out, const std::string &i);

/// Opens the loop over `index` in [0, `count`) of a kernel body: an OpenMP
/// loop for the CPU (`simd` where its body vectorises), for CUDA the thread's
/// index with a bound check. Returns the indent of the body;
/// closeIndexLoop() ends it.
std::string openIndexLoop(const CLanguage &lang, llvm::StringRef index, llvm::StringRef count, bool simd,
                          llvm::raw_ostream &os);
void closeIndexLoop(const CLanguage &lang, llvm::raw_ostream &os);

/// The C type a buffer of `t` is read through: float, double, uint16_t for
/// bf16 and f16 (their bits), the integer types as they are.
const char *storageType(ir::DType t);

/// Element `index` of `ptr` (a buffer of `t` read through storageType) as
/// a C expression of type float (double for f64): bf16 and f16 through the
/// prelude's conversions, integers converted.
std::string loadElement(ir::DType t, const std::string &ptr, const std::string &index);
/// The C expression that stores the float `value` into a buffer of `t`
/// (rounded to nearest even for bf16 and f16).
std::string storedValue(ir::DType t, const std::string &value);

/// "f32[4, 64]": the comment on a buffer's pointer.
std::string shapeComment(const KernelBuffer &b);

/// An exact C literal of `v` (hexadecimal; INFINITY, NAN where needed), of
/// type float unless `f64`.
std::string floatLiteral(double v, bool f64);

/// `s` as a C identifier: letters, digits and '_' kept, anything else
/// "_xHH", a leading digit prefixed; never empty.
std::string cIdentifier(llvm::StringRef s);
/// `s` safe inside a /* */ or // comment: no "*/", no line breaks, no
/// trigraphs, no control characters, ASCII only.
std::string cComment(llvm::StringRef s);

} // namespace planc::backend

#endif
