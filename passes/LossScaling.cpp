//===- passes/LossScaling.cpp - fp16 loss scaling, static or dynamic -----===//
//
// f16 has five exponent bits: small activation gradients underflow to zero.
// Loss scaling multiplies d(loss) by a large factor so the backward graph
// works on scaled gradients, divides them back before the update, and skips
// a step whose gradients overflowed. The dynamic rule is
// torch.cuda.amp.GradScaler's and Megatron-LM's DynamicGradScaler's: start at
// `loss_scale_init` (65536), halve on an overflow, double after
// `loss_scale_window` (2000) steps in a row without one.
//
// Needs: autodiff's seed (the `fill` named %grad.loss) and its "grad.<path>"
// outputs; runs after the optimizer pass (its "new.<path>" outputs are what a
// skipped step keeps unchanged), or without one (then only the gradients are
// scaled and checked). Runs once.
//
// Options (PrecisionOptions, passes/TrainingOptions.h): lossScaling none
// (the pass changes nothing), static or dynamic; lossScaleInit;
// lossScaleWindow.
//
// Guarantees after:
//  - the scale S: dynamic: the state parameter %loss_scale_ratio (f32[],
//    init ones, frozen, path "loss_scale_ratio") holds S / loss_scale_init,
//    so the trainer's ones-initialisation starts at loss_scale_init;
//    static: a constant. Output "loss_scale" is S as this step used it;
//  - right after the seed, %grad.loss.scaled = %grad.loss * S replaces the
//    seed everywhere (S made there as %loss_scale.seed): the backward graph
//    computes S * gradient;
//  - before the first optimizer op, S is made again (%loss_scale, the
//    output: made once per step, not summed over micro-batches as a backward
//    value the optimizer read would be), and each gradient is multiplied by 1 / S (in
//    f32 when the gradient is narrower, as GradScaler unscales into f32), and
//    that unscaled value replaces it in the optimizer ops and in its output
//    "grad.<path>"; %grads_finite = all_finite(%unscaled_grad_norm), the
//    global_norm of every unscaled gradient (f32): false when any element
//    of any gradient is inf or NaN (or the norm itself overflows f32, which
//    its square does above ~1.8e19); output "found_inf" (f32[], 1 when the
//    step is skipped, else 0);
//  - every update output "new.<path>" (parameters and optimizer state) becomes
//    select(%grads_finite, update, old value): an overflow skips the step.
//    The condition is a scalar, so on a partitioned step each rank selects
//    its own shards (ShardingRules: select is elementwise);
//  - dynamic: loss_scale_update(ratio, %loss_scale_good_steps, finite) gives
//    outputs "new.loss_scale_ratio" and "new.loss_scale_good_steps" (the
//    second state, f32[] init zeros frozen: steps since the last change);
//  - the seed's scaling has `phase = "backward"`, the rest `phase = "optimizer"`.
// Not done: the optimizer's %step input still counts a skipped step (Adam's
// bias correction), since the trainer feeds it from its own loop counter.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/Builder.h"
#include "ir/Placement.h"
#include "ir/Printer.h"
#include "ir/StepOutputs.h"
#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace planc;
using namespace planc::ir;

