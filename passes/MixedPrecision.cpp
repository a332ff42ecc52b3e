//===- passes/MixedPrecision.cpp - bf16 / f16 compute, f32 master weights -===//
//
// Mixed-precision training as Megatron-LM and torch.autocast do it: the
// parameters stay in their (master) dtype, the forward graph computes in the
// narrow compute dtype, and the loss stays f32. Running before autodiff means
// the backward graph needs no rule of its own: each inserted `cast` is
// differentiated like any op (its gradient is a cast back), so the gradient
// reaching an f32 parameter is f32 and the optimizer updates f32 weights.
//
// Needs: a forward module (no backward ops, no "grad." outputs). Option
// PrecisionOptions::compute: f32 (the default: the pass changes nothing),
// bf16 or f16.
//
// Guarantees after, for compute dtype C:
//  - a frozen float parameter wider than C is stored in C (it has no update,
//    so no master copy);
//  - every other float parameter and input keeps its dtype; the first op that needs
//    it in another dtype gets one `cast` (per value and dtype) right before
//    it, so a parameter read by several ops is cast once;
//  - each op with a float operand (and each float `fill`) runs in its target
//    dtype: its float operands are cast to it and its results retyped by its
//    shape rule. The target is
//      the dtype of its `precision` attribute (`@precision(f32)`: "f32" or
//        "fp32", also "fp16"; fp8 names run in C, as they need scaling this
//        pass does not do), else
//      f32 if an operand is an f32 "accumulator" value (below), else C;
//    so an `@precision(f32)` layer reads its inputs cast up and the op after
//    it casts its result back down;
//  - accumulator values: results a shape rule makes wider than the operands
//    (cross_entropy's loss is f32 for bf16 logits), and everything computed
//    from them, stay f32: the loss is f32, as in Megatron-LM;
//  - the output "loss" is f32 (a cast is added if the graph made it narrower);
//  - explicit `cast` ops of the plan are kept as written.
//
// Where the arithmetic is f32 or better: the interpreter computes every op in
// f64 and rounds only its result to the result dtype. So every reduction
// *inside* one op — matmul's dot products, reduce_sum/mean, softmax and
// log_softmax, layernorm's and rmsnorm's mean and variance, cross_entropy's
// log-sum-exp and mean — accumulates in better than f32 (as cuBLAS with an f32
// compute type and Megatron's fused kernels), and only the op's result is
// rounded to C. Sums *across* ops are in the dtype of their values: residual
// adds and the backward graph's fan-out adds of activation gradients are C;
// parameter gradients are cast to f32 once, after the sum over their uses.
// What happens to that cast is the optimizer pass's choice (grad_dtype): the
// compute dtype keeps the narrow sum and widens it right before the update;
// f32 keeps the cast and marks it `main_grad`, the f32 gradient the
// micro-batches are summed into and data parallelism reduces.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/Builder.h"
#include "ir/OpDef.h"
#include "ir/Placement.h"
#include "ir/Printer.h"
#include "support/Error.h"

#include <map>
#include <set>

using namespace planc;
using namespace planc::ir;

