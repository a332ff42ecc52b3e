//===- passes/PassOptionTable.cpp - pass options from key=value text -----===//
//
// A row per key. Values are read as a plan writes them: numbers as strtod
// reads them, booleans true / false (or 1 / 0), choices by their spelling
// (ir/TrainingKinds.h), dtypes by name (fp32, fp16 and fp64 as aliases).
// A bad value is an error in the words of the pass that reads the key.
//
//===----------------------------------------------------------------------===//

#include "passes/PassOptionTable.h"
#include "support/Error.h"

#include "ir/Printer.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <cstring>

using namespace planc;

namespace {

/// "<family> setting '<key>' must be <want>, got '<value>'".
llvm::Error bad(const char *family, const char *key, llvm::StringRef value, const llvm::Twine &want) {
  return makeError(llvm::Twine(family) + " setting '" + key + "' must be " + want + ", got '" + value + "'");
}

template <class O, class T> using Field = std::function<T &(O &)>;

template <class O> PassOptionRow<O> number(const char *family, const char *key, const char *help, Field<O, double> field,
                                           double lo, double hi, bool hiOpen) {
  return {key, help, [=](O &o, llvm::StringRef text) -> llvm::Error {
            double v;
            if (text.trim().getAsDouble(v) || !std::isfinite(v)) return bad(family, key, text, "a number");
            if (v < lo || v > hi || (hiOpen && v == hi))
              return bad(family, key, text,
                         "a number in [" + ir::formatFloat(lo) + ", " + ir::formatFloat(hi) + (hiOpen ? ")" : "]"));
            field(o) = v;
            return llvm::Error::success();
          },
          [=](const O &o) {
            O copy = o;
            return ir::formatFloat(field(copy));
          }};
}

/// A number > 0, said as "a positive number".
template <class O>
PassOptionRow<O> positive(const char *family, const char *key, const char *help, Field<O, double> field) {
  return {key, help, [=](O &o, llvm::StringRef text) -> llvm::Error {
            double v;
            if (text.trim().getAsDouble(v) || !std::isfinite(v) || !(v > 0))
              return bad(family, key, text, "a positive number");
            field(o) = v;
            return llvm::Error::success();
          },
          [=](const O &o) {
            O copy = o;
            return ir::formatFloat(field(copy));
          }};
}

template <class O, class T>
PassOptionRow<O> integer(const char *family, const char *key, const char *help, Field<O, T> field, int64_t lo,
                         const char *want = nullptr) {
  return {key, help, [=](O &o, llvm::StringRef text) -> llvm::Error {
            int64_t v;
            if (text.trim().getAsInteger(10, v) || v < lo)
              return bad(family, key, text, want ? llvm::Twine(want) : "an integer >= " + llvm::Twine(lo));
            field(o) = T(v);
            return llvm::Error::success();
          },
          [=](const O &o) {
            O copy = o;
            return std::to_string(field(copy));
          }};
}

template <class O> PassOptionRow<O> boolean(const char *family, const char *key, const char *help, Field<O, bool> field) {
  return {key, help, [=](O &o, llvm::StringRef text) -> llvm::Error {
            llvm::StringRef s = text.trim();
            if (s == "true" || s == "1") field(o) = true;
            else if (s == "false" || s == "0") field(o) = false;
            else return bad(family, key, text, "true or false");
            return llvm::Error::success();
          },
          [=](const O &o) {
            O copy = o;
            return std::string(field(copy) ? "true" : "false");
          }};
}

/// A value of an enum of ir/TrainingKinds.h, said as "one of a, b, c"
/// unless `want` says it otherwise.
template <class O, class Kind>
PassOptionRow<O> choice(const char *family, const char *key, const char *help, Field<O, Kind> field,
                        std::function<std::string()> want = [] { return "one of " + kindList<Kind>(); }) {
  return {key, help + (": " + kindList<Kind>()), [=](O &o, llvm::StringRef text) -> llvm::Error {
            std::optional<Kind> k = parseKind<Kind>(text.trim());
            if (!k) return bad(family, key, text, want());
            field(o) = *k;
            return llvm::Error::success();
          },
          [=](const O &o) {
            O copy = o;
            return kindNames<Kind>()[unsigned(field(copy))].str();
          }};
}

/// A dtype name as a plan or an option writes it; fp32, fp16, fp64 are aliases.
std::optional<ir::DType> dtypeNamed(llvm::StringRef s) {
  s = s.trim();
  if (s == "fp32") return ir::DType::F32;
  if (s == "fp16") return ir::DType::F16;
  if (s == "fp64") return ir::DType::F64;
  return ir::parseDType(s);
}

using T = TrainingOptions;
using P = PartitionOptions;

} // namespace

