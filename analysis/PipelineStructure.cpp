//===- analysis/PipelineStructure.cpp - is the work on the right stage? -----===//

#include "analysis/PipelineStructure.h"
#include "analysis/Placement.h"
#include "analysis/SavedActivations.h"
#include "ir/Placement.h"

#include "ir/OpDef.h"

#include "llvm/ADT/StringExtras.h"

#include <map>
#include <unordered_map>
#include <unordered_set>

using namespace planc;
using namespace planc::ir;

namespace {

bool isMessage(const Op &op) { return isPointToPoint(op.kind); }

/// "'matmul' (blocks.1.mlp, backward, micro-batch 0)": the op as a user reads it.
std::string describe(const Op &op) {
  std::string s = "'" + std::string(spelling(op.kind)) + "'";
  if (!op.results.empty()) s += " %" + op.results[0]->name;
  s += " (" + (op.path.empty() ? std::string("model level") : op.path) + ", " + spelling(workOf(op));
  if (hasMicroBatch(op)) s += ", micro-batch " + std::to_string(microBatchOf(op));
  return s + ")";
}

/// "blocks.3" -> ("blocks", 3); a layer that is not "<name>.<index>" keeps index -1.
std::pair<std::string, int64_t> splitLayer(llvm::StringRef layer) {
  size_t dot = layer.rfind('.');
  int64_t index = -1;
  if (dot == llvm::StringRef::npos || layer.substr(dot + 1).getAsInteger(10, index)) return {layer.str(), -1};
  return {layer.substr(0, dot).str(), index};
}

class StructureCheck {
public:
  StructureCheck(const Module &m, const pipeline::ScheduleOptions &so)
      : m(m), stages(so.stages * so.virtualStages), microBatches(so.microBatches) {}

  std::vector<std::string> run() {
    if (stages <= 1) return {};
    linkMessages();
    checkLayers();
    checkModelLevel();
    checkActivationMessages();
    checkOptimizerMessages();
    return std::move(violations);
  }

private:
  void violation(std::string message) {
    // A wrong rule misplaces the same op in every micro-batch: say it once.
    if (violations.size() < 64 && seen.insert(message).second) violations.push_back(std::move(message));
  }

  /// The send of each receive (they share a tag).
  void linkMessages() {
    std::unordered_map<int64_t, const Op *> sendOf;
    for (const auto &op : m.ops)
      if (op->kind == OpKind::Send) sendOf[op->getInt("tag")] = op.get();
    for (const auto &op : m.ops)
      if (op->kind == OpKind::Recv)
        if (auto s = sendOf.find(op->getInt("tag")); s != sendOf.end()) {
          sendOfRecv[op.get()] = s->second;
          recvOfSend[s->second] = op.get();
        }
  }

  /// 1: one stage per layer, the layers of a repeat in stage order, no
  /// stage without a layer.
  void checkLayers() {
    // The layer's stage is that of its first forward compute op.
    std::map<std::string, int> layerStage;
    for (const auto &op : m.ops) {
      std::string layer = repeatedLayerOf(op->path);
      if (layer.empty() || isMessage(*op) || workOf(*op) == Work::Optimizer) continue;
      int vs = virtualStageOf(*op);
      if (workOf(*op) == Work::Forward && !isCommunication(op->kind)) layerStage.emplace(layer, vs);
    }
    for (const auto &op : m.ops) {
      std::string layer = repeatedLayerOf(op->path);
      if (layer.empty() || isMessage(*op) || workOf(*op) == Work::Optimizer) continue;
      auto it = layerStage.find(layer);
      int vs = virtualStageOf(*op);
      if (it == layerStage.end())
        violation(describe(*op) + " belongs to layer " + layer + ", which has no forward op");
      else if (vs != it->second)
        violation(describe(*op) + " runs on stage " + stageName(vs) + ", but layer " + layer + " is on stage " +
                  stageName(it->second));
    }
    // Stage order within each repeat, and every stage used.
    std::map<std::string, std::map<int64_t, int>> byRepeat;
    std::vector<bool> used(size_t(stages), false);
    for (const auto &[layer, vs] : layerStage) {
      auto [repeat, index] = splitLayer(layer);
      byRepeat[repeat][index] = vs;
      if (vs >= 0 && vs < stages) used[size_t(vs)] = true;
      else violation("layer " + layer + " is on stage " + stageName(vs) + ", outside the pipeline's stages 0.." +
                     std::to_string(stages - 1));
    }
    for (const auto &[repeat, layers] : byRepeat) {
      const std::pair<const int64_t, int> *previous = nullptr;
      for (const auto &entry : layers) {
        if (previous && entry.second < previous->second)
          violation("layer " + repeat + "." + std::to_string(entry.first) + " is on stage " +
                    stageName(entry.second) + ", before layer " + repeat + "." + std::to_string(previous->first) +
                    " on stage " + stageName(previous->second) + ": the layers of a repeat run in order");
        previous = &entry;
      }
    }
    for (int s = 0; s < stages; ++s)
      if (!used[size_t(s)]) violation("stage " + stageName(s) + " runs no layer");
  }