namespace {

/// A dtype name as the plan or an option writes it; fp32/fp16 are aliases.
std::optional<DType> parsePrecision(llvm::StringRef s) {
  s = s.trim();
  if (s == "fp32") return DType::F32;
  if (s == "fp16") return DType::F16;
  if (s == "fp64") return DType::F64;
  return parseDType(s);
}

bool isFp8(DType t) { return t == DType::F8E4M3 || t == DType::F8E5M2; }

class MixedPrecisionPass : public Pass {
public:
  explicit MixedPrecisionPass(const PrecisionOptions &options) : options(options) {}
  llvm::Error run(Module &m) override;

private:
  PrecisionOptions options;
};

llvm::Error MixedPrecisionPass::run(Module &m) {
  const DType compute = options.compute;
  if (!isLoweredComputeDType(compute))
    return makeError(std::string("mixed-precision setting 'compute_dtype' must be f64, f32, bf16 or f16, got '") +
                spelling(compute) + "'");
  // f32 and f64 compute in the parameters' own dtype: nothing to cast.
  if (compute == DType::F32 || compute == DType::F64) return llvm::Error::success();

  for (const auto &op : m.ops)
    if (phaseOf(*op) != Phase::Forward)
      return makeError("mixed-precision runs on the forward graph, before autodiff; the module has " + toText(*op));

  // A frozen parameter (a LoRA base, a frozen embedding) has no gradient and
  // no update, so it needs no f32 master copy: it is stored in the compute
  // dtype itself (half the bytes, and no cast per step).
  for (Value *p : m.params)
    if (p->frozen && isFloat(p->type.dtype) && byteSize(p->type.dtype) > byteSize(compute)) p->type.dtype = compute;

  // The ops are re-emitted in order, each preceded by the casts it needs.
  std::vector<std::unique_ptr<Op>> old = std::move(m.ops);
  m.ops.clear();
  Builder b(m);
  std::map<std::pair<Value *, DType>, Value *> casts;
  std::set<const Value *> accumulators;

  auto castTo = [&](Value *v, DType to, const Op &user) -> Value * {
    Value *&c = casts[{v, to}];
    if (c) return c;
    // A parameter's cast belongs to the parameter (its layer and line); an
    // activation's to the op that needs it.
    if (v->kind == Value::Kind::Result) {
      b.loc = user.loc;
      b.path = user.path;
    } else {
      b.loc = v->loc;
      llvm::StringRef p = v->path.empty() ? llvm::StringRef(v->name) : llvm::StringRef(v->path);
      b.path = p.contains('.') ? p.rsplit('.').first.str() : "";
    }
    Op *op = b.create(OpKind::Cast, {v}, {{"dtype", std::string(spelling(to))}});
    op->results[0]->type.sharding = v->type.sharding; // a cast moves no data between ranks
    if (auto it = user.attrs.find("stage"); it != user.attrs.end()) op->attrs["stage"] = it->second;
    return c = op->results[0];
  };

  for (std::unique_ptr<Op> &owned : old) {
    Op &op = *owned;
    bool hasFloatOperand = false, readsAccumulator = false;
    for (Value *v : op.operands) {
      hasFloatOperand |= isFloat(v->type.dtype);
      readsAccumulator |= accumulators.count(v) > 0;
    }
    std::optional<DType> fillType;
    if (op.kind == OpKind::Fill) fillType = parseDType(op.getString("dtype"));
    bool floatFill = fillType && isFloat(*fillType);
    if (op.kind == OpKind::Cast || (!hasFloatOperand && !floatFill)) {
      m.ops.push_back(std::move(owned));
      continue;
    }

    DType target = readsAccumulator ? DType::F32 : compute;
    if (op.has("precision")) {
      std::string p = op.getString("precision");
      std::optional<DType> asked = parsePrecision(p);
      if (!asked || !isFloat(*asked))
        return makeError("op " + toText(op) + " has precision '" + p + "', which is not a float dtype");
      if (!isFp8(*asked)) target = *asked;
    }

    if (floatFill) op.attrs["dtype"] = std::string(spelling(target));
    for (Value *&v : op.operands)
      if (isFloat(v->type.dtype) && v->type.dtype != target) v = castTo(v, target, op);

    std::vector<Value *> operands(op.operands.begin(), op.operands.end());
    std::vector<TensorType> types;
    std::string error = inferResultTypes(op.kind, operands, op.attrs, types);
    if (!error.empty()) return makeError(std::string("in ") + spelling(target) + ", the op " + toText(op) + ": " + error);
    for (size_t i = 0; i < op.results.size(); ++i) {
      Value *r = op.results[i];
      r->type.dtype = types[i].dtype; // shape and sharding are the op's own
      // Wider than the op computes in: an f32 accumulator (the loss).
      if (isFloat(r->type.dtype) && byteSize(r->type.dtype) > byteSize(target)) accumulators.insert(r);
      if (readsAccumulator && isFloat(r->type.dtype)) accumulators.insert(r);
    }
    m.ops.push_back(std::move(owned));
  }

  for (Output &out : m.outputs) {
    Value *&v = out.value;
    if (out.role != OutputRole::Loss || !isFloat(v->type.dtype) || byteSize(v->type.dtype) >= byteSize(DType::F32)) continue;
    b.loc = v->def ? v->def->loc : v->loc;
    b.path = v->def ? v->def->path : "";
    v = b.value(OpKind::Cast, {v}, {{"dtype", std::string("f32")}}, "loss.f32");
  }
  return llvm::Error::success();
}

} // namespace

std::unique_ptr<Pass> planc::createMixedPrecisionPass(const PrecisionOptions &options) {
  return std::make_unique<MixedPrecisionPass>(options);
}
