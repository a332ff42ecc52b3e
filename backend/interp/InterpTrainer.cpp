//===- backend/interp/InterpTrainer.cpp - training on the reference interpreter -===//

#include "backend/interp/InterpTrainer.h"
#include "backend/interp/TensorAdapters.h"

#include "runtime/AtomicFile.h"
#include "runtime/Safetensors.h"

#include "ir/Interpreter.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "support/Error.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <map>
#include <set>

using namespace planc;
using namespace planc::ir;
using namespace planc::interp;

namespace {

llvm::Error errorOf(const runtime::Status &s) { return s.ok() ? llvm::Error::success() : makeError(s.message()); }

std::string pathOf(const Value *v) { return v->path.empty() ? v->name : v->path; }

/// How the module's values meet the loop: which parameter each "new.<path>"
/// output replaces, and which parameters are the model's (not optimizer state).
struct StepInterface {
  std::vector<std::pair<const Value *, std::string>> updates; // parameter, output name
  std::vector<const Value *> modelParams;
  std::set<std::string> updateOutputs; // what the next step reads, not reported
  const Value *step = nullptr; // the 1-based update counter, if the module reads one
  bool hasLr = false;
};

llvm::Expected<StepInterface> interfaceOf(const Module &m) {
  const Output *lossOut = m.outputFor(OutputRole::Loss);
  const Value *loss = lossOut ? lossOut->value : nullptr;
  if (!loss || loss->type.rank() != 0)
    return makeError("module '" + m.name + "' is not a training step: it has no scalar output 'loss'");
  StepInterface s;
  std::map<std::string, std::string> updateOf; // path -> output name
  for (const Output &out : m.outputs)
    if (out.isUpdate()) {
      updateOf.emplace(out.path, out.name);
      s.updateOutputs.insert(out.name);
    }
  for (const Value *p : m.params) {
    auto update = updateOf.find(pathOf(p));
    bool updated = update != updateOf.end();
    if (updated) s.updates.push_back({p, update->second});
    // Optimizer state is frozen (it has no gradient) yet updated.
    if (!(p->frozen && updated)) s.modelParams.push_back(p);
  }
  for (const Value *in : m.inputs)
    if (in->name == "step") s.step = in;
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

Tensor scalar(DType dtype, double value) {
  Tensor t({}, dtype);
  t.data[0] = value;
  return t;
}

std::string number(double x) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.6f", x);
  return buf;
}

} // namespace

llvm::Expected<TrainLoopResult> interp::trainOnInterpreter(const Module &m, runtime::DataSource &data,
                                                           const TrainLoopOptions &options) {
  auto interface = interfaceOf(m);
  if (!interface) return interface.takeError();
  const StepInterface &io = *interface;

  // Parameters, optimizer state and the batch share one map of feeds, so the
  // parameters are not copied each step.
  TensorMap feeds = initialParams(m, options.seed);
  int64_t numParams = 0;
  for (const Value *p : io.modelParams) numParams += p->type.numel();
  DType floatType = io.modelParams.empty() ? DType::F32 : io.modelParams.front()->type.dtype;

  Dumper dump(options.dumpDir);
  std::map<std::string, std::string> meta = {{"model", m.name},
                                             {"dtype", spelling(floatType)},
                                             {"seed", std::to_string(options.seed)}};
  if (dump.enabled()) {
    if (llvm::Error e = dump.create()) return e;
    TensorMap init;
    for (const Value *p : io.modelParams) init[pathOf(p)] = feeds.at(p->name);
    if (llvm::Error e = dump.tensors("init.safetensors", init, meta)) return e;
  }

  llvm::raw_ostream *log = options.log;
  if (log) {
    *log << "training " << m.name << " on the interpreter (" << spelling(floatType) << "): " << numParams
         << " parameters, " << data.describe() << ", " << options.steps << (options.steps == 1 ? " step\n" : " steps\n");
    log->flush();
  }

  TrainLoopResult result;
  nlohmann::json record = {{"model", m.name}, {"dtype", spelling(floatType)}, {"seed", options.seed},
                           {"steps", options.steps}, {"loss", nlohmann::json::array()},
                           {"lr", nlohmann::json::array()}};
  for (int64_t step = 0; step < options.steps; ++step) {
    auto start = std::chrono::steady_clock::now();
    runtime::Result<runtime::Batch> batch = data.batch(step);
    if (!batch.ok()) return makeError(batch.error());
    if (dump.enabled()) {
      runtime::HostTensorMap b = {{"tokens", batch->tokens}, {"targets", batch->targets}};
      if (llvm::Error e = dump.tensors("batch-" + std::to_string(step) + ".safetensors", b, meta)) return e;
    }
    feeds["tokens"] = toTensor(batch->tokens);
    feeds["targets"] = toTensor(batch->targets);
    if (io.step) feeds["step"] = scalar(io.step->type.dtype, double(step + 1));

    // One draw seed per step: dropout masks differ between steps, never within one.
    auto outputs = interpret(m, feeds, options.seed * 1000003ull + uint64_t(step) + 1);
    if (!outputs) return makeError("step " + std::to_string(step) + ": " + llvm::toString(outputs.takeError()));
    double loss = outputs->at("loss").data[0];
    double lr = io.hasLr ? outputs->at("lr").data[0] : std::nan("");
    result.losses.push_back(loss);
    result.lrs.push_back(lr);

    if (dump.enabled()) {
      TensorMap reported;
      for (auto &[name, t] : *outputs)
        if (!io.updateOutputs.count(name)) reported[name] = t;
      if (llvm::Error e = dump.tensors("step-" + std::to_string(step) + ".safetensors", reported, meta)) return e;
      record["loss"].push_back(loss);
      record["lr"].push_back(io.hasLr ? nlohmann::json(lr) : nlohmann::json());
      if (llvm::Error e = dump.text("losses.json", record.dump(2) + "\n")) return e;
    }
    if (log) {
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      *log << "step " << step << "  loss " << number(loss);
      if (io.hasLr) *log << "  lr " << llvm::format("%.4e", lr);
      *log << "  " << llvm::format("%.2f", seconds) << " s\n";
      log->flush();
    }
    if (!std::isfinite(loss))
      return makeError("the loss is " + number(loss) + " at step " + std::to_string(step) + "; training stopped");
    for (auto &[param, name] : io.updates) feeds[param->name] = std::move(outputs->at(name));
  }
  return result;
}
