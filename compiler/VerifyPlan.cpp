//===- compiler/VerifyPlan.cpp - `planc verify` ---------------------------===//

#include "compiler/VerifyPlan.h"
#include "compiler/ModelStatesCheck.h"
#include "support/Plural.h"
#include "compiler/Pipeline.h"
#include "passes/Passes.h"
#include "analysis/Placement.h"
#include "analysis/SavedActivations.h"
#include "compiler/TrainOptions.h"
#include "backend/interp/PlanInterpreter.h"
#include "exec/BuildPlan.h"
#include "exec/PlanParser.h"
#include "exec/PlanStructure.h"
#include "exec/PlanVerifier.h"

#include "ir/Interpreter.h"
#include "ir/LocalBlocks.h"
#include "ir/OpDef.h"
#include "ir/Placement.h"

#include "llvm/Support/FormatVariadic.h"
#include "support/Error.h"

#include <cmath>
#include <random>

using namespace planc;
using namespace planc::ir;

namespace {

/// The exclusive upper bound of an integer input: the rows of the tables it
/// indexes and the classes of the losses it is the target of.
int64_t indexBound(const Module &m, const Value *input) {
  int64_t bound = 0;
  for (const auto &op : m.ops) {
    int64_t b = 0;
    if (op->kind == OpKind::Gather && op->operands[1] == input) b = op->operands[0]->type.shape[0];
    if ((op->kind == OpKind::CrossEntropy || op->kind == OpKind::CrossEntropyGrad) && op->operands[1] == input)
      b = op->operands[0]->type.shape.back();
    if (b > 0) bound = bound ? std::min(bound, b) : b;
  }
  return bound;
}

/// Seeded parameters (as their inits say), a random batch and step 1.
llvm::Expected<TensorMap> makeFeeds(const Module &m, uint64_t seed) {
  TensorMap feeds = initialParams(m, seed);
  std::mt19937_64 rng(seed ^ 0x5bd1e995ull);
  for (const Value *in : m.inputs) {
    Tensor t(in->type.shape, in->type.dtype);
    if (in->name == "step") {
      for (double &x : t.data) x = 1;
    } else if (isInteger(in->type.dtype)) {
      int64_t bound = indexBound(m, in);
      if (bound <= 0) return makeError("cannot tell the range of integer input '" + in->name + "'");
      for (double &x : t.data) x = double(rng() % uint64_t(bound));
    } else {
      std::normal_distribution<double> normal;
      for (double &x : t.data) x = normal(rng);
    }
    feeds[in->name] = std::move(t);
  }
  return feeds;
}

/// Removes the Nth inserted reduction: its users read the unreduced operand
/// (a reduce-scatter's users its operand's block... which no longer fits, so
/// only all-reduces are counted).
llvm::Error dropReduction(Module &m, int n) {
  int seen = 0;
  for (auto it = m.ops.begin(); it != m.ops.end(); ++it) {
    Op &op = **it;
    if (op.kind != OpKind::AllReduce || op.getString("reduce", "sum") != "sum") continue;
    if (seen++ != n) continue;
    Value *from = op.operands[0], *to = op.results[0];
    for (auto &user : m.ops)
      for (Value *&v : user->operands)
        if (v == to) v = from;
    for (Output &out : m.outputs)
      if (out.value == to) out.value = from;
    m.ops.erase(it);
    return llvm::Error::success();
  }
  return makeError("--testing-drop-collective=" + std::to_string(n) + ": the plan has only " + std::to_string(seen) +
              " inserted all-reduces");
}

/// Swaps the tags of the first two sends of one program to the same peer
/// with the same bytes: each receive then takes the other's message.
llvm::Error swapTwoSends(exec::ExecutionPlan &plan) {
  for (exec::RankProgram &p : plan.programs)
    for (size_t i = 0; i < p.steps.size(); ++i) {
      exec::Step &a = p.steps[i];
      if (a.kind != OpKind::Send) continue;
      for (size_t j = i + 1; j < p.steps.size(); ++j) {
        exec::Step &b = p.steps[j];
        if (b.kind != OpKind::Send || b.attrs.count("peer_offset") == 0 || a.attrs.count("peer_offset") == 0 ||
            b.attrs.at("peer_offset") != a.attrs.at("peer_offset") ||
            p.buffers[size_t(b.inputs[0])].local() != p.buffers[size_t(a.inputs[0])].local())
          continue;
        std::swap(a.attrs["tag"], b.attrs["tag"]);
        return llvm::Error::success();
      }
    }
  return makeError("--testing-swap-sends: the plan has no two pipeline sends of the same shape to the same peer");
}

/// Moves a buffer onto the bytes of an activation that is live all through
/// its life and read after it is written, so the activation is overwritten
/// before backward reads it. Returns what it moved.
llvm::Expected<std::string> overlapTwoBuffers(exec::ExecutionPlan &plan) {
  for (exec::RankProgram &p : plan.programs) {
    std::vector<bool> aliased(p.buffers.size());
    for (const exec::Buffer &b : p.buffers)
      if (b.aliasOf >= 0) aliased[size_t(b.aliasOf)] = true;
    for (size_t a = 0; a < p.buffers.size(); ++a) {
      const exec::Buffer &kept = p.buffers[a];
      if (kept.category != memory::Category::Activations || kept.firstStep < 0 || kept.lastStep == exec::kAfterSteps)
        continue;
      for (size_t b = 0; b < p.buffers.size(); ++b) {
        exec::Buffer &moved = p.buffers[b];
        if (b == a || aliased[b] || moved.aliasOf >= 0 || moved.role != exec::BufferRole::Internal ||
            moved.firstStep <= kept.firstStep || moved.firstStep >= kept.lastStep || moved.size > kept.size ||
            moved.offset == kept.offset)
          continue;
        moved.offset = kept.offset;
        return "moved buffer #" + std::to_string(b) + " %" + moved.name + " of stage " + std::to_string(p.stage) +
               " onto #" + std::to_string(a) + " %" + kept.name + " (offset " + std::to_string(kept.offset) + ")";
      }
    }
  }
  return makeError("--testing-overlap-buffers: the plan has no two buffers to overlap");
}

/// Moves the last two-operand forward compute op of the last layer on
/// pipeline rank 0 (micro-batch 0's) to rank 1. It still computes the same values, so
/// the numbers cannot tell: its operands are sent to rank 1 with fresh tags
/// and its results back, one message each, as a partitioner that put it
/// there would have done.
llvm::Error misplaceOneOp(Module &m) {
  if (m.mesh[unsigned(MeshAxis::PP)] < 2)
    return makeError("--testing-misplace-op needs a pipeline (pp > 1)");
  std::string layer;
  for (const auto &op : m.ops)
    if (pipelineStageOf(*op) == 0 && workOf(*op) == Work::Forward && !repeatedLayerOf(op->path).empty() &&
        !isCommunication(op->kind))
      layer = repeatedLayerOf(op->path);
  if (layer.empty()) return makeError("--testing-misplace-op: pipeline rank 0 runs no layer");
  Op *victim = nullptr;
  for (const auto &op : m.ops)
    if (pipelineStageOf(*op) == 0 && workOf(*op) == Work::Forward && repeatedLayerOf(op->path) == layer &&
        !isCommunication(op->kind) && microBatchOf(*op) <= 0 && op->operands.size() == 2)
      victim = op.get();
  if (!victim) return makeError("--testing-misplace-op: no op of " + layer + " to move");
  int64_t tag = 0;
  for (const auto &op : m.ops)
    if (op->kind == OpKind::Send) tag = std::max(tag, op->getInt("tag"));
  std::vector<std::unique_ptr<Op>> old = std::move(m.ops);
  m.ops.clear();
  auto message = [&](Value *v, const Op &at, int64_t from, int64_t to) {
    AttrMap base = at.attrs;
    clearVirtualStage(base);
    AttrMap sendAttrs = base, recvAttrs = base;
    setPipelineStage(sendAttrs, from);
    sendAttrs["axis"] = std::string("pp");
    sendAttrs["peer_offset"] = to - from;
    sendAttrs["tag"] = ++tag;
    m.append(OpKind::Send, {v}, {}, sendAttrs)->path = at.path;
    setPipelineStage(recvAttrs, to);
    recvAttrs["axis"] = std::string("pp");
    recvAttrs["peer_offset"] = from - to;
    recvAttrs["tag"] = tag;
    recvAttrs["shape"] = std::vector<int64_t>(v->type.shape.begin(), v->type.shape.end());
    recvAttrs["dtype"] = std::string(spelling(v->type.dtype));
    Op *recv = m.append(OpKind::Recv, {}, {v->type}, recvAttrs, v->name + ".moved");
    recv->path = at.path;
    return recv->results[0];
  };
  std::unordered_map<Value *, Value *> backOnRank0;
  for (auto &up : old) {
    Op &op = *up;
    for (Value *&v : op.operands)
      if (auto it = backOnRank0.find(v); it != backOnRank0.end()) v = it->second;
    bool move = &op == victim;
    if (!move) {
      m.ops.push_back(std::move(up));
      continue;
    }
    for (Value *&v : op.operands) v = message(v, op, 0, 1);
    setPipelineStage(op, 1);
    if (hasVirtualStage(op)) setVirtualStage(op, 1);
    Op *self = up.get();
    m.ops.push_back(std::move(up));
    for (Value *r : self->results) backOnRank0[r] = message(r, *self, 1, 0);
  }
  return llvm::Error::success();
}

double largestMagnitude(const Tensor &t) {
  double m = 0;
  for (double x : t.data) m = std::max(m, std::fabs(x));
  return m;
}

double largestChange(const Tensor &now, const Tensor *before) {
  if (!before || before->shape != now.shape) return largestMagnitude(now);
  double m = 0;
  for (size_t i = 0; i < now.data.size(); ++i) m = std::max(m, std::fabs(now.data[i] - before->data[i]));
  return m;
}

/// What each output's differences are divided by: the scale of the quantity
/// it perturbs (VerifyPlan.h). An output's kind is "grad" for gradients,
/// "param" for an updated trainable parameter, the state's suffix
/// ("adam_m") for an updated optimizer state, and the output's own name for
/// anything else (the loss, the learning rate, the norm); a kind's scale is
/// the largest change the step makes to any of its outputs (a gradient's
/// change is its value), and an output is judged against the larger of that
/// and its own largest magnitude.
std::map<std::string, double> comparisonScales(const Module &step, const TensorMap &feeds, const TensorMap &reference) {
  std::map<std::string, const Value *> paramAt; // path -> parameter
  for (const Value *p : step.params) paramAt[p->path.empty() ? p->name : p->path] = p;
  std::map<std::string, std::string> kindOf;
  std::map<std::string, double> kindScale;
  for (const Output &out : step.outputs) {
    const std::string &name = out.name;
    auto ref = reference.find(name);
    if (ref == reference.end()) continue;
    std::string kind = name;
    const Tensor *before = nullptr;
    if (out.role == OutputRole::ParamGradient) {
      kind = "grad";
    } else if (out.isUpdate()) {
      auto p = paramAt.find(out.path);
      if (p != paramAt.end()) {
        if (auto f = feeds.find(p->second->name); f != feeds.end()) before = &f->second;
        // The updates of one optimizer state (adam_m ...) share a scale.
        bool state = out.role == OutputRole::StateUpdate && !out.owner.empty();
        kind = state ? "state." + out.path.substr(out.owner.size() + 1) : "param";
      }
    }
    kindOf[name] = kind;
    double &k = kindScale[kind];
    k = std::max(k, largestChange(ref->second, before));
  }
  std::map<std::string, double> scale;
  for (const auto &[name, kind] : kindOf) scale[name] = std::max(kindScale[kind], largestMagnitude(reference.at(name)));
  return scale;
}

void record(RankDifference::Worst &w, double abs, double rel, const std::string &name) {
  w.abs = std::max(w.abs, abs);
  if (rel >= w.rel) {
    w.rel = rel;
    w.output = name;
  }
}

} // namespace

