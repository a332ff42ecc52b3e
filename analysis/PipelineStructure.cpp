//===- analysis/PipelineStructure.cpp - is the work on the right stage? -----===//

#include "analysis/PipelineStructure.h"
#include "analysis/SavedActivations.h"

#include "ir/OpDef.h"

#include "llvm/ADT/StringExtras.h"

#include <cctype>
#include <map>
#include <unordered_map>
#include <unordered_set>

using namespace planc;
using namespace planc::ir;

namespace {

using Node = StepView::Node;

bool isMessage(const Node &n) { return isPointToPoint(n.kind); }
bool inLayer(const Node &n) { return !repeatedLayerOf(n.path).empty(); }

/// "'matmul' %y (blocks.1.mlp, backward, micro-batch 0)": the op as a user reads it.
std::string describe(const Node &n) {
  std::string s = "'" + std::string(spelling(n.kind)) + "'";
  if (!n.name.empty() && n.kind != OpKind::Send) s += " %" + n.name;
  s += " (" + (n.path.empty() ? std::string("model level") : n.path) + ", " + spelling(n.work);
  if (n.microBatch >= 0) s += ", micro-batch " + std::to_string(n.microBatch);
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
  StructureCheck(const StepView &step, const pipeline::ScheduleOptions &so)
      : step(step), stages(so.stages * so.virtualStages), microBatches(so.microBatches) {}

  std::vector<std::string> run() {
    if (stages <= 1) return {};
    linkMessages();
    checkLayers();
    checkModelLevel();
    checkActivationMessages();
    checkOptimizerMessages();
    return report();
  }

private:
  void violation(std::string message) {
    // A wrong rule misplaces the same op in every micro-batch: say it once,
    // for the first, and count the others.
    std::string key = message;
    for (size_t at = key.find("micro-batch "); at != std::string::npos; at = key.find("micro-batch ", at + 1)) {
      size_t digits = at + 12, end = digits;
      while (end < key.size() && std::isdigit(static_cast<unsigned char>(key[end]))) ++end;
      key.replace(digits, end - digits, "#");
    }
    auto [it, fresh] = seen.try_emplace(key, violations.size(), 0);
    if (!fresh) ++it->second.second;
    else if (violations.size() < 64) violations.push_back(std::move(message));
    else seen.erase(it);
  }

  /// The violations, each with how many other micro-batches repeat it.
  std::vector<std::string> report() {
    for (const auto &[key, where] : seen)
      if (where.second > 0)
        violations[where.first] += " (and in " + std::to_string(where.second) + " other micro-batch" +
                                   (where.second == 1 ? ")" : "es)");
    return std::move(violations);
  }

  /// The send of each receive (they share a tag).
  void linkMessages() {
    std::unordered_map<int64_t, const Node *> recvOf;
    for (const Node &n : step.nodes)
      if (n.kind == OpKind::Recv) recvOf[n.tag] = &n;
    for (const Node &n : step.nodes)
      if (n.kind == OpKind::Send)
        if (auto r = recvOf.find(n.tag); r != recvOf.end()) {
          sendOfRecv[r->second] = &n;
          recvOfSend[&n] = r->second;
          messages.push_back({r->second, &n});
        }
  }

  /// 1: one stage per layer, the layers of a repeat in stage order, no
  /// stage without a layer.
  void checkLayers() {
    // The layer's stage is where most of its forward compute runs (ties: the
    // earliest), so one misplaced op is the one named.
    std::map<std::string, std::map<int, int64_t>> forwardOps; // layer -> stage -> count
    for (const Node &n : step.nodes)
      if (inLayer(n) && !isMessage(n) && n.work == Work::Forward && !isCommunication(n.kind))
        ++forwardOps[repeatedLayerOf(n.path)][n.virtualStage];
    std::map<std::string, int> layerStage;
    for (const auto &[layer, counts] : forwardOps) {
      auto best = counts.begin();
      for (auto it = counts.begin(); it != counts.end(); ++it)
        if (it->second > best->second) best = it;
      layerStage[layer] = best->first;
    }
    for (const Node &n : step.nodes) {
      if (!inLayer(n) || isMessage(n) || n.work == Work::Optimizer) continue;
      std::string layer = repeatedLayerOf(n.path);
      auto it = layerStage.find(layer);
      if (it == layerStage.end())
        violation(describe(n) + " belongs to layer " + layer + ", which has no forward op");
      else if (n.virtualStage != it->second)
        violation(describe(n) + " runs on stage " + stageName(n.virtualStage) + ", but layer " + layer +
                  " is on stage " + stageName(it->second));
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
    // which are made from parameters alone or inputs alone (a weight's cast,
    // a micro-batch's rows of the batch; not an embedding lookup, which
    // reads both): those may be made wherever they are read. A receive
    // depends on what its send sends. Flags flow to a fixpoint, so the
    // order of the nodes does not matter. Parameters take no flag: an
    // update writes its new value over its parameter, but that value is the
    // next step's.
    const size_t n = step.shapes.size();
    std::vector<bool> afterForward(n), afterBackward(n), paramOnly(n), inputOnly(n);
    auto set = [&](std::vector<bool> &flags, int64_t v) {
      if (step.isParam[size_t(v)] || flags[size_t(v)]) return false;
      flags[size_t(v)] = true;
      return true;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (const Node &node : step.nodes) {
        bool layer = inLayer(node) && !isMessage(node);
        bool fwd = layer && node.work == Work::Forward;
        bool bwd = layer && (node.work == Work::Backward || node.work == Work::WeightGrad);
        bool params = !node.operands.empty(), data = params;
        auto absorb = [&](int64_t v) {
          fwd = fwd || afterForward[size_t(v)];
          bwd = bwd || afterBackward[size_t(v)];
          params = params && (step.isParam[size_t(v)] || paramOnly[size_t(v)]);
          data = data && (step.isInput[size_t(v)] || inputOnly[size_t(v)]);
        };
        for (int64_t v : node.operands) absorb(v);
        if (node.kind == OpKind::Recv) {
          auto s = sendOfRecv.find(&node);
          params = data = s != sendOfRecv.end();
          if (s != sendOfRecv.end())
            for (int64_t v : s->second->operands) absorb(v);
        }
        for (int64_t r : node.results) {
          if (fwd) changed |= set(afterForward, r);
          if (bwd) changed |= set(afterBackward, r);
          if (params && node.work != Work::Optimizer) changed |= set(paramOnly, r);
          if (data && node.work == Work::Forward) changed |= set(inputOnly, r);
        }
      }
    }
    // Forward values that a layer reads (the embedding's side), to a fixpoint.
    std::vector<bool> feedsLayer(n);
    for (bool changed = true; changed;) {
      changed = false;
      for (auto it = step.nodes.rbegin(); it != step.nodes.rend(); ++it) {
        const Node &node = *it;
        bool feeds = inLayer(node) && node.work == Work::Forward && !isMessage(node);
        for (int64_t r : node.results) feeds = feeds || feedsLayer[size_t(r)];
        if (node.kind == OpKind::Send)
          if (auto r = recvOfSend.find(&node); r != recvOfSend.end())
            for (int64_t v : r->second->results) feeds = feeds || feedsLayer[size_t(v)];
        if (feeds)
          for (int64_t v : node.operands) changed |= set(feedsLayer, v);
      }
    }
    const int last = stages - 1;
    for (const Node &node : step.nodes) {
      if (inLayer(node) || isMessage(node) || node.work == Work::Optimizer || node.operands.empty()) continue;
      if (llvm::all_of(node.results, [&](int64_t r) { return paramOnly[size_t(r)] || inputOnly[size_t(r)]; }))
        continue;
      int64_t r = node.results.empty() ? -1 : node.results[0];
      int want = -1;
      const char *why = "";
      if (node.work == Work::Forward) {
        if (r >= 0 && afterForward[size_t(r)]) want = last, why = "it reads the layers' output";
        else if (llvm::any_of(node.results, [&](int64_t v) { return bool(feedsLayer[size_t(v)]); }))
          want = 0, why = "the first layer reads it";
      } else if (r >= 0 && afterBackward[size_t(r)]) {
        want = 0, why = "it reads the layers' input gradient";
      } else {
        want = last, why = "it is backward work before the layers' backward";
      }
      if (want >= 0 && node.virtualStage != want)
        violation(describe(node) + " runs on stage " + stageName(node.virtualStage) + ", but belongs on stage " +
                  stageName(want) + ": " + why);
    }
  }

  /// 3: one message a micro-batch from each chunk to the next in forward,
  /// and back in backward; none skips a stage.
  void checkActivationMessages() {
    // (micro-batch, direction, from virtual stage) -> messages
    std::map<std::tuple<int64_t, bool, int>, std::vector<const Node *>> boundary;
    for (const auto &[recv, send] : messages) {
      if (send->work == Work::Optimizer) continue;
      int from = send->virtualStage, to = recv->virtualStage;
      bool forward = send->work == Work::Forward;
      if (to != from + (forward ? 1 : -1)) {
        violation(describe(*send) + " sends %" + send->name + " from stage " + stageName(from) + " to stage " +
                  stageName(to) + "; " + (forward ? "forward" : "backward") + " messages go to the " +
                  (forward ? "next" : "previous") + " stage only");
        continue;
      }
      boundary[{std::max(send->microBatch, 0), forward, from}].push_back(send);
    }
    for (int64_t mb = 0; mb < microBatches; ++mb)
      for (bool forward : {true, false})
        for (int from = forward ? 0 : 1; from < (forward ? stages - 1 : stages); ++from) {
          auto it = boundary.find({mb, forward, from});
          size_t count = it == boundary.end() ? 0 : it->second.size();
          if (count == 1) continue;
          std::string what = std::string(forward ? "forward" : "backward") + " of micro-batch " + std::to_string(mb) +
                             " sends " + std::to_string(count) + " messages from stage " + stageName(from) + " to " +
                             stageName(forward ? from + 1 : from - 1) + " (the schedule implies one)";
          if (count > 1) {
            what += ":";
            for (const Node *s : it->second) what += " %" + s->name;
          }
          violation(what);
        }
  }

  /// 4: in the optimizer phase only the gradients of parameters read on
  /// several pipeline ranks cross stages.
  void checkOptimizerMessages() {
    std::unordered_map<int64_t, std::unordered_set<int>> readers;
    for (const Node &node : step.nodes)
      if (node.work != Work::Optimizer && node.stage >= 0)
        for (int64_t v : node.operands)
          if (step.isParam[size_t(v)]) readers[v].insert(node.stage);
    // The values a shared parameter's gradient is summed from, through
    // messages (walk the writers: the order of the nodes is not the order
    // across ranks).
    std::unordered_map<int64_t, std::vector<const Node *>> writers;
    for (const Node &node : step.nodes)
      for (int64_t r : node.results) writers[r].push_back(&node);
    std::unordered_set<int64_t> sharedGradient;
    std::vector<int64_t> work;
    for (const auto &[gradient, param] : step.gradients)
      if (readers[param].size() > 1) work.push_back(gradient);
    while (!work.empty()) {
      int64_t v = work.back();
      work.pop_back();
      // Gradient parts only: the forward values and parameters they are
      // computed from are no gradient.
      auto w = writers.find(v);
      if (w == writers.end() || llvm::all_of(w->second, [](const Node *d) { return d->work == Work::Forward; }) ||
          !sharedGradient.insert(v).second)
        continue;
      for (const Node *d : w->second) {
        if (d->work == Work::Forward) continue;
        for (int64_t o : d->operands) work.push_back(o);
        if (d->kind == OpKind::Recv)
          if (auto s = sendOfRecv.find(d); s != sendOfRecv.end())
            for (int64_t o : s->second->operands) work.push_back(o);
      }
    }
    // And what the optimizer makes of them (the gradient reduced over dp,
    // clipped; the new values of the shared parameter). Only through ops on
    // the same tensor: a norm over every gradient is not a shared
    // parameter's.
    for (const Node &node : step.nodes)
      if (node.work == Work::Optimizer)
        for (int64_t v : node.operands)
          if (sharedGradient.count(v))
            for (int64_t r : node.results)
              if (step.shapes[size_t(r)] == step.shapes[size_t(v)]) sharedGradient.insert(r);
    for (const auto &[recv, send] : messages)
      if (send->work == Work::Optimizer &&
          !llvm::all_of(send->operands, [&](int64_t v) { return sharedGradient.count(v) > 0; }))
        violation(describe(*send) + " sends %" + send->name + " from stage " + stageName(send->virtualStage) +
                  " to stage " + stageName(recv->virtualStage) +
                  " in the optimizer phase; only the gradient of a parameter that several stages read crosses "
                  "stages there");
  }

  static std::string stageName(int vs) { return vs < 0 ? std::string("(every stage)") : std::to_string(vs); }

  const StepView &step;
  const int stages;
  const int microBatches;
  std::unordered_map<const Node *, const Node *> sendOfRecv, recvOfSend;
  std::vector<std::pair<const Node *, const Node *>> messages; // (recv, send) in the sends' order
  std::vector<std::string> violations;
  std::unordered_map<std::string, std::pair<size_t, int64_t>> seen; // key -> (index, repeats)
};

} // namespace

StepView planc::stepViewOf(const Module &m) {
  StepView view;
  std::unordered_map<const Value *, int64_t> id;
  auto idOf = [&](const Value *v) {
    auto it = id.find(v);
    if (it != id.end()) return it->second;
    int64_t i = view.addValue(v->type.shape, v->kind == Value::Kind::Param, v->kind == Value::Kind::Input);
    id.emplace(v, i);
    return i;
  };
  for (const Value *p : m.params) idOf(p);
  for (const Value *in : m.inputs) idOf(in);
  for (const auto &op : m.ops) {
    Node n;
    n.kind = op->kind;
    n.work = workOf(*op);
    n.virtualStage = virtualStageOf(*op);
    n.stage = int(pipelineStageOf(*op));
    n.microBatch = int(microBatchOf(*op));
    n.path = op->path;
    if (op->kind == OpKind::Send && !op->operands.empty()) n.name = op->operands[0]->name;
    else if (!op->results.empty()) n.name = op->results[0]->name;
    for (const Value *v : op->operands) n.operands.push_back(idOf(v));
    for (const Value *v : op->results) n.results.push_back(idOf(v));
    if (isPointToPoint(op->kind)) n.tag = op->getInt("tag");
    view.nodes.push_back(std::move(n));
  }
  for (const Output &out : m.outputs) {
    if (out.role != OutputRole::ParamGradient) continue;
    for (const Value *p : m.params)
      if ((p->path.empty() ? p->name : p->path) == out.path) view.gradients.push_back({idOf(out.value), idOf(p)});
  }
  return view;
}

std::vector<std::string> planc::checkPipelineStructure(const StepView &step, const pipeline::ScheduleOptions &so) {
  return StructureCheck(step, so).run();
}
