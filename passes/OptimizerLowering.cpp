//===- passes/OptimizerLowering.cpp - the parameter update as IR ---------===//
//
// Appends one optimizer step to a differentiated module, so a whole training
// step (forward, backward, update) is one module that the interpreter, the
// partitioner and the backends treat like any other.
//
// Needs: autodiff's outputs "grad.<path>", one per trainable (not frozen,
// floating-point) parameter, and no update yet (the pass runs once). The
// settings are OptimizerOptions (passes/TrainingOptions.h); settings that
// contradict each other are an error naming them.
//
// Guarantees after:
//  - a scalar input %step, the 1-based number of the update (kept if the
//    module has one: an integer or float scalar; else added as i64[]);
//  - %lr = lr_schedule(%step): linear warm-up over `warmup` steps, then
//    constant, or linear or cosine decay to `min_lr` at `total_steps`;
//    output "lr" (for the training log);
//  - with clip_grad_norm > 0: %grad_norm = global_norm(every gradient), output
//    "grad_norm", and every gradient multiplied by clip_scale(%grad_norm)
//    before the update, as torch.nn.utils.clip_grad_norm_;
//  - per trainable parameter, its update, in parameter order, with the
//    parameter's location and its layer's path:
//      sgd       p - lr (g + wd p) without momentum (elementwise ops, no
//                state); with momentum sgd_update and a buffer "<p>.momentum"
//      adam      adam_update {decoupled = false}: the decay is L2 in the gradient
//      adamw     adam_update {decoupled = true}: torch.optim.AdamW
//      adam8bit  adam8bit_update {decoupled = true, block}: bitsandbytes'
//                AdamW8bit, moments as u8 codes "<p>.adam_m_q", "<p>.adam_v_q"
//                with one scale per block, "<p>.adam_m_scale", "<p>.adam_v_scale"
//    Weight decay applies to the parameters the rule of weightDecayParams
//    picks, as nanoGPT's, Megatron-LM's and Hugging Face Trainer's two
//    torch.optim parameter groups: `matrices` decays a parameter of 2 or
//    more dims (weight matrices, embedding tables, LoRA's adapters) and not
//    a bias or a norm weight (1-D) or a scalar; `all` decays every one. A
//    parameter's own choice (Value::weightDecay, from @weight_decay or
//    @no_weight_decay) overrides the rule. The shape is the one-device
//    shape, so every layout decays the same parameters; one not decayed has
//    `weight_decay = 0` on its update.
//    Adam's moments are "<p>.adam_m" and "<p>.adam_v".
//  - optimizer state is module params: init zeros (a zero state is the first
//    step's, as torch's), frozen (no gradient, no update of its own), with the
//    parameter's sharding (the scales of 8-bit Adam, one per block of the
//    flattened parameter, are replicated) and location, path "<p path>.<state>";
//  - outputs "new.<p path>" for every updated parameter and "new.<state path>"
//    for every state, the values named %new.<name>;
//  - gradDType (bf16, f16): a gradient that autodiff widened from
//    that dtype with a final cast is read narrow: output "grad.<path>" is the
//    narrow sum and the cast to the parameter's dtype is an optimizer op;
//    grad_dtype = the parameter's dtype (f32 gradients under bf16 compute):
//    that final cast gets `main_grad = true` (the f32 gradient accumulator);
//  - every added op has `phase = "optimizer"`; the forward graph, the
//    backward graph's ops and the other outputs are unchanged.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/Builder.h"
#include "ir/Placement.h"
#include "ir/StepOutputs.h"
#include "ir/Printer.h"

#include "llvm/ADT/StringExtras.h"
#include "support/Error.h"

#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

using namespace planc;
using namespace planc::ir;

namespace {

/// The checks between settings; each setting's own range is checked where
/// it is read (passes/PassOptionTable.cpp, or the plan's frontend).
llvm::Error checkSettings(const OptimizerOptions &s) {
  if (s.minLr > s.lr)
    return makeError("optimizer setting 'min_lr' (" + formatFloat(s.minLr) + ") must not exceed 'lr' (" +
                formatFloat(s.lr) + ")");
  // The decay runs from the end of warm-up to total_steps: it needs steps to run over.
  if (s.decay != DecayKind::Constant && s.totalSteps <= s.warmup)
    return makeError(std::string("decay = ") + spelling(s.decay) + " needs 'total_steps' (" + std::to_string(s.totalSteps) +
                ") greater than 'warmup' (" + std::to_string(s.warmup) + ")");
  return llvm::Error::success();
}

std::string layerOf(const Value &p) {
  llvm::StringRef path = p.path.empty() ? llvm::StringRef(p.name) : llvm::StringRef(p.path);
  size_t dot = path.rfind('.');
  return dot == llvm::StringRef::npos ? "" : path.substr(0, dot).str();
}

std::string pathOf(const Value &p) { return p.path.empty() ? p.name : p.path; }

/// Whether `p`'s update applies the weight decay (see the header).
bool decays(const Value &p, WeightDecayParams rule) {
  if (p.weightDecay) return *p.weightDecay;
  return rule == WeightDecayParams::All || p.type.rank() >= 2;
}

class OptimizerLoweringPass : public Pass {
public:
  OptimizerLoweringPass(const OptimizerOptions &options, std::optional<DType> gradDType)
      : options(options), gradDType(gradDType) {}
  llvm::Error run(Module &m) override;

private:
  /// The ops appended since `first` are optimizer ops.
  static void stamp(Module &m, size_t first) {
    for (size_t i = first; i < m.ops.size(); ++i) setPhase(*m.ops[i], Phase::Optimizer);
  }
  /// A zero-initialised, frozen state parameter beside `p`.
  static Value *addState(Module &m, const Value &p, const std::string &suffix, TensorType type) {
    Value *s = m.addParam(p.name + "." + suffix, std::move(type));
    s->init = InitKind::Zeros;
    s->frozen = true;
    s->path = pathOf(p) + "." + suffix;
    s->loc = p.loc;
    return s;
  }
  /// Names `v` %new.<name> and outputs it as `out` ("new.<path>").
  static void output(Module &m, Value *v, const std::string &name, Output out) {
    m.rename(v, m.uniqueName(updateName(name)));
    out.value = v;
    m.outputs.push_back(std::move(out));
  }

