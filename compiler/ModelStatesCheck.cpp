//===- compiler/ModelStatesCheck.cpp - ZeRO's bytes, stage by stage -------===//

#include "compiler/ModelStatesCheck.h"
#include "compiler/Ledger.h"
#include "compiler/Pipeline.h"
#include "compiler/TrainOptions.h"

#include "ir/IR.h"
#include "ir/OpDef.h"
#include "ir/Placement.h"
#include "ir/StepOutputs.h"
#include "analysis/MemoryPlan.h"
#include "passes/Passes.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <map>
#include <set>

using namespace planc;
using namespace planc::ir;
using memory::Category;

namespace {

/// The formula's bytes of one category on one stage.
struct Share {
  double bytes = 0;   // unpadded
  double padding = 0; // what padded shards may add
  double whole = 0;   // the same without ZeRO's split
  size_t tensors = 0;
  uint64_t elements = 0;
};

std::string pathOf(const Value &p) { return p.path.empty() ? p.name : p.path; }

/// The parameter an optimizer op updates: an update op's first operand, or
/// plain SGD's `p - step` (elementwise, no update op), through the ZeRO
/// shard_slice of the parameter; fused (fusion), that step is one
/// fused_elementwise reading the parameter beside the gradient.
const Value *updatedParam(const Op &op) {
  if (phaseOf(op) != Phase::Optimizer || op.operands.empty()) return nullptr;
  auto param = [](const Value *v) -> const Value * {
    if (v->def && v->def->kind == OpKind::ShardSlice) v = v->def->operands[0];
    return v->kind == Value::Kind::Param ? v : nullptr;
  };
  if (op.kind == OpKind::FusedElementwise) {
    for (const Value *v : op.operands)
      if (v->type.shape == op.results[0]->type.shape)
        if (const Value *p = param(v)) return p;
    return nullptr;
  }
  if (!isOptimizerUpdate(op.kind) && op.kind != OpKind::Sub) return nullptr;
  return param(op.operands[0]);
}

/// A parameter as the plan trains it: its dtype as declared (or the master
/// dtype of train.precision), whether it trains, and the dtypes the ops
/// reading it compute in (their `@precision`, else the compute dtype; an
/// explicit cast's own dtype).
struct TrainedParam {
  DType declared = DType::F32;
  bool frozen = false;
  std::set<DType> reads;
};

/// The parameters of the model the optimizer trains (the forward module
/// with the plan's adapters), by path.
llvm::Expected<std::map<std::string, TrainedParam>> trainedParams(Compilation &c, const PassPipelineOptions &passes,
                                                                   bool verifyEach) {
  CompileOptions options;
  options.passes.verifyEach = verifyEach;
  options.stopAfter = CompileStage::ForwardIR;
  auto forward = compile(c, options);
  if (!forward) return forward.takeError();
  Module &m = *forward->module;
  if (passes.training.lora.rank > 0)
    if (llvm::Error e = createLoraAdaptersPass(passes.training.lora)->run(m)) return e;
  const DType compute = passes.training.precision.compute;
  std::map<std::string, TrainedParam> params;
  for (const Value *p : m.params) params[pathOf(*p)] = {p->type.dtype, p->frozen, {}};
  for (const auto &op : m.ops)
    for (const Value *v : op->operands) {
      if (v->kind != Value::Kind::Param) continue;
      DType computesIn = compute;
      if (op->kind == OpKind::Cast) {
        computesIn = op->results[0]->type.dtype;
      } else if (op->has("precision")) {
        std::optional<DType> asked = parseDType(op->getString("precision"));
        // fp8 runs in the compute dtype (mixed-precision does no scaling).
        if (asked && isFloat(*asked) && byteSize(*asked) > 1) computesIn = *asked;
      }
      params[pathOf(*v)].reads.insert(computesIn);
    }
  return params;
}

/// The formula's bytes per element of one parameter, by category (the rules
/// of ModelStatesCheck.h). Mixed-precision narrows only under bf16 or f16
/// compute; a read in the parameter's own dtype or wider leaves no master.
struct PerElement {
  unsigned parameters = 0, gradients = 0, optimizer = 0;
};
PerElement perElement(const TrainedParam &p, const PassPipelineOptions &passes) {
  const PrecisionOptions &prec = passes.training.precision;
  const OptimizerOptions &opt = passes.training.optimizer;
  const DType compute = prec.compute;
  const bool mixed = compute == DType::BF16 || compute == DType::F16;
  const unsigned own = byteSize(p.declared);
  PerElement e;
  if (p.frozen) {
    e.parameters = mixed && isFloat(p.declared) && own > byteSize(compute) ? byteSize(compute) : own;
    return e;
  }
  std::set<DType> narrow;
  for (DType t : p.reads)
    if (byteSize(t) < own) narrow.insert(t);
  const bool master = mixed && !p.reads.empty() && narrow.size() == p.reads.size();
  const unsigned copies = opt.kind == OptimizerKind::SGD ? (opt.momentum > 0 ? 1 : 0) : 2;
  e.optimizer = copies * own;
  if (master) {
    for (DType t : narrow) e.parameters += byteSize(t);
    e.optimizer += own;
  } else {
    e.parameters = own;
  }
  const bool narrowGradient = master && narrow.size() == 1 && prec.grads == *narrow.begin();
  e.gradients = narrowGradient ? byteSize(*narrow.begin()) : own;
  return e;
}

} // namespace

