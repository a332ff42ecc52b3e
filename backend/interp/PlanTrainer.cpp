//===- backend/interp/PlanTrainer.cpp - training an execution plan on the interpreter -===//

#include "backend/interp/PlanTrainer.h"
#include "backend/interp/PlanInterpreter.h"
#include "backend/interp/TensorAdapters.h"

#include "runtime/AtomicFile.h"
#include "runtime/Safetensors.h"

#include "ir/Interpreter.h"
#include "ir/LocalBlocks.h"
#include "ir/MeshLayout.h"
#include "ir/StepOutputs.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "support/Error.h"
#include "support/Plural.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <map>

using namespace planc;
using namespace planc::ir;
using namespace planc::interp;

namespace {

llvm::Error errorOf(const runtime::Status &s) { return s.ok() ? llvm::Error::success() : makeError(s.message()); }

std::string pathOf(const Value *v) { return v->path.empty() ? v->name : v->path; }

/// How the placed step meets the loop: its model parameters (not optimizer
/// state), its data inputs and step counter, what it reports.
struct StepInterface {
  std::vector<const Value *> modelParams;
  std::vector<const Value *> dataInputs; // tokens, targets: one row block per micro-batch
  const Value *step = nullptr;           // the 1-based update counter, if the step reads one
  const Value *tokens = nullptr, *targets = nullptr;
  std::vector<const Output *> gradients;
  bool hasLr = false;
};

llvm::Expected<StepInterface> interfaceOf(const Module &m) {
  const Output *lossOut = m.outputFor(OutputRole::Loss);
  if (!lossOut || lossOut->value->type.rank() != 0)
    return makeError("module '" + m.name + "' is not a training step: it has no scalar output 'loss'");
  StepInterface s;
  std::map<std::string, bool> updated; // path -> has an update
  for (const Output &out : m.outputs) {
    if (out.isUpdate()) updated[out.path] = true;
    if (out.role == OutputRole::ParamGradient) s.gradients.push_back(&out);
  }
  for (const Value *p : m.params)
    // Optimizer state is frozen (it has no gradient) yet updated.
    if (!(p->frozen && updated.count(pathOf(p)))) s.modelParams.push_back(p);
  for (const Value *in : m.inputs) {
    if (in->name == "step" && in->type.rank() == 0) s.step = in;
    else if (in->type.rank() > 0) s.dataInputs.push_back(in);
    if (in->name == "tokens") s.tokens = in;
    if (in->name == "targets") s.targets = in;
  }
  if (!s.tokens || !s.targets)
    return makeError("module '" + m.name + "' has no 'tokens' and 'targets' inputs for the data to feed");
  for (const Value *in : s.dataInputs)
    if (in != s.tokens && in != s.targets)
      return makeError("input '" + in->name + "' of module '" + m.name +
                       "' is neither 'tokens' nor 'targets'; the data sources feed only those");
  s.hasLr = m.output("lr") != nullptr;
  return s;
}

/// The loop's files, each written whole or not at all.
class Dumper {
public:
  explicit Dumper(std::string dir) : dir(std::move(dir)) {}
  bool enabled() const { return !dir.empty(); }

  llvm::Error create() {
    if (std::error_code ec = llvm::sys::fs::create_directories(dir))
      return makeError("cannot create the dump folder '" + dir + "': " + ec.message());
    return llvm::Error::success();
  }
  llvm::Error tensors(const std::string &file, const runtime::HostTensorMap &t,
                      const std::map<std::string, std::string> &meta) {
    return errorOf(runtime::writeSafetensors(path(file), t, meta));
  }
  llvm::Error tensors(const std::string &file, const TensorMap &t, const std::map<std::string, std::string> &meta) {
    return tensors(file, toHostTensors(t), meta);
  }
  llvm::Error text(const std::string &file, const std::string &contents) {
    return errorOf(runtime::writeFileAtomically(path(file), contents));
  }

private:
  std::string path(const std::string &file) const {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, file);
    return p.str().str();
  }
  std::string dir;
};

std::string number(double x) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.6f", x);
  return buf;
}