llvm::Expected<PlanVerifyReport> planc::verifyPlan(Compilation &c, const PlanVerifyOptions &options) {
  // The reference is one device's step on the whole batch; the partitioned
  // program starts from one micro-batch of every dp rank, which the pipeline
  // pass repeats for every micro-batch.
  const PlanConfig &config = c.getConfig();
  CompileOptions stepOptions;
  stepOptions.floatType = options.floatType;
  stepOptions.passes = options.passes;
  stepOptions.stopAfter = CompileStage::Scheduled;
  auto built = compile(c, stepOptions);
  if (!built) return built.takeError();
  Module &part = *built->module;
  PlanVerifyReport report;
  report.mesh = part.mesh;
  // The ops that put bytes on the wire (a recv's are its send's), in the
  // placed step of one micro-batch.
  for (const auto &op : part.ops) report.collectives += opDef(op->kind).wireBytes != nullptr;
  if (options.dropCollective >= 0)
    if (llvm::Error e = dropReduction(part, options.dropCollective)) return e;
  if (options.misplaceOp)
    if (llvm::Error e = misplaceOneOp(part)) return e;
  // The execution plan, every gradient kept to the end to be compared. Its
  // structure is judged on what every rank runs, every micro-batch.
  memory::PlanOptions planOptions;
  planOptions.keepPlacements = true;
  planOptions.keepGradientOutputs = true;
  auto placed = memory::planMemory(part, planOptions);
  if (!placed) return placed.takeError();
  auto plan = exec::buildExecutionPlan(part, *placed);
  if (!plan) return plan.takeError();
  report.structure = exec::checkPlanStructure(*plan);
  // The text form is what `--emit=exec` shows and a backend may be handed:
  // it must say the whole plan.
  if (std::string problem = exec::roundTripProblem(*plan); !problem.empty()) report.plan.push_back(problem);
  auto states = checkModelStates(c, options.passes.verifyEach);
  if (!states) return states.takeError();
  report.structure.insert(report.structure.end(), states->violations.begin(), states->violations.end());
  report.modelStatesSkipped = states->skipped;
  report.structureOnly = options.structureOnly;
  if (options.structureOnly) {
    // Not run, but still judged: the plan's own rules (exec/PlanVerifier.h).
    if (!options.skipPlanCheck) {
      std::vector<std::string> problems = exec::checkPlan(*plan);
      report.plan.insert(report.plan.end(), problems.begin(), problems.end());
    }
    return report;
  }

  CompileOptions referenceOptions;
  referenceOptions.stopAfter = CompileStage::TrainingStep;
  referenceOptions.batch = BatchScope::Step;
  referenceOptions.floatType = options.floatType;
  referenceOptions.passes.verifyEach = options.passes.verifyEach;
  auto referenceStep = compile(c, referenceOptions);
  if (!referenceStep) return referenceStep.takeError();
  std::unique_ptr<Module> step = std::move(referenceStep->module);

  auto feeds = makeFeeds(*step, options.seed);
  if (!feeds) return feeds.takeError();
  auto reference = interpret(*step, *feeds, options.seed);
  if (!reference) return llvm::joinErrors(makeError("the single-device step failed:"), reference.takeError());

  if (options.swapSends)
    if (llvm::Error e = swapTwoSends(*plan)) return e;
  if (options.overlapBuffers) {
    auto moved = overlapTwoBuffers(*plan);
    if (!moved) return moved.takeError();
    report.corruption = *moved;
  }
  if (!options.skipPlanCheck) {
    std::vector<std::string> problems = exec::checkPlan(*plan);
    report.plan.insert(report.plan.end(), problems.begin(), problems.end());
  }

  // Every rank's block of the parameters, and its rows of the whole step's
  // batch (exec/ExecutionPlan.h: dp rank d's m micro-batches one after another).
  MeshLayout mesh(part.mesh);
  const int microBatches = plan->schedule.microBatches;
  RankTensorMaps rankFeeds(size_t(mesh.numRanks()));
  auto feedAll = [&](const Value *v, bool batch) -> llvm::Error {
    auto it = feeds->find(v->name);
    if (it == feeds->end()) return makeError("no value for %" + v->name + " in the single-device step's feeds");
    TensorType t = v->type;
    if (batch && t.rank() > 0) t.shape[0] *= microBatches;
    if (it->second.shape != t.shape)
      return makeError("%" + v->name + " of the single-device step is " + toString(it->second.shape) +
                       ", but the partitioned step's whole batch is " + toString(t.shape));
    std::vector<Tensor> blocks = splitToRanks(it->second, t, mesh);
    for (int64_t r = 0; r < mesh.numRanks(); ++r) rankFeeds[size_t(r)][v->name] = std::move(blocks[size_t(r)]);
    return llvm::Error::success();
  };
  for (const Value *p : part.params)
    if (llvm::Error e = feedAll(p, false)) return e;
  for (const Value *in : part.inputs)
    if (llvm::Error e = feedAll(in, true)) return e;
  interp::PlanInterpreter run(*plan);
  if (llvm::Error e = run.loadParams(rankFeeds)) return e;
  if (llvm::Error e = run.loadInputs(rankFeeds)) return e;
  if (llvm::Error e = run.runStep(options.seed))
    return llvm::joinErrors(makeError("the execution plan failed:"), std::move(e));
  auto ranks = run.outputs();
  if (!ranks) return ranks.takeError();

  report.tolerance = options.tolerance > 0 ? options.tolerance : options.floatType == DType::F64 ? 1e-9 : 1e-5;
  for (int64_t r = 0; r < mesh.numRanks(); ++r) {
    report.ranks.push_back({});
    report.ranks.back().rank = r;
    report.ranks.back().coords = mesh.coordinates(r);
  }
  const std::map<std::string, double> scales = comparisonScales(*step, *feeds, *reference);
  // The factor clipping multiplies the gradients by (torch's clip_grad_norm_).
  double clipScale = 1;
  if (auto norm = reference->find("grad_norm"); norm != reference->end() && config.train.clipGradNorm > 0)
    clipScale = std::min(1.0, config.train.clipGradNorm / (norm->second.data.at(0) + 1e-6));
  // Gradients first: the Adam exception below needs each gradient's largest
  // difference.
  std::map<std::string, double> gradDifference;
  std::vector<const Output *> order;
  for (const Output &out : part.outputs)
    if (out.role == OutputRole::ParamGradient) order.push_back(&out);
  for (const Output &out : part.outputs)
    if (out.role != OutputRole::ParamGradient) order.push_back(&out);
  for (const Output *out : order) {
    const std::string &name = out->name;
    const Value *value = out->value;
    auto ref = reference->find(name);
    if (ref == reference->end()) return makeError("the single-device step has no output '" + name + "'");
    double scale = scales.count(name) ? scales.at(name) : largestMagnitude(ref->second);
    // Per rank: its block against the reference's block; a partial sum is
    // compared whole (its addends alone mean nothing).
    std::vector<Tensor> have, want;
    for (const TensorMap &t : *ranks)
      if (!t.count(name)) return makeError("the execution plan holds no output '" + name + "' at the end of the step");
    if (value->type.sharding.partial.empty()) {
      want = splitToRanks(ref->second, value->type, mesh);
      for (const TensorMap &t : *ranks) have.push_back(t.at(name));
    } else {
      std::vector<Tensor> blocks;
      for (const TensorMap &t : *ranks) blocks.push_back(t.at(name));
      auto whole = assembleFromRanks(blocks, value->type, mesh);
      if (!whole) return whole.takeError();
      have.assign(size_t(mesh.numRanks()), *whole);
      want.assign(size_t(mesh.numRanks()), ref->second);
    }
    // Adam's first step moves each element by lr * g / (|g| + eps) (g
    // clipped): a gradient off by d moves it by up to lr * d * eps /
    // (|g| - d + eps)^2, and by up to 2 lr where |g| <= d (the sign is not
    // decided). Where the reference gradient is that close to 0 (a key bias's
    // gradient is exactly 0 in exact arithmetic, all rounding noise), the
    // updated parameter is left out and counted; the gradient itself is
    // compared as any other, and d is its largest difference here (where
    // that is within the tolerance).
    std::vector<Tensor> noiseMask;
    const Op *update = nullptr;
    if (const Value *v = step->output(name); v && v->def && v == v->def->results[0] &&
                                             (v->def->kind == OpKind::AdamUpdate || v->def->kind == OpKind::Adam8bitUpdate))
      update = v->def;
    const Output *gradient = update ? step->outputFor(OutputRole::ParamGradient, out->path) : nullptr;
    auto grad = gradient ? reference->find(gradient->name) : reference->end();
    if (grad != reference->end() && grad->second.shape == ref->second.shape) {
      // A gradient that failed fails the step anyway: its update is compared whole.
      double d = gradDifference.count(grad->first) ? gradDifference.at(grad->first) : 0.0;
      auto gradScale = scales.find(grad->first);
      if (gradScale == scales.end() || d > report.tolerance * gradScale->second) d = 0;
      double eps = update->getFloat("eps", 1e-8) / clipScale;
      double floor = d > 0 ? d + std::max(0.0, std::sqrt(d * eps / report.tolerance) - eps) : 0.0;
      Tensor mask(grad->second.shape, DType::F64);
      for (size_t i = 0; i < mask.data.size(); ++i)
        mask.data[i] = grad->second.data[i] != 0 && std::fabs(grad->second.data[i]) < floor;
      noiseMask = value->type.sharding.partial.empty() ? splitToRanks(mask, value->type, mesh)
                                                       : std::vector<Tensor>(size_t(mesh.numRanks()), mask);
    }
    for (int64_t r = 0; r < mesh.numRanks(); ++r) {
      double abs = 0;
      if (have[r].shape != want[r].shape) return makeError("output '" + name + "' has the wrong block shape on rank " + std::to_string(r));
      for (size_t i = 0; i < have[r].data.size(); ++i) {
        if (!noiseMask.empty() && noiseMask[size_t(r)].data[i] != 0) {
          report.noiseElements += r == 0;
          continue;
        }
        double d = std::fabs(have[r].data[i] - want[r].data[i]);
        abs = std::isnan(d) ? INFINITY : std::max(abs, d);
      }
      const bool isGradient = out->role == OutputRole::ParamGradient;
      if (isGradient) gradDifference[name] = std::max(gradDifference[name], abs);
      double rel = scale > 0 ? abs / scale : abs;
      RankDifference &rd = report.ranks[size_t(r)];
      record(out->role == OutputRole::Loss ? rd.loss : isGradient ? rd.grads : rd.params, abs, rel, name);
      if (rel >= report.worstRel) {
        report.worstRel = rel;
        report.worstOutput = name;
      }
    }
  }
  return report;
}