namespace {

constexpr double kGrowth = 2.0, kBackoff = 0.5;

std::string pathOf(const Value &p) { return p.path.empty() ? p.name : p.path; }

/// Moves the ops appended since `mark` to position `pos`, stamped with `phase`.
void moveAppended(Module &m, size_t mark, size_t pos, Phase phase) {
  for (size_t i = mark; i < m.ops.size(); ++i) setPhase(*m.ops[i], phase);
  if (pos >= mark) return;
  std::rotate(m.ops.begin() + long(pos), m.ops.begin() + long(mark), m.ops.end());
}

/// Replaces reads of `from` by `to` in ops [begin, end).
void replaceUses(Module &m, size_t begin, size_t end, const std::map<Value *, Value *> &with) {
  for (size_t i = begin; i < end; ++i)
    for (Value *&v : m.ops[i]->operands)
      if (auto it = with.find(v); it != with.end()) v = it->second;
}

Value *addState(Module &m, const std::string &name, InitKind init) {
  Value *s = m.addParam(name, TensorType({}, DType::F32));
  s->init = init;
  s->frozen = true;
  s->path = name;
  return s;
}

class LossScalingPass : public Pass {
public:
  explicit LossScalingPass(const PrecisionOptions &options) : options(options) {}
  llvm::Error run(Module &m) override;

private:
  PrecisionOptions options;
};

llvm::Error LossScalingPass::run(Module &m) {
  const PrecisionOptions &s = options;
  if (s.lossScaling == LossScaling::None) return llvm::Error::success();

  if (m.output("found_inf") || m.lookup("loss_scale_ratio"))
    return makeError("the module is already loss-scaled; the loss-scaling pass runs once");
  Value *seed = m.lookup("grad.loss");
  if (!seed || !seed->def || seed->def->kind != OpKind::Fill)
    return makeError("loss-scaling needs autodiff's seed, a fill named %grad.loss: run autodiff first");
  size_t seedIndex = 0;
  while (m.ops[seedIndex].get() != seed->def) ++seedIndex;

  Builder b(m);
  b.loc = seed->def->loc;
  b.path = seed->def->path;

  // The scale, and the seed scaled right after it is made.
  size_t mark = m.ops.size();
  Value *ratio = nullptr, *goodSteps = nullptr;
  if (s.lossScaling == LossScaling::Dynamic) {
    ratio = addState(m, "loss_scale_ratio", InitKind::Ones);
    goodSteps = addState(m, "loss_scale_good_steps", InitKind::Zeros);
  }
  auto makeScale = [&](const std::string &name) {
    if (ratio) return b.value(OpKind::Scale, {ratio}, {{"factor", s.lossScaleInit}}, name);
    return b.value(OpKind::Fill, {}, {{"value", s.lossScaleInit}, {"shape", Shape{}}, {"dtype", std::string("f32")}},
                   name);
  };
  Value *scale = makeScale("loss_scale.seed");
  Value *seedScale = scale;
  if (seed->type.dtype != DType::F32)
    seedScale = b.value(OpKind::Cast, {scale}, {{"dtype", std::string(spelling(seed->type.dtype))}});
  Value *scaledSeed = b.mul(seed, seedScale);
  m.rename(scaledSeed, m.uniqueName("grad.loss.scaled"));
  size_t added = m.ops.size() - mark;
  moveAppended(m, mark, seedIndex + 1, Phase::Backward);
  replaceUses(m, seedIndex + 1 + added, m.ops.size(), {{seed, scaledSeed}});

  // Unscale the gradients where the optimizer starts (or at the end).
  size_t firstOptimizer = m.ops.size();
  for (size_t i = 0; i < m.ops.size(); ++i)
    if (phaseOf(*m.ops[i]) == Phase::Optimizer) {
      firstOptimizer = i;
      break;
    }
  mark = m.ops.size();
  b.loc = Location();
  b.path = "";
  // The scale made again, once per step: a backward value the optimizer
  // reads is a gradient to a partitioned step, summed over its micro-batches.
  Value *stepScale = makeScale("loss_scale");
  Value *inverse = b.value(OpKind::Pow, {stepScale}, {{"exponent", -1.0}}, "loss_scale_inv");
  std::map<Value *, Value *> unscaled;
  std::vector<Value *> checked;
  for (const Output &out : m.outputs) {
    Value *g = out.value;
    if (out.role != OutputRole::ParamGradient || !isFloat(g->type.dtype)) continue;
    Value *&u = unscaled[g];
    if (!u) {
      DType t = g->type.dtype;
      bool narrow = byteSize(t) < byteSize(DType::F32);
      Value *wide = narrow ? b.value(OpKind::Cast, {g}, {{"dtype", std::string("f32")}}) : g;
      Value *inv = t == DType::F64 ? b.value(OpKind::Cast, {inverse}, {{"dtype", std::string("f64")}}) : inverse;
      u = b.mul(wide, inv);
      checked.push_back(u);
      if (narrow) u = b.value(OpKind::Cast, {u}, {{"dtype", std::string(spelling(t))}});
      u->type.sharding = g->type.sharding;
    }
  }
  if (checked.empty()) return makeError("loss-scaling found no gradient outputs \"grad.<path>\": run autodiff first");
  // The skip decision: the norm of the unscaled gradients is finite exactly
  // when each of them is (an inf or NaN anywhere makes the sum of squares
  // inf or NaN), as fairseq's DynamicLossScaler reads it off the gradient
  // norm. Sharding propagation partitions a norm as local sums of squares
  // over each rank's blocks and one scalar all-reduce per layout, so however
  // the gradients are split (tensor parallel, ZeRO shards) the decision is
  // one reduced flag, and no gradient is gathered to check it.
  Value *norm = b.value(OpKind::GlobalNorm, checked, {}, "unscaled_grad_norm");
  Value *finite = b.value(OpKind::AllFinite, {norm}, {}, "grads_finite");
  auto constant = [&](double value) {
    return b.value(OpKind::Fill, {}, {{"value", value}, {"shape", Shape{}}, {"dtype", std::string("f32")}});
  };
  Value *foundInf = b.value(OpKind::Select, {finite, constant(0), constant(1)}, {}, "found_inf");
  added = m.ops.size() - mark;
  moveAppended(m, mark, firstOptimizer, Phase::Optimizer);
  replaceUses(m, firstOptimizer + added, m.ops.size(), unscaled);
  for (Output &out : m.outputs)
    if (auto it = unscaled.find(out.value); it != unscaled.end()) {
      Value *&v = out.value;
      std::string name = v->name;
      m.rename(v, m.uniqueName(name + ".scaled"));
      m.rename(it->second, name);
      v = it->second;
    }
  m.outputs.push_back({"loss_scale", stepScale});
  m.outputs.push_back({"found_inf", foundInf});

  // A step that overflowed keeps every parameter and state as it was.
  mark = m.ops.size();
  std::map<std::string, Value *> byPath;
  for (Value *p : m.params) byPath[pathOf(*p)] = p;
  for (Output &out : m.outputs) {
    if (!out.isUpdate()) continue;
    Value *&v = out.value;
    Value *old = byPath.count(out.path) ? byPath[out.path] : nullptr;
    if (!old || old->type.shape != v->type.shape || old->type.dtype != v->type.dtype)
      return makeError("the update output \"" + out.name + "\" has no parameter of its path and type to keep");
    b.loc = old->loc;
    b.path = v->def ? v->def->path : "";
    Value *kept = b.value(OpKind::Select, {finite, v, old});
    kept->type.sharding = v->type.sharding;
    std::string name = v->name;
    m.rename(v, m.uniqueName(name + ".unchecked"));
    m.rename(kept, name);
    v = kept;
  }
  if (s.lossScaling == LossScaling::Dynamic) {
    b.loc = Location();
    b.path = "";
    Op *update = b.create(OpKind::LossScaleUpdate, {ratio, goodSteps, finite},
                          {{"growth", kGrowth}, {"backoff", kBackoff}, {"window", s.lossScaleWindow}});
    for (unsigned i = 0; i < 2; ++i) {
      Output out = stateUpdateOutput(pathOf(*(i ? goodSteps : ratio)), "", update->results[i]);
      m.rename(update->results[i], m.uniqueName(out.name));
      m.outputs.push_back(std::move(out));
    }
  }
  moveAppended(m, mark, m.ops.size(), Phase::Optimizer);
  return llvm::Error::success();
}

} // namespace

std::unique_ptr<Pass> planc::createLossScalingPass(const PrecisionOptions &options) {
  return std::make_unique<LossScalingPass>(options);
}