/// "dp=2 pp=2 (4 ranks)" or "one device".
std::string describeMesh(const MeshLayout &mesh) {
  if (mesh.numRanks() == 1) return "one device";
  std::string s = "mesh";
  for (MeshAxis a : {MeshAxis::DP, MeshAxis::PP, MeshAxis::TP, MeshAxis::CP, MeshAxis::EP})
    if (mesh.size(a) > 1) s += " " + std::string(spelling(a)) + "=" + std::to_string(mesh.size(a));
  return s + " (" + counted(mesh.numRanks(), "rank") + ")";
}

} // namespace

llvm::Expected<TrainLoopResult> interp::trainPlan(const Module &placed, const exec::ExecutionPlan &plan,
                                                  runtime::DataSource &data, const TrainLoopOptions &options) {
  auto interface = interfaceOf(placed);
  if (!interface) return interface.takeError();
  const StepInterface &io = *interface;
  const MeshLayout mesh(plan.mesh);
  const int microBatches = std::max(1, plan.schedule.microBatches);

  Dumper dump(options.dumpDir);
  if (dump.enabled())
    for (const Output *g : io.gradients)
      if (!llvm::any_of(plan.programs, [&](const exec::RankProgram &p) {
            return llvm::any_of(p.outputs, [&](const exec::OutputBinding &b) { return b.name == g->name; });
          }))
        return makeError("the execution plan does not keep gradient '" + g->name +
                         "' to the end of the step; a dump needs a plan built to report gradients");

  // Every rank's block of the one-device initial values.
  const TensorMap initial = initialParams(placed, options.seed);
  RankTensorMaps params(size_t(mesh.numRanks()));
  for (const Value *p : placed.params) {
    std::vector<Tensor> blocks = splitToRanks(initial.at(p->name), p->type, mesh);
    for (int64_t r = 0; r < mesh.numRanks(); ++r) params[size_t(r)][p->name] = std::move(blocks[size_t(r)]);
  }
  PlanInterpreter run(plan);
  if (llvm::Error e = run.loadParams(params)) return e;
  params.clear();

  int64_t numParams = 0;
  for (const Value *p : io.modelParams) numParams += p->type.numel();
  DType floatType = io.modelParams.empty() ? DType::F32 : io.modelParams.front()->type.dtype;
  // The whole step's rows of a data input: every micro-batch of every dp rank.
  auto wholeStep = [&](const Value *in) {
    TensorType t = in->type;
    t.shape[0] *= microBatches;
    return t;
  };
  const TensorType tokensType = wholeStep(io.tokens);
  TrainLoopResult result;
  result.tokensPerStep = tokensType.numel();

  std::map<std::string, std::string> meta = {{"model", placed.name},
                                             {"dtype", spelling(floatType)},
                                             {"seed", std::to_string(options.seed)}};
  if (dump.enabled()) {
    if (llvm::Error e = dump.create()) return e;
    TensorMap init;
    for (const Value *p : io.modelParams) init[pathOf(p)] = initial.at(p->name);
    if (llvm::Error e = dump.tensors("init.safetensors", init, meta)) return e;
  }

  llvm::raw_ostream *log = options.log;
  if (log) {
    const int64_t dp = mesh.size(MeshAxis::DP), rows = io.tokens->type.shape[0] / dp;
    *log << "training " << placed.name << " on the interpreter (" << spelling(floatType) << "): " << numParams
         << " parameters, " << describeMesh(mesh) << ", " << counted(microBatches, "micro-batch") << " of "
         << counted(rows, "row") << (dp > 1 ? " per dp rank, " : ", ") << data.describe() << ", "
         << counted(options.steps, "step") << "\n";
    log->flush();
  }

  nlohmann::json record = {{"model", placed.name}, {"dtype", spelling(floatType)}, {"seed", options.seed},
                           {"steps", options.steps}, {"tokens_per_step", result.tokensPerStep},
                           {"loss", nlohmann::json::array()}, {"lr", nlohmann::json::array()}};
  ir::RankTensorMaps lastOutputs; // the dump's final parameters are the last step's updates
  for (int64_t step = 0; step < options.steps; ++step) {
    auto start = std::chrono::steady_clock::now();
    runtime::Result<runtime::Batch> batch = data.batch(step);
    if (!batch.ok()) return makeError(batch.error());
    if (batch->tokens.shape != tokensType.shape || batch->targets.shape != tokensType.shape)
      return makeError("step " + std::to_string(step) + ": the data source gave a batch of " +
                       toString(Shape(batch->tokens.shape)) + ", but the plan's step reads " +
                       toString(tokensType.shape));
    if (dump.enabled()) {
      runtime::HostTensorMap b = {{"tokens", batch->tokens}, {"targets", batch->targets}};
      if (llvm::Error e = dump.tensors("batch-" + std::to_string(step) + ".safetensors", b, meta)) return e;
    }
    RankTensorMaps inputs(size_t(mesh.numRanks()));
    for (const Value *in : io.dataInputs) {
      std::vector<Tensor> blocks =
          splitToRanks(toTensor(in == io.tokens ? batch->tokens : batch->targets), wholeStep(in), mesh);
      for (int64_t r = 0; r < mesh.numRanks(); ++r) inputs[size_t(r)][in->name] = std::move(blocks[size_t(r)]);
    }
    if (io.step) {
      Tensor counter({}, io.step->type.dtype);
      counter.data[0] = double(step + 1);
      for (TensorMap &feeds : inputs) feeds[io.step->name] = counter;
    }
    if (llvm::Error e = run.loadInputs(inputs)) return e;

    // One draw seed per step: dropout masks differ between steps, never within one.
    if (llvm::Error e = run.runStep(options.seed * 1000003ull + uint64_t(step) + 1))
      return llvm::joinErrors(makeError("step " + std::to_string(step) + ":"), std::move(e));
    auto outputs = run.outputs();
    if (!outputs) return outputs.takeError();
    const TensorMap &first = outputs->front();
    double loss = first.at("loss").data.at(0);
    double lr = io.hasLr && first.count("lr") ? first.at("lr").data.at(0) : std::nan("");
    result.losses.push_back(loss);
    result.lrs.push_back(lr);

    if (dump.enabled()) {
      TensorMap reported = {{"loss", first.at("loss")}};
      if (io.hasLr) reported["lr"] = first.at("lr");
      for (const Output *g : io.gradients) {
        std::vector<Tensor> blocks;
        for (const TensorMap &rank : *outputs) blocks.push_back(rank.at(g->name));
        auto whole = assembleFromRanks(blocks, g->value->type, mesh);
        if (!whole) return llvm::joinErrors(makeError("gradient '" + g->name + "':"), whole.takeError());
        reported[g->name] = std::move(*whole);
      }
      if (llvm::Error e = dump.tensors("step-" + std::to_string(step) + ".safetensors", reported, meta)) return e;
      record["loss"].push_back(loss);
      record["lr"].push_back(io.hasLr ? nlohmann::json(lr) : nlohmann::json());
      if (llvm::Error e = dump.text("losses.json", record.dump(2) + "\n")) return e;
      lastOutputs = std::move(*outputs);
    }
    if (log) {
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      *log << "step " << step << "  loss " << number(loss);
      if (io.hasLr) *log << "  lr " << llvm::format("%.4e", lr);
      *log << "  " << result.tokensPerStep << " tokens  " << llvm::format("%.2f", seconds) << " s\n";
      log->flush();
    }
    if (!std::isfinite(loss))
      return makeError("the loss is " + number(loss) + " at step " + std::to_string(step) + "; training stopped");
  }
  if (dump.enabled() && !lastOutputs.empty()) {
    // A parameter without an update (frozen) keeps its initial value.
    TensorMap final;
    const OutputIndex outputs(placed);
    for (const Value *p : io.modelParams) {
      const Output *update = outputs.find(OutputRole::ParamUpdate, pathOf(p));
      if (!update) {
        final[pathOf(p)] = initial.at(p->name);
        continue;
      }
      std::vector<Tensor> blocks;
      for (const TensorMap &rank : lastOutputs) blocks.push_back(rank.at(update->name));
      auto whole = assembleFromRanks(blocks, update->value->type, mesh);
      if (!whole) return llvm::joinErrors(makeError("update '" + update->name + "':"), whole.takeError());
      final[pathOf(p)] = std::move(*whole);
    }
    if (llvm::Error e = dump.tensors("final.safetensors", final, meta)) return e;
  }
  return result;
}