  OptimizerOptions options;
  std::optional<DType> gradDType;
};

llvm::Error OptimizerLoweringPass::run(Module &m) {
  if (llvm::Error e = checkSettings(options)) return e;
  const OptimizerOptions &s = options;

  for (const Output &out : m.outputs)
    if (out.isUpdate())
      return makeError("the module already has an update output \"" + out.name + "\"; the optimizer pass runs once");

  // The trainable parameters with their gradients, in parameter order.
  std::vector<std::pair<Value *, Value *>> trained;
  bool allF64 = true;
  const OutputIndex outputs(m); // read before any output is added
  for (Value *p : m.params) {
    if (p->frozen || !isFloat(p->type.dtype)) continue;
    const Output *gradient = outputs.find(OutputRole::ParamGradient, pathOf(*p));
    Value *g = gradient ? gradient->value : nullptr;
    if (!g)
      return makeError("parameter %" + p->name + " is trainable but the module has no output \"" + gradientName(pathOf(*p)) +
                  "\": run autodiff before the optimizer");
    trained.push_back({p, g});
    allF64 &= p->type.dtype == DType::F64;
  }
  // Gradients kept narrow (gradDType, e.g. bf16 under bf16 mixed
  // precision): autodiff widens a master weight's gradient with a cast at the
  // end of backward; the optimizer reads the narrow sum instead (half the
  // bytes held from backward to the update and synchronised over dp, ZeRO's
  // 2 bytes per parameter) and widens it per parameter right before its
  // update, as DeepSpeed's mixed-precision optimizer does. The backward cast
  // is left unused (canonicalize removes it).
  //
  // Gradients kept wide (grad_dtype = the parameter's f32 under bf16
  // compute): Megatron-LM's fp32 main gradients. Backward's widening cast is
  // marked `main_grad`: it is the f32 buffer each micro-batch's gradient is
  // added into, and data parallelism reduces that sum in f32, after the cast
  // and once per step (ShardingRules keeps a partial sum partial through it,
  // and ZeRO's dp split is not pulled up into it).
  if (std::optional<DType> gradType = gradDType) {
    // The outputs of each value, found once: a scan of every output per
    // parameter is quadratic in the model.
    std::unordered_map<const Value *, std::vector<Output *>> outputsOf;
    for (Output &out : m.outputs) outputsOf[out.value].push_back(&out);
    for (auto &[p, g] : trained) {
      Op *def = g->def;
      if (!def || def->kind != OpKind::Cast) continue;
      DType from = def->operands[0]->type.dtype;
      if (from == *gradType && byteSize(*gradType) < byteSize(g->type.dtype)) {
        if (auto it = outputsOf.find(g); it != outputsOf.end())
          for (Output *out : it->second) out->value = def->operands[0];
        g = def->operands[0];
      } else if (g->type.dtype == *gradType && isFloat(from) && byteSize(from) < byteSize(*gradType)) {
        def->attrs["main_grad"] = true;
      }
    }
  }

  // Schedules and norms in f64 only when the whole model is (gradient checks,
  // reference runs); otherwise f32, which every update op accepts.
  const DType scalarType = allF64 ? DType::F64 : DType::F32;

  Value *step = nullptr;
  for (Value *in : m.inputs)
    if (in->name == "step") step = in;
  if (step) {
    if (step->type.rank() != 0 || step->type.dtype == DType::Bool)
      return makeError("the input %step must be a numeric scalar (the 1-based update number), got " + toString(step->type));
  } else {
    if (m.lookup("step"))
      return makeError("the module has a value %step that is not an input; the step counter needs that name");
    step = m.addInput("step", TensorType({}, DType::I64));
    step->path = "step";
  }

  Builder b(m);
  const size_t first = m.ops.size();

  AttrMap schedule = {{"lr", s.lr},
                      {"warmup", s.warmup},
                      {"decay", std::string(spelling(s.decay))},
                      {"min_lr", s.minLr},
                      {"dtype", std::string(spelling(scalarType))}};
  if (s.decay != DecayKind::Constant) schedule["decay_steps"] = s.totalSteps;
  Value *lr = b.value(OpKind::LrSchedule, {step}, schedule, "lr");
  m.outputs.push_back({"lr", lr});

  // A scalar in each dtype the elementwise ops need it in, cast once.
  std::map<std::pair<Value *, DType>, Value *> casts;
  auto as = [&](Value *scalar, DType dtype) {
    if (scalar->type.dtype == dtype) return scalar;
    Value *&c = casts[{scalar, dtype}];
    if (!c) c = b.value(OpKind::Cast, {scalar}, {{"dtype", std::string(spelling(dtype))}});
    return c;
  };

  Value *clipFactor = nullptr;
  if (s.clipGradNorm > 0 && !trained.empty()) {
    std::vector<Value *> grads;
    for (auto &[p, g] : trained) grads.push_back(g);
    Value *norm = b.value(OpKind::GlobalNorm, grads, {}, "grad_norm");
    m.outputs.push_back({"grad_norm", norm});
    clipFactor = b.value(OpKind::ClipScale, {norm}, {{"max_norm", s.clipGradNorm}}, "clip_scale");
  }

  for (auto &[p, g] : trained) {
    b.loc = p->loc;
    b.path = layerOf(*p);
    // A narrow gradient is widened to its parameter's dtype first, so the
    // clipping and the update compute on the master's precision.
    if (g->type.dtype != p->type.dtype) g = b.value(OpKind::Cast, {g}, {{"dtype", std::string(spelling(p->type.dtype))}});
    if (clipFactor) g = b.mul(g, as(clipFactor, g->type.dtype));
    const std::string name = p->name, path = pathOf(*p);
    TensorType like = p->type; // state has the parameter's shape and sharding
    const double weightDecay = decays(*p, s.weightDecayParams) ? s.weightDecay : 0.0;
    if (s.kind == OptimizerKind::SGD && s.momentum == 0) {
      Value *d = weightDecay > 0 ? b.add(g, b.scale(p, weightDecay)) : g;
      output(m, b.sub(p, b.mul(d, as(lr, p->type.dtype))), name, paramUpdateOutput(path));
    } else if (s.kind == OptimizerKind::SGD) {
      Value *buf = addState(m, *p, "momentum", like);
      Op *op = b.create(OpKind::SgdUpdate, {p, g, buf, lr},
                        {{"momentum", s.momentum}, {"nesterov", s.nesterov}, {"weight_decay", weightDecay}});
      output(m, op->results[0], name, paramUpdateOutput(path));
      output(m, op->results[1], buf->name, stateUpdateOutput(buf->path, path));
    } else if (s.kind == OptimizerKind::Adam || s.kind == OptimizerKind::AdamW) {
      Value *mom = addState(m, *p, "adam_m", like), *var = addState(m, *p, "adam_v", like);
      Op *op = b.create(OpKind::AdamUpdate, {p, g, mom, var, lr, step},
                        {{"beta1", s.beta1},
                         {"beta2", s.beta2},
                         {"eps", s.eps},
                         {"weight_decay", weightDecay},
                         {"decoupled", s.kind == OptimizerKind::AdamW}});
      output(m, op->results[0], name, paramUpdateOutput(path));
      output(m, op->results[1], mom->name, stateUpdateOutput(mom->path, path));
      output(m, op->results[2], var->name, stateUpdateOutput(var->path, path));
    } else { // adam8bit
      TensorType codes = like;
      codes.dtype = DType::U8;
      int64_t blocks = (p->type.numel() + s.blockSize - 1) / s.blockSize;
      TensorType scales({blocks}, p->type.dtype == DType::F64 ? DType::F64 : DType::F32);
      Value *mq = addState(m, *p, "adam_m_q", codes), *ms = addState(m, *p, "adam_m_scale", scales);
      Value *vq = addState(m, *p, "adam_v_q", codes), *vs = addState(m, *p, "adam_v_scale", scales);
      Op *op = b.create(OpKind::Adam8bitUpdate, {p, g, mq, ms, vq, vs, lr, step},
                        {{"beta1", s.beta1},
                         {"beta2", s.beta2},
                         {"eps", s.eps},
                         {"weight_decay", weightDecay},
                         {"decoupled", true},
                         {"block", s.blockSize}});
      output(m, op->results[0], name, paramUpdateOutput(path));
      Value *states[] = {mq, ms, vq, vs};
      for (unsigned i = 0; i < 4; ++i)
        output(m, op->results[i + 1], states[i]->name, stateUpdateOutput(states[i]->path, path));
    }
  }
  stamp(m, first);
  return llvm::Error::success();
}

} // namespace

std::unique_ptr<Pass> planc::createOptimizerLoweringPass(const OptimizerOptions &options,
                                                         std::optional<DType> gradDType) {
  return std::make_unique<OptimizerLoweringPass>(options, gradDType);
}
