//===- ir/TrainingKinds.h - the named choices of a training plan -*- C++ -*-===//
//
// The enums a plan's settings choose among (optimizer, learning-rate decay,
// which parameters weight decay applies to, loss scaling, recompute policy,
// pipeline schedule), in one place for the
// frontend that reads them from a plan and the passes that act on them, each
// with one table of spellings: a plan, a pass option and every printout
// spell a choice the same way. Stage balance has its own header
// (ir/StageBalance.h).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_TRAININGKINDS_H
#define PLANC_IR_TRAININGKINDS_H

#include "ir/StageBalance.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace planc {

enum class OptimizerKind { SGD, Adam, AdamW, Adam8bit };
enum class DecayKind { Constant, Linear, Cosine };
/// Which parameters the optimizer's weight decay applies to, unless a
/// parameter says otherwise (@weight_decay, @no_weight_decay): `matrices`,
/// those of 2 or more dims (weight matrices and embedding tables, not biases
/// or norm weights: nanoGPT's, Megatron-LM's and Hugging Face's Trainer's
/// rule), or `all`.
enum class WeightDecayParams { Matrices, All };
enum class LossScaling { None, Static, Dynamic };
// No `auto` yet: choosing per layer from the memory budget is not written.
enum class RecomputePolicy { None, Selective, Full };
/// Which ops fusion puts into one kernel: `elementwise` fuses chains of
/// elementwise ops (passes/FuseElementwise.h), `aggressive` those, each
/// attention into flash_attention (passes/FuseAttention.h) and weight-
/// gradient sums and transposes into their matmuls (passes/FoldIntoMatMul.cpp).
/// Every policy computes the same step up to rounding (the interpreter
/// checks it); they differ in what is written to memory.
enum class FusionPolicy { None, Elementwise, Aggressive };
/// A plan that does not say: every fusion, as every large training run
/// uses flash attention. `none` stays for the published activation formulas
/// that count the s x s scores (docs/fusion.md).
constexpr FusionPolicy kDefaultFusion = FusionPolicy::Aggressive;
/// How a pipeline orders its micro-batches (analysis/PipelineSchedule.h).
enum class ScheduleStyle { GPipe, OneFOneB, Interleaved, ZeroBubble };

/// The schedule of a module's pipeline: what analysis/PipelineSchedule.h
/// builds the instructions of every pipeline rank from, and what the
/// `pipeline` pass records on the module it cuts (ir::Module::schedule).
struct ScheduleOptions {
  ScheduleStyle style = ScheduleStyle::OneFOneB;
  int stages = 1;        // p: pipeline ranks
  int microBatches = 1;  // m
  int virtualStages = 1; // v: model chunks per rank (interleaved only)
};

/// The spellings of an enum's values, in the enum's order.
template <class Kind> llvm::ArrayRef<llvm::StringRef> kindNames();

template <> inline llvm::ArrayRef<llvm::StringRef> kindNames<OptimizerKind>() {
  static const llvm::StringRef names[] = {"sgd", "adam", "adamw", "adam8bit"};
  return names;
}
template <> inline llvm::ArrayRef<llvm::StringRef> kindNames<DecayKind>() {
  static const llvm::StringRef names[] = {"constant", "linear", "cosine"};
  return names;
}
template <> inline llvm::ArrayRef<llvm::StringRef> kindNames<WeightDecayParams>() {
  static const llvm::StringRef names[] = {"matrices", "all"};
  return names;
}
template <> inline llvm::ArrayRef<llvm::StringRef> kindNames<LossScaling>() {
  static const llvm::StringRef names[] = {"none", "static", "dynamic"};
  return names;
}
template <> inline llvm::ArrayRef<llvm::StringRef> kindNames<RecomputePolicy>() {
  static const llvm::StringRef names[] = {"none", "selective", "full"};
  return names;
}
template <> inline llvm::ArrayRef<llvm::StringRef> kindNames<FusionPolicy>() {
  static const llvm::StringRef names[] = {"none", "elementwise", "aggressive"};
  return names;
}
template <> inline llvm::ArrayRef<llvm::StringRef> kindNames<ScheduleStyle>() {
  static const llvm::StringRef names[] = {"gpipe", "1f1b", "interleaved", "zero_bubble"};
  return names;
}
template <> inline llvm::ArrayRef<llvm::StringRef> kindNames<StageBalance>() {
  static const llvm::StringRef names[] = {"layers", "flops"};
  return names;
}

/// The value `name` spells, if any.
template <class Kind> std::optional<Kind> parseKind(llvm::StringRef name) {
  llvm::ArrayRef<llvm::StringRef> names = kindNames<Kind>();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return Kind(i);
  return std::nullopt;
}

/// "a, b, c" (or with `last` before the last: "a, b or c"), the spellings
/// for a message.
template <class Kind> std::string kindList(llvm::StringRef separator = ", ", llvm::StringRef last = ", ") {
  llvm::ArrayRef<llvm::StringRef> names = kindNames<Kind>();
  std::string list;
  for (size_t i = 0; i < names.size(); ++i)
    list += (i == 0 ? "" : i + 1 == names.size() ? last.str() : separator.str()) + names[i].str();
  return list;
}

inline const char *spelling(OptimizerKind k) { return kindNames<OptimizerKind>()[unsigned(k)].data(); }
inline const char *spelling(DecayKind k) { return kindNames<DecayKind>()[unsigned(k)].data(); }
inline const char *spelling(WeightDecayParams k) { return kindNames<WeightDecayParams>()[unsigned(k)].data(); }
inline const char *spelling(LossScaling k) { return kindNames<LossScaling>()[unsigned(k)].data(); }
inline const char *spelling(RecomputePolicy k) { return kindNames<RecomputePolicy>()[unsigned(k)].data(); }
inline const char *spelling(FusionPolicy k) { return kindNames<FusionPolicy>()[unsigned(k)].data(); }
inline const char *spelling(ScheduleStyle k) { return kindNames<ScheduleStyle>()[unsigned(k)].data(); }
inline const char *spelling(StageBalance k) { return kindNames<StageBalance>()[unsigned(k)].data(); }

} // namespace planc

#endif
