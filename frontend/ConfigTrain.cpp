//===- frontend/ConfigTrain.cpp - the train { } block ---------------------===//
//
// Batch sizes, steps, the optimizer and its schedule, precision, data and
// checkpoints. A kind written anew (`optimizer sgd`) starts from the defaults in
// Config.h; --set arguments alone (`train.optimizer.lr=1e-4`) adjust what the
// file says.
//
//===----------------------------------------------------------------------===//

#include "frontend/ConfigReader.h"

#include "llvm/ADT/StringSwitch.h"

#include <cstdio>

using namespace planc;
using namespace planc::config;

namespace {

const KeySpec keys[] = {
    {"global_batch", "'global_batch = 512'"},
    {"micro_batch", "'micro_batch = 8'"},
    {"steps", "'steps = 5000'"},
    {"seed", "'seed = 1234'"},
    {"optimizer", "'optimizer adamw(lr = 3e-4)'"},
    {"clip_grad_norm", "'clip_grad_norm = 1.0'"},
    {"precision", "'precision bf16(master = f32)'"},
    {"adapters", "'adapters lora(rank = 8, alpha = 16.0)'"},
    {"data", "'data tokens(\"train.bin\", u16)'"},
    {"checkpoint", "'checkpoint(every = 1000, dir = \"ckpt/\", keep = 3)'"},
    {"fusion", "'fusion = aggressive'"},
    {"names", "'names = hf_llama'"},
};

const KeySpec &spec(StringRef key) { return keySpec(keys, key); }

std::string formatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

const Field *get(const Bound &args, StringRef name) {
  auto it = args.find(name.str());
  return it == args.end() ? nullptr : &it->second;
}

//===----------------------------------------------------------------------===//
// optimizer
//===----------------------------------------------------------------------===//

/// `betas = (0.9, 0.95)`.
void readBetas(const Field &f, OptimizerConfig &o, Reader &r) {
  auto *t = llvm::dyn_cast<ast::TupleExpr>(f.value);
  if (!t || t->elements.size() != 2) {
    r.diags.report(DiagID::err_setting_value, f.value->range)
        << "betas" << "a pair such as (0.9, 0.95)" << Reader::describe(f.value);
    return;
  }
  auto b1 = r.number(t->elements[0].get(), "betas", kFraction);
  auto b2 = r.number(t->elements[1].get(), "betas", kFraction);
  if (b1) o.beta1 = *b1;
  if (b2) o.beta2 = *b2;
}

void readOptimizer(const Entry &e, OptimizerConfig &out, Reader &r) {
  const KeySpec &key = spec("optimizer");
  auto s = r.structured(e, key);
  if (!s) return;
  if (s->scalar || (s->written && s->head.empty())) {
    r.formError(e.key, e.keyRange, key.example);
    return;
  }
  OptimizerConfig o; // a new optimizer starts from its own defaults
  o.kind = out.kind;
  if (!s->head.empty()) {
    auto k = r.choice("optimizer", s->head, s->headRange, kindNames<OptimizerKind>());
    if (!k) return;
    o.kind = OptimizerKind(*k);
  } else {
    o = out; // only --set arguments: they adjust the current optimizer
  }

  std::vector<StringRef> params = {"lr"};
  if (o.kind == OptimizerKind::SGD)
    params.insert(params.end(), {"momentum", "nesterov"});
  else
    params.insert(params.end(), {"betas", "eps"});
  params.insert(params.end(), {"weight_decay", "weight_decay_params", "warmup", "decay", "min_lr"});
  if (o.kind == OptimizerKind::Adam8bit) params.push_back("block_size");
  // Positional: sgd(lr, momentum, nesterov), adam(lr, betas, eps), as in PyTorch.
  Bound args = r.bind(spelling(o.kind), *s, params, 3, key.example);

  if (const Field *f = get(args, "lr"))
    if (auto v = r.number(f->value, "lr", kNonNegative)) o.lr = *v;
  if (const Field *f = get(args, "momentum"))
    if (auto v = r.number(f->value, "momentum", kFraction)) o.momentum = *v;
  if (const Field *f = get(args, "nesterov"))
    if (auto v = r.boolean(f->value, "nesterov")) o.nesterov = *v;
  if (const Field *f = get(args, "betas")) readBetas(*f, o, r);
  if (const Field *f = get(args, "eps"))
    if (auto v = r.number(f->value, "eps", kPositive)) o.eps = *v;
  if (const Field *f = get(args, "weight_decay"))
    if (auto v = r.number(f->value, "weight_decay", kNonNegative)) o.weightDecay = *v;
  if (const Field *f = get(args, "weight_decay_params")) {
    if (auto v = r.choiceOf(f->value, "weight_decay_params", "weight decay rule", kindNames<WeightDecayParams>()))
      o.weightDecayParams = WeightDecayParams(*v);
    if (o.weightDecay == 0)
      r.diags.report(DiagID::warn_setting_ignored, fieldRange(*f)) << "weight_decay_params" << "with weight_decay = 0";
  }
  if (const Field *f = get(args, "warmup"))
    if (auto v = r.integer(f->value, "warmup", 0, kMaxInt)) o.warmup = *v;
  if (const Field *f = get(args, "decay")) {
    if (auto v = r.choiceOf(f->value, "decay", "decay schedule", kindNames<DecayKind>())) o.decay = DecayKind(*v);
  }
  if (const Field *f = get(args, "min_lr"))
    if (auto v = r.number(f->value, "min_lr", kNonNegative)) {
      if (*v > o.lr)
        r.diags.report(DiagID::err_setting_value, f->value->range)
            << "min_lr" << ("at most lr = " + formatNumber(o.lr)) << Reader::describe(f->value);
      else
        o.minLr = *v;
      if (o.decay == DecayKind::Constant && *v > 0)
        r.diags.report(DiagID::warn_setting_ignored, fieldRange(*f)) << "min_lr" << "with decay = constant";
    }
  if (const Field *f = get(args, "block_size"))
    if (auto v = r.integer(f->value, "block_size", 1, kMaxCount)) o.blockSize = *v;
  if (o.nesterov && o.momentum == 0)
    if (const Field *f = get(args, "nesterov"))
      r.diags.report(DiagID::warn_setting_ignored, fieldRange(*f)) << "nesterov" << "without momentum";

  o.source.range = e.source;
  out = o;
}

//===----------------------------------------------------------------------===//
// precision
//===----------------------------------------------------------------------===//

unsigned dtypeBits(StringRef dtype) {
  return llvm::StringSwitch<unsigned>(dtype).Case("f64", 64).Case("f32", 32).StartsWith("fp8", 8).Default(16);
}

void readLossScale(const Field &f, PrecisionConfig &p, Reader &r) {
  Structured s = r.structured(*f.value);
  if (s.scalar) { // `loss_scale = 1024` is a static scale
    if (auto v = r.number(s.scalar, "loss_scale", kPositive)) {
      p.lossScaling = LossScaling::Static;
      p.initialScale = *v;
    }
    return;
  }
  auto k = r.choice("loss scaling", s.head, s.headRange, kindNames<LossScaling>());
  if (!k) return;
  p.lossScaling = LossScaling(*k);
  static const StringRef dynamicParams[] = {"scale", "growth_interval"};
  ArrayRef<StringRef> params = p.lossScaling == LossScaling::Dynamic  ? ArrayRef<StringRef>(dynamicParams)
                               : p.lossScaling == LossScaling::Static ? ArrayRef<StringRef>(dynamicParams).take_front()
                                                                      : ArrayRef<StringRef>();
  Bound args = r.bind(s.head, s, params, 2, "'loss_scale = dynamic(scale = 65536)'");
  if (const Field *a = get(args, "scale"))
    if (auto v = r.number(a->value, "scale", kPositive)) p.initialScale = *v;
  if (const Field *a = get(args, "growth_interval"))
    if (auto v = r.integer(a->value, "growth_interval", 1, kMaxInt)) p.growthInterval = *v;
}

void readPrecision(const Entry &e, PrecisionConfig &out, Reader &r) {
  const KeySpec &key = spec("precision");
  auto s = r.structured(e, key);
  if (!s) return;
  if (s->scalar || (s->written && s->head.empty())) {
    r.formError(e.key, e.keyRange, key.example);
    return;
  }
  PrecisionConfig p = out;
  if (!s->head.empty()) {
    static const StringRef computes[] = {"f32", "bf16", "f16", "fp8_e4m3"};
    auto k = r.choice("compute dtype", s->head, s->headRange, computes);
    if (!k) return;
    // fp8 training needs per-tensor scaling that no pass inserts yet; the
    // mixed-precision pass would stop on it as a compiler bug.
    if (computes[*k].startswith("fp8")) {
      r.diags.report(DiagID::err_not_supported_yet, s->headRange)
          << ("precision '" + computes[*k] + "'").str() << "use bf16 or f16";
      return;
    }
    p = PrecisionConfig();
    p.compute = computes[*k].str();
    // fp16's narrow exponent underflows small gradients without a loss scale;
    // bf16 and fp8 training (per-tensor scaled) do without one.
    p.lossScaling = p.compute == "f16" ? LossScaling::Dynamic : LossScaling::None;
  }
  Bound args = r.bind(p.compute, *s, {"master", "grads", "loss_scale"}, 0, key.example);
  if (const Field *f = get(args, "master")) {
    static const StringRef masters[] = {"f64", "f32", "bf16", "f16"};
    if (auto k = r.choiceOf(f->value, "master", "master dtype", masters)) {
      if (dtypeBits(masters[*k]) < dtypeBits(p.compute))
        r.diags.report(DiagID::err_setting_value, f->value->range)
            << "master" << ("a dtype at least as wide as the compute dtype " + p.compute)
            << Reader::describe(f->value);
      else
        p.master = masters[*k].str();
    }
  }
  if (const Field *f = get(args, "grads")) {
    // The gradients the backward pass sums and the optimizer reads: the
    // compute dtype (ZeRO's and DeepSpeed's 2 bytes per parameter) or f32
    // (Megatron-LM's fp32 main gradients).
    static const StringRef gradDtypes[] = {"f32", "bf16", "f16"};
    if (auto k = r.choiceOf(f->value, "grads", "gradient dtype", gradDtypes)) {
      if (dtypeBits(gradDtypes[*k]) < dtypeBits(p.compute) || (gradDtypes[*k] != "f32" && gradDtypes[*k] != p.compute))
        r.diags.report(DiagID::err_setting_value, f->value->range)
            << "grads" << ("f32 or the compute dtype " + p.compute) << Reader::describe(f->value);
      else
        p.grads = gradDtypes[*k].str();
    }
  }
  if (const Field *f = get(args, "loss_scale")) readLossScale(*f, p, r);
  p.source.range = e.source;
  out = p;
}

//===----------------------------------------------------------------------===//
// adapters
//===----------------------------------------------------------------------===//

/// `adapters none` or `adapters lora(rank = 8, alpha = 16.0)`; alpha defaults
/// to 2 x rank (alpaca-lora's 16 at rank 8, and std.lora's lora_linear).
void readAdapters(const Entry &e, AdapterConfig &out, Reader &r) {
  const KeySpec &key = spec("adapters");
  auto s = r.structured(e, key);
  if (!s) return;
  if (s->scalar || (s->written && s->head.empty())) {
    r.formError(e.key, e.keyRange, key.example);
    return;
  }
  static const StringRef kinds[] = {"none", "lora"}; // AdapterKind order
  AdapterConfig a = out;
  if (!s->head.empty()) {
    auto k = r.choice("adapter kind", s->head, s->headRange, kinds);
    if (!k) return;
    a = AdapterConfig();
    a.kind = AdapterKind(*k);
  }
  static const StringRef loraParams[] = {"rank", "alpha"};
  ArrayRef<StringRef> params = a.kind == AdapterKind::LoRA ? ArrayRef<StringRef>(loraParams) : ArrayRef<StringRef>();
  Bound args = r.bind(kinds[unsigned(a.kind)], *s, params, 2, key.example);
  if (const Field *f = get(args, "rank"))
    if (auto v = r.integer(f->value, "rank", 1, kMaxCount)) a.rank = *v;
  if (const Field *f = get(args, "alpha"))
    if (auto v = r.number(f->value, "alpha", kPositive)) {
      a.alpha = *v;
      a.alphaWritten = true;
    }
  if (!a.alphaWritten) a.alpha = 2.0 * double(a.rank);
  a.source.range = e.source;
  out = a;
}

//===----------------------------------------------------------------------===//
// data and checkpoint
//===----------------------------------------------------------------------===//

void readData(const Entry &e, DataConfig &out, Reader &r) {
  const KeySpec &key = spec("data");
  auto s = r.structured(e, key);
  if (!s) return;
  if (s->scalar || (s->written && s->head.empty())) {
    r.formError(e.key, e.keyRange, key.example);
    return;
  }
  static const StringRef kinds[] = {"synthetic", "text", "tokens"}; // DataKind order
  DataConfig d = out;
  if (!s->head.empty()) {
    auto k = r.choice("data kind", s->head, s->headRange, kinds);
    if (!k) return;
    d = DataConfig();
    d.kind = DataKind(*k);
  }
  static const StringRef tokenParams[] = {"path", "dtype"};
  ArrayRef<StringRef> params = d.kind == DataKind::Tokens ? ArrayRef<StringRef>(tokenParams)
                               : d.kind == DataKind::Text ? ArrayRef<StringRef>(tokenParams).take_front()
                                                          : ArrayRef<StringRef>();
  Bound args = r.bind(kinds[unsigned(d.kind)], *s, params, 2, key.example);
  if (d.kind == DataKind::Tokens && d.tokenDtype.empty()) d.tokenDtype = "u16"; // nanoGPT's .bin
  if (const Field *f = get(args, "path")) {
    if (auto v = r.string(f->value, "path")) d.path = *v;
  } else if (d.kind != DataKind::Synthetic && d.path.empty()) {
    r.diags.report(DiagID::err_missing_arg, s->headRange.isValid() ? s->headRange : e.keyRange)
        << "path" << kinds[unsigned(d.kind)];
  }
  if (const Field *f = get(args, "dtype")) {
    static const StringRef dtypes[] = {"u16", "u32"};
    if (auto k = r.choiceOf(f->value, "dtype", "token dtype", dtypes)) d.tokenDtype = dtypes[*k].str();
  }
  d.source.range = e.source;
  out = d;
}

void readCheckpoint(const Entry &e, CheckpointConfig &out, Reader &r) {
  const KeySpec &key = spec("checkpoint");
  auto s = r.structured(e, key);
  if (!s) return;
  if (s->scalar || (!s->head.empty() && s->head != "checkpoint")) {
    r.formError(e.key, e.keyRange, key.example);
    return;
  }
  CheckpointConfig c = out;
  Bound args = r.bind("checkpoint", *s, {"every", "dir", "keep"}, 3, key.example);
  if (const Field *f = get(args, "every"))
    if (auto v = r.integer(f->value, "every", 0, kMaxInt)) c.every = *v;
  if (const Field *f = get(args, "dir"))
    if (auto v = r.string(f->value, "dir")) c.dir = *v;
  if (const Field *f = get(args, "keep"))
    if (auto v = r.integer(f->value, "keep", 0, kMaxInt)) c.keep = *v;
  if (c.every == 0 && !args.empty() && !get(args, "every"))
    r.diags.report(DiagID::warn_setting_ignored, e.keyRange) << "checkpoint" << "without 'every'";
  c.source.range = e.source;
  out = c;
}

} // namespace