llvm::ArrayRef<PassOptionRow<TrainingOptions>> planc::trainingOptionTable() {
  const double inf = INFINITY;
  const char *opt = "optimizer";
  static const std::vector<PassOptionRow<T>> rows = {
      choice<T, OptimizerKind>(opt, "optimizer", "the update rule",
                               [](T &o) -> OptimizerKind & { return o.optimizer.kind; }),
      number<T>(opt, "lr", "peak learning rate, >= 0", [](T &o) -> double & { return o.optimizer.lr; },
                0, inf, false),
      number<T>(opt, "beta1", "Adam's first moment decay, in [0, 1)",
                [](T &o) -> double & { return o.optimizer.beta1; }, 0, 1, true),
      number<T>(opt, "beta2", "Adam's second moment decay, in [0, 1)",
                [](T &o) -> double & { return o.optimizer.beta2; }, 0, 1, true),
      number<T>(opt, "eps", "Adam's denominator term, >= 0",
                [](T &o) -> double & { return o.optimizer.eps; }, 0, inf, false),
      number<T>(opt, "weight_decay", ">= 0; Adam: L2, AdamW: decoupled",
                [](T &o) -> double & { return o.optimizer.weightDecay; }, 0, inf, false),
      choice<T, WeightDecayParams>(opt, "weight_decay_params",
                                   "the parameters weight_decay applies to (matrices: 2+ dims)",
                                   [](T &o) -> WeightDecayParams & { return o.optimizer.weightDecayParams; }),
      number<T>(opt, "momentum", "SGD momentum, in [0, 1)",
                [](T &o) -> double & { return o.optimizer.momentum; }, 0, 1, true),
      boolean<T>(opt, "nesterov", "SGD Nesterov momentum",
                 [](T &o) -> bool & { return o.optimizer.nesterov; }),
      integer<T, int64_t>(opt, "warmup", "steps of linear warm-up, >= 0",
                          [](T &o) -> int64_t & { return o.optimizer.warmup; }, 0),
      choice<T, DecayKind>(opt, "decay", "the decay after warm-up",
                           [](T &o) -> DecayKind & { return o.optimizer.decay; }),
      number<T>(opt, "min_lr", "the decay's floor, in [0, lr]",
                [](T &o) -> double & { return o.optimizer.minLr; }, 0, inf, false),
      integer<T, int64_t>(opt, "total_steps", "the step at which the decay ends",
                          [](T &o) -> int64_t & { return o.optimizer.totalSteps; }, 0),
      number<T>(opt, "clip_grad_norm", "global-norm gradient clipping; 0: none",
                [](T &o) -> double & { return o.optimizer.clipGradNorm; }, 0, inf, false),
      integer<T, int64_t>(opt, "block_size", "8-bit Adam's quantisation block, >= 1",
                          [](T &o) -> int64_t & { return o.optimizer.blockSize; }, 1),
      {"compute_dtype", "the forward graph's dtype: f64, f32, bf16, f16",
       [](T &o, llvm::StringRef text) -> llvm::Error {
         std::optional<ir::DType> t = dtypeNamed(text);
         if (!t || !isLoweredComputeDType(*t))
           return bad("mixed-precision", "compute_dtype", text, "f64, f32, bf16 or f16");
         o.precision.compute = *t;
         return llvm::Error::success();
       },
       [](const T &o) { return std::string(ir::spelling(o.precision.compute)); }},
      {"grad_dtype", "the dtype the optimizer reads gradients in; empty: as autodiff made them",
       [](T &o, llvm::StringRef text) -> llvm::Error {
         if (text.trim().empty()) {
           o.precision.grads.reset();
           return llvm::Error::success();
         }
         std::optional<ir::DType> t = dtypeNamed(text);
         if (!t || !ir::isFloat(*t)) return bad("optimizer", "grad_dtype", text, "a float dtype");
         o.precision.grads = *t;
         return llvm::Error::success();
       },
       [](const T &o) { return o.precision.grads ? std::string(ir::spelling(*o.precision.grads)) : std::string(); }},
      choice<T, LossScaling>("loss-scaling", "loss_scaling", "fp16 loss scaling",
                             [](T &o) -> LossScaling & { return o.precision.lossScaling; },
                             [] { return kindList<LossScaling>(", ", " or "); }),
      positive<T>("loss-scaling", "loss_scale_init", "the first (or the static) loss scale, > 0",
                  [](T &o) -> double & { return o.precision.lossScaleInit; }),
      integer<T, int64_t>("loss-scaling", "loss_scale_window",
                          "dynamic scaling: overflow-free steps before the scale grows, >= 1",
                          [](T &o) -> int64_t & { return o.precision.lossScaleWindow; }, 1),
      choice<T, FusionPolicy>("fuse-attention", "fusion",
                              "fusion policy (elementwise: chains of elementwise ops; aggressive: those and attention)",
                              [](T &o) -> FusionPolicy & { return o.fusion.policy; },
                              [] { return kindList<FusionPolicy>(", ", " or "); }),
      integer<T, int64_t>("lora", "lora_rank", "LoRA adapters' rank; 0: no adapters",
                          [](T &o) -> int64_t & { return o.lora.rank; }, 0, "a non-negative integer"),
      {"lora_alpha", "LoRA's scale numerator, > 0; empty: 2 x rank",
       [](T &o, llvm::StringRef text) -> llvm::Error {
         if (text.trim().empty()) {
           o.lora.alpha.reset();
           return llvm::Error::success();
         }
         double v;
         if (text.trim().getAsDouble(v) || !(v > 0)) return bad("lora", "lora_alpha", text, "a positive number");
         o.lora.alpha = v;
         return llvm::Error::success();
       },
       [](const T &o) { return o.lora.alpha ? ir::formatFloat(*o.lora.alpha) : std::string(); }},
  };
  return rows;
}