void planc::printPlanVerifyReport(const PlanVerifyReport &r, llvm::raw_ostream &os) {
  os << "mesh:";
  for (MeshAxis a : MeshLayout::kFastestFirst)
    if (r.mesh[unsigned(a)] > 1) os << " " << spelling(a) << "=" << r.mesh[unsigned(a)];
  int64_t ranks = 1;
  for (int64_t n : r.mesh) ranks *= n;
  if (ranks == 1) os << " (one device)";
  os << ", " << counted(r.collectives, "collective") << " inserted\n";
  if (!r.modelStatesSkipped.empty()) os << "model states not compared with the formula: " << r.modelStatesSkipped << "\n";
  if (r.structureOnly) {
    for (const std::string &p : r.plan) os << "plan: " << p << "\n";
    for (const std::string &v : r.structure) os << "structure: " << v << "\n";
    if (r.passed()) {
      os << "PASS: the structure of the pipeline schedule (numbers not compared)\n";
    } else {
      os << "FAIL:";
      if (!r.plan.empty())
        os << " " << counted(int64_t(r.plan.size()), "problem") << " of the execution plan" << (r.structure.empty() ? "" : ";");
      if (!r.structure.empty())
        os << " " << counted(int64_t(r.structure.size()), "structural violation") << " of the pipeline schedule";
      os << "\n";
    }
    return;
  }
  os << llvm::formatv("{0,-6}{1,-22}{2,-21}{3,-24}{4}\n", "rank", "coordinates", "loss (abs / rel)",
                      "gradients (abs / rel)", "parameters (abs / rel)");
  for (const RankDifference &d : r.ranks) {
    std::string coords;
    for (MeshAxis a : {MeshAxis::DP, MeshAxis::PP, MeshAxis::TP, MeshAxis::CP, MeshAxis::EP})
      if (r.mesh[unsigned(a)] > 1) coords += (coords.empty() ? "" : " ") + std::string(spelling(a)) + "=" + std::to_string(d.coords[unsigned(a)]);
    if (coords.empty()) coords = "-";
    auto cell = [](const RankDifference::Worst &w) { return llvm::formatv("{0:e1} / {1:e1}", w.abs, w.rel).str(); };
    os << llvm::formatv("{0,-6}{1,-22}{2,-21}{3,-24}{4}\n", d.rank, coords, cell(d.loss), cell(d.grads),
                        cell(d.params));
  }
  if (!r.corruption.empty()) os << "testing: " << r.corruption << "\n";
  for (const std::string &p : r.plan) os << "plan: " << p << "\n";
  for (const std::string &v : r.structure) os << "structure: " << v << "\n";
  if (r.noiseElements)
    os << "not compared: " << counted(int64_t(r.noiseElements), "element")
       << " of Adam-updated parameters whose gradient is too close to 0 for its difference "
          "to decide the step\n";
  bool close = r.worstRel <= r.tolerance;
  os << (r.passed() ? "PASS" : "FAIL") << ": largest relative difference "
     << llvm::formatv("{0:e2}", r.worstRel) << " (" << r.worstOutput << ")" << (close ? " <= " : " > ")
     << "tolerance " << llvm::formatv("{0:e0}", r.tolerance);
  if (!r.plan.empty()) os << "; " << counted(int64_t(r.plan.size()), "problem") << " of the execution plan";
  if (!r.structure.empty())
    os << "; " << counted(int64_t(r.structure.size()), "structural violation") << " of the pipeline schedule";
  os << "\n";
}