ArrayRef<KeySpec> config::trainKeys() { return keys; }

void config::interpretTrain(const Block &block, TrainConfig &t, Reader &r) {
  r.readInteger(block, spec("global_batch"), t.globalBatch, t.globalBatchSource, 1, kMaxBatch);
  r.readInteger(block, spec("micro_batch"), t.microBatch, t.microBatchSource, 1, kMaxBatch);
  r.readInteger(block, spec("steps"), t.steps, t.stepsSource, 1, kMaxInt);
  r.readInteger(block, spec("seed"), t.seed, t.seedSource, 0, kMaxInt);
  r.with(block, "clip_grad_norm", [&](const Entry &e) {
    if (const ast::Expr *x = r.scalar(e, spec("clip_grad_norm")))
      if (auto v = r.number(x, "clip_grad_norm", kNonNegative)) {
        t.clipGradNorm = *v;
        t.clipSource.range = e.source;
      }
  });
  r.with(block, "optimizer", [&](const Entry &e) { readOptimizer(e, t.optimizer, r); });
  r.with(block, "precision", [&](const Entry &e) { readPrecision(e, t.precision, r); });
  r.with(block, "adapters", [&](const Entry &e) { readAdapters(e, t.adapters, r); });
  r.with(block, "data", [&](const Entry &e) { readData(e, t.data, r); });
  r.with(block, "checkpoint", [&](const Entry &e) { readCheckpoint(e, t.checkpoint, r); });
  r.with(block, "names", [&](const Entry &e) {
    const ast::Expr *x = r.scalar(e, spec("names"));
    if (!x) return;
    if (auto *n = llvm::dyn_cast<ast::NameExpr>(x)) {
      t.names = n->name;
      t.namesSource.range = e.source;
      t.namesRange = n->range;
    } else {
      r.formError(e.key, e.keyRange, spec("names").example);
    }
  });
  r.with(block, "fusion", [&](const Entry &e) {
    const ast::Expr *x = r.scalar(e, spec("fusion"));
    if (x)
      if (auto k = r.choiceOf(x, "fusion", "fusion policy", kindNames<FusionPolicy>())) {
        t.fusion = FusionPolicy(*k);
        t.fusionSource.range = e.source;
      }
  });
}