llvm::Expected<ModelStatesCheck> planc::checkModelStates(Compilation &c, bool verifyEach) {
  const PlanConfig &config = c.getConfig();
  ModelStatesCheck result;
  const OptimizerConfig &opt = config.train.optimizer;
  if (opt.kind == OptimizerKind::Adam8bit) {
    result.skipped = "8-bit Adam's block scales are not in the formula";
    return result;
  }
  const PassPipelineOptions passes = passOptionsFromConfig(config);
  auto trained = trainedParams(c, passes, verifyEach);
  if (!trained) return trained.takeError();
  CompileOptions options;
  options.passes.verifyEach = verifyEach;
  options.stopAfter = CompileStage::MemoryPlanned;
  auto compiled = compile(c, options);
  if (!compiled) return compiled.takeError();
  const Module &m = *compiled->module;
  const memory::MemoryPlan *plan = &*compiled->memory;
  const int64_t zero = config.parallel.zeroStage, dp = config.parallel.size(MeshAxis::DP);
  const int64_t pp = config.parallel.size(MeshAxis::PP);

  // The stages that hold each parameter: those that update it (a replica of
  // the update too); a frozen weight's, those that read it in forward. The
  // optimizer's state is held frozen too, but is never read in forward.
  std::map<const Value *, std::set<int64_t>> stagesOf;
  auto onStagesOf = [&](const Value *p, const Op &op) {
    if (hasPipelineStage(op)) stagesOf[p].insert(pipelineStageOf(op));
    else for (int64_t s = 0; s < pp; ++s) stagesOf[p].insert(s);
  };
  std::set<const Value *> state;
  for (const auto &op : m.ops)
    if (isOptimizerUpdate(op->kind))
      for (size_t i = 0; i < op->operands.size(); ++i)
        if (isStateRole(opDef(op->kind).roleOf(i))) state.insert(op->operands[i]);
  for (const auto &op : m.ops) {
    if (const Value *p = updatedParam(*op); p && !state.count(p)) onStagesOf(p, *op);
    if (!hasPhase(*op))
      for (const Value *v : op->operands)
        if (v->kind == Value::Kind::Param && v->frozen && !state.count(v) && v->type.rank() > 0) onStagesOf(v, *op);
  }

  std::map<std::pair<int64_t, Category>, Share> expected;
  // The tensor-parallel block: every split but dp's (ZeRO's, in the formula).
  auto blockOf = [&](const TensorType &t) {
    Shape block = t.shape;
    for (size_t d = 0; d < block.size() && d < t.sharding.dims.size(); ++d)
      for (MeshAxis a : t.sharding.dims[d])
        if (a != MeshAxis::DP) block[d] /= config.parallel.size(a);
    return block;
  };
  const ir::OutputIndex outputs(m);
  for (const auto &[p, stages] : stagesOf) {
    auto count = [&, &stages = stages](Category cat, unsigned bytes, bool split, const Shape &block) {
      if (!bytes) return;
      uint64_t n = 1;
      bool divides = false;
      int64_t largest = 1;
      for (int64_t d : block) {
        n *= uint64_t(d);
        divides |= d % dp == 0;
        largest = std::max(largest, d);
      }
      split &= dp > 1 && !block.empty(); // scalars stay whole
      const double pad = split && !divides ? double(n) / double(largest) * bytes : 0.0;
      for (int64_t s : stages) {
        Share &sh = expected[{s, cat}];
        sh.bytes += double(n) * bytes / double(split ? dp : 1);
        sh.whole += double(n) * bytes;
        sh.padding += pad;
        sh.tensors += 1;
        sh.elements += n;
      }
    };
    const Shape block = blockOf(p->type);
    // A parameter the forward module does not have (one a pass added) is
    // read as it is.
    auto declared = trained->find(pathOf(*p));
    const PerElement e = perElement(declared != trained->end() ? declared->second
                                                               : TrainedParam{p->type.dtype, p->frozen, {}},
                                    passes);
    count(Category::Parameters, e.parameters, zero >= 3, block);
    if (p->frozen) continue;
    const Output *gradient = outputs.find(OutputRole::ParamGradient, pathOf(*p));
    const Value *g = gradient ? gradient->value : nullptr;
    count(Category::Gradients, e.gradients, zero >= 2, g ? blockOf(g->type) : block);
    count(Category::OptimizerState, e.optimizer, zero >= 1, block);
  }

  for (const memory::StagePlan &sp : plan->stages)
    for (Category cat : {Category::Parameters, Category::Gradients, Category::OptimizerState}) {
      Share sh;
      if (auto it = expected.find({sp.stage, cat}); it != expected.end()) sh = it->second;
      const double have = double(sp.modelStates[size_t(cat)]);
      // Each tensor's share of a split rounds to whole elements.
      const double slack = double(sh.tensors) * 16;
      // Gradients may be held whole where ZeRO-2/3 split them: a tied
      // parameter's parts until their sum across stages, and every gradient
      // of a plain SGD, which has no state for ZeRO to split.
      const double most = cat == Category::Gradients ? std::max(sh.bytes + sh.padding, sh.whole) : sh.bytes + sh.padding;
      if (have >= sh.bytes - slack && have <= most + slack) continue;
      std::string padding = sh.padding > 0 ? llvm::formatv(" + up to {0:F0} B of padding", sh.padding).str() : "";
      result.violations.push_back(llvm::formatv("model states of pipeline stage {0}: {1} {2} B, but ZeRO's formula "
                                                "gives {3:F0} B{4} for its {5} parameter elements (zero {6}, dp {7})",
                                                sp.stage, memory::spelling(cat), sp.modelStates[size_t(cat)],
                                                sh.bytes, padding, sh.elements, zero, dp)
                                      .str());
    }
  return result;
}