  /// 2: ops outside the layers, by what they depend on.
  void checkModelLevel() {
    // Which values depend on a layer's forward, on a layer's backward, and
    // which are made from parameters alone; a receive depends on what its
    // send sends. Module order is schedule order across ranks only up to
    // ties, so the flags are propagated to a fixpoint (two sweeps suffice
    // unless messages run backwards in module order).
    // Values of parameters alone or of inputs alone (a weight's cast, a
    // micro-batch's rows of the batch; not an embedding lookup, which reads
    // both) may be made wherever they are read.
    std::unordered_set<const Value *> params(m.params.begin(), m.params.end()), inputs(m.inputs.begin(), m.inputs.end());
    std::unordered_set<const Value *> inputOnly;
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto &up : m.ops) {
        const Op &op = *up;
        bool inLayer = !repeatedLayerOf(op.path).empty() && !isMessage(op);
        Work w = workOf(op);
        bool fwd = inLayer && w == Work::Forward, bwd = inLayer && (w == Work::Backward || w == Work::WeightGrad);
        bool paramOnly = !op.operands.empty(), dataOnly = paramOnly;
        auto absorb = [&](const Value *v) {
          fwd |= afterLayerForward.count(v) > 0;
          bwd |= afterLayerBackward.count(v) > 0;
          paramOnly &= params.count(v) > 0 || parameterOnly.count(v) > 0;
          dataOnly &= inputs.count(v) > 0 || inputOnly.count(v) > 0;
        };
        for (const Value *v : op.operands) absorb(v);
        if (op.kind == OpKind::Recv) {
          auto s = sendOfRecv.find(&op);
          paramOnly = dataOnly = s != sendOfRecv.end();
          if (s != sendOfRecv.end()) absorb(s->second->operands[0]);
        }
        for (const Value *r : op.results) {
          if (fwd) changed |= afterLayerForward.insert(r).second;
          if (bwd) changed |= afterLayerBackward.insert(r).second;
          if (paramOnly && w != Work::Optimizer) changed |= parameterOnly.insert(r).second;
          if (dataOnly && w == Work::Forward) changed |= inputOnly.insert(r).second;
        }
      }
    }
    // Forward values that a layer reads (the embedding's side).
    std::unordered_set<const Value *> feedsLayer;
    for (auto it = m.ops.rbegin(); it != m.ops.rend(); ++it) {
      const Op &op = **it;
      bool feeds = !repeatedLayerOf(op.path).empty() && workOf(op) == Work::Forward && !isMessage(op);
      for (const Value *r : op.results) feeds |= feedsLayer.count(r) > 0;
      if (op.kind == OpKind::Send)
        if (auto r = recvOfSend.find(&op); r != recvOfSend.end() && feedsLayer.count(r->second->results[0])) feeds = true;
      if (feeds)
        for (const Value *v : op.operands) feedsLayer.insert(v);
    }
    const int last = stages - 1;
    for (const auto &up : m.ops) {
      const Op &op = *up;
      Work w = workOf(op);
      if (!repeatedLayerOf(op.path).empty() || isMessage(op) || w == Work::Optimizer || op.operands.empty()) continue;
      if (llvm::all_of(op.results, [&](const Value *r) { return parameterOnly.count(r) || inputOnly.count(r); }))
        continue;
      int vs = virtualStageOf(op);
      const Value *r = op.results.empty() ? nullptr : op.results[0];
      int want = -1;
      const char *why = "";
      if (w == Work::Forward) {
        if (r && afterLayerForward.count(r)) want = last, why = "it reads the layers' output";
        else if (llvm::any_of(op.results, [&](const Value *v) { return feedsLayer.count(v) > 0; }))
          want = 0, why = "the first layer reads it";
      } else if (r && afterLayerBackward.count(r)) {
        want = 0, why = "it reads the layers' input gradient";
      } else {
        want = last, why = "it is backward work before the layers' backward";
      }
      if (want >= 0 && vs != want)
        violation(describe(op) + " runs on stage " + stageName(vs) + ", but belongs on stage " + stageName(want) +
                  ": " + why);
    }
  }

  /// 3: one message a micro-batch from each chunk to the next in forward,
  /// and back in backward; none skips a stage.
  void checkActivationMessages() {
    // (micro-batch, direction, from virtual stage) -> messages
    std::map<std::tuple<int64_t, bool, int>, std::vector<const Op *>> boundary;
    for (const auto &[recv, send] : sendOfRecv) {
      Work w = workOf(*send);
      if (w == Work::Optimizer) continue;
      int from = virtualStageOf(*send), to = virtualStageOf(*recv);
      bool forward = w == Work::Forward;
      if (to != from + (forward ? 1 : -1)) {
        violation(describe(*send) + " sends %" + send->operands[0]->name + " from stage " + stageName(from) +
                  " to stage " + stageName(to) + "; " + (forward ? "forward" : "backward") +
                  " messages go to the " + (forward ? "next" : "previous") + " stage only");
        continue;
      }
      boundary[{hasMicroBatch(*send) ? microBatchOf(*send) : 0, forward, from}].push_back(send);
    }
    for (int64_t mb = 0; mb < microBatches; ++mb)
      for (bool forward : {true, false})
        for (int from = forward ? 0 : 1; from < (forward ? stages - 1 : stages); ++from) {
          auto it = boundary.find({mb, forward, from});
          size_t n = it == boundary.end() ? 0 : it->second.size();
          if (n == 1) continue;
          std::string what = std::string(forward ? "forward" : "backward") + " of micro-batch " + std::to_string(mb) +
                             " sends " + std::to_string(n) + " messages from stage " + stageName(from) + " to " +
                             stageName(forward ? from + 1 : from - 1) + " (the schedule implies one)";
          if (n > 1) {
            what += ":";
            for (const Op *s : it->second) what += " %" + s->operands[0]->name;
          }
          violation(what);
        }
  }

  /// 4: in the optimizer phase only the gradients of parameters read on
  /// several pipeline ranks cross stages.
  void checkOptimizerMessages() {
    std::unordered_map<const Value *, std::unordered_set<int64_t>> readers;
    for (const auto &op : m.ops)
      if (workOf(*op) != Work::Optimizer && hasPipelineStage(*op))
        for (const Value *v : op->operands)
          if (v->kind == Value::Kind::Param) readers[v].insert(pipelineStageOf(*op));
    // The values a shared parameter's gradient is summed from, through
    // messages (module order is not the order across ranks: walk the defs).
    std::unordered_map<const Value *, const Op *> def;
    for (const auto &op : m.ops)
      for (const Value *r : op->results) def[r] = op.get();
    std::unordered_set<const Value *> sharedGradient;
    std::vector<const Value *> work;
    for (const Output &out : m.outputs) {
      if (out.role != OutputRole::ParamGradient) continue;
      const Value *p = nullptr;
      for (const Value *q : m.params)
        if ((q->path.empty() ? q->name : q->path) == out.path) p = q;
      if (p && readers[p].size() > 1) work.push_back(out.value);
    }
    while (!work.empty()) {
      const Value *v = work.back();
      work.pop_back();
      auto d = def.find(v);
      // Gradient parts only: the forward values and parameters they are
      // computed from are no gradient.
      if (d == def.end() || workOf(*d->second) == Work::Forward) continue;
      if (!sharedGradient.insert(v).second) continue;
      for (const Value *o : d->second->operands) work.push_back(o);
      if (d->second->kind == OpKind::Recv)
        if (auto s = sendOfRecv.find(d->second); s != sendOfRecv.end()) work.push_back(s->second->operands[0]);
    }
    // And what the optimizer makes of them (the gradient reduced over dp,
    // clipped; the new values of the shared parameter).
    // Only through ops on the same tensor: a norm over every gradient is
    // not a shared parameter's.
    for (const auto &op : m.ops)
      if (workOf(*op) == Work::Optimizer)
        for (const Value *v : op->operands)
          if (sharedGradient.count(v))
            for (const Value *r : op->results)
              if (r->type.shape == v->type.shape) sharedGradient.insert(r);
    for (const auto &[recv, send] : sendOfRecv)
      if (workOf(*send) == Work::Optimizer && !sharedGradient.count(send->operands[0]))
        violation(describe(*send) + " sends %" + send->operands[0]->name + " from stage " +
                  stageName(virtualStageOf(*send)) + " to stage " + stageName(virtualStageOf(*recv)) +
                  " in the optimizer phase; only the gradient of a parameter that several stages read crosses "
                  "stages there");
  }

  static std::string stageName(int vs) { return vs < 0 ? std::string("(every stage)") : std::to_string(vs); }

  const Module &m;
  const int stages;
  const int microBatches;
  std::unordered_map<const Op *, const Op *> sendOfRecv, recvOfSend;
  std::unordered_set<const Value *> afterLayerForward, afterLayerBackward, parameterOnly;
  std::vector<std::string> violations;
  std::unordered_set<std::string> seen;
};

} // namespace

std::vector<std::string> planc::checkPipelineStructure(const Module &m, const pipeline::ScheduleOptions &so) {
  return StructureCheck(m, so).run();
}