llvm::ArrayRef<PassOptionRow<PartitionOptions>> planc::partitionOptionTable() {
  const char *part = "partition";
  static const std::vector<PassOptionRow<P>> rows = {
      integer<P, int64_t>(part, "zero_stage", "ZeRO: 0 none, 1 optimizer states, 2 and gradients, 3 and parameters",
                          [](P &o) -> int64_t & { return o.zeroStage; }, 0),
      boolean<P>(part, "sequence_parallel", "split tp-replicated activations along the sequence",
                 [](P &o) -> bool & { return o.sequenceParallel; }),
      {"recompute", std::string("activation recomputation: ") + kindList<RecomputePolicy>(),
       [](P &o, llvm::StringRef text) -> llvm::Error {
         std::optional<RecomputePolicy> p = parseKind<RecomputePolicy>(text.trim());
         if (!p)
           return makeError("unknown recompute policy '" + text + "' (pass option \"recompute\"); expected none, selective, "
                       "full or auto");
         o.recompute = *p;
         return llvm::Error::success();
       },
       [](const P &o) { return std::string(spelling(o.recompute)); }},
      integer<P, uint64_t>(part, "bucket_bytes", "bytes per gradient reduction bucket, >= 1",
                           [](P &o) -> uint64_t & { return o.bucketBytes; }, 1),
      boolean<P>(part, "overlap_grad_reduce", "issue gradient buckets during backward",
                 [](P &o) -> bool & { return o.overlapGradReduce; }),
      boolean<P>(part, "overlap_param_gather", "ZeRO-3: gather each parameter one use ahead",
                 [](P &o) -> bool & { return o.overlapParamGather; }),
      choice<P, ScheduleStyle>(part, "pipeline_schedule",
                               "the pipeline schedule",
                               [](P &o) -> ScheduleStyle & { return o.pipeline.style; }),
      integer<P, int64_t>(part, "micro_batches", "micro-batches per step, >= 1",
                          [](P &o) -> int64_t & { return o.pipeline.microBatches; }, 1),
      integer<P, int64_t>(part, "virtual_stages", "interleaved: model chunks per pipeline rank, >= 1",
                          [](P &o) -> int64_t & { return o.pipeline.virtualStages; }, 1),
      choice<P, StageBalance>(part, "stage_balance", "how pipeline chunks are cut",
                              [](P &o) -> StageBalance & { return o.pipeline.balance; }),
  };
  return rows;
}

llvm::Error planc::setPassOption(PassPipelineOptions &options, llvm::StringRef key, llvm::StringRef value) {
  for (const PassOptionRow<TrainingOptions> &row : trainingOptionTable())
    if (key == row.key) return row.set(options.training, value);
  for (const PassOptionRow<PartitionOptions> &row : partitionOptionTable())
    if (key == row.key) return row.set(options.partition, value);
  return checkPassOptionKey(key);
}

llvm::Error planc::checkPassOptionKey(llvm::StringRef key) {
  for (const auto &row : trainingOptionTable())
    if (key == row.key) return llvm::Error::success();
  for (const auto &row : partitionOptionTable())
    if (key == row.key) return llvm::Error::success();
  std::string keys;
  for (const auto &row : trainingOptionTable()) keys += (keys.empty() ? "" : ", ") + std::string(row.key);
  for (const auto &row : partitionOptionTable()) keys += ", " + std::string(row.key);
  return makeError("unknown pass option '" + key + "'; the options are " + keys);
}

std::string planc::passOptionValue(const PassPipelineOptions &options, llvm::StringRef key) {
  for (const auto &row : trainingOptionTable())
    if (key == row.key) return row.show(options.training);
  for (const auto &row : partitionOptionTable())
    if (key == row.key) return row.show(options.partition);
  return "";
}

void planc::printPassOptionHelp(llvm::raw_ostream &os) {
  auto print = [&](const char *title, auto rows, const auto &defaults) {
    os << title << ":\n";
    for (const auto &row : rows) {
      os << "  " << row.key;
      for (size_t n = std::strlen(row.key); n < 22; ++n) os << ' ';
      std::string value = row.show(defaults);
      os << "  " << row.help << " (default " << (value.empty() ? "none" : value) << ")\n";
    }
  };
  print("TRAINING PASS OPTIONS (lora, fuse-attention, fuse-elementwise, mixed-precision, optimizer, loss-scaling)", trainingOptionTable(), TrainingOptions{});
  print("PARTITION PASS OPTIONS (recompute, zero, propagate-sharding, sp-regather, param-prefetch, grad-buckets, "
        "pipeline, check-deadlock)",
        partitionOptionTable(), PartitionOptions{});
}
