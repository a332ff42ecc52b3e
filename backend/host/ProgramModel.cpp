//===- backend/host/ProgramModel.cpp - the executable's model -------------===//

#include "backend/host/ProgramModel.h"
#include "backend/host/HostText.h"

#include "backend/c/CFamily.h"
#include "ir/LocalBlocks.h"
#include "ir/MeshLayout.h"
#include "support/Error.h"

#include <nlohmann/json.hpp>

#include "llvm/Support/Format.h"

#include <map>

using namespace planc;
using namespace planc::host;

namespace {

std::string dataKind(runtime::DataSpec::Kind k) {
  switch (k) {
  case runtime::DataSpec::Kind::Text: return "Text";
  case runtime::DataSpec::Kind::Tokens: return "Tokens";
  case runtime::DataSpec::Kind::Synthetic: return "Synthetic";
  }
  return "Synthetic";
}

/// The parameters, inputs and outputs of `program` as statements filling
/// `ExecProgram p` in makeModel(); an error where the plan has a buffer the
/// executable cannot feed.
llvm::Error renderProgramModel(const exec::ExecutionPlan &plan, size_t index, const HostProgramSettings &settings,
                               bool &hasTokens, bool &hasTargets, llvm::raw_ostream &os) {
  const exec::RankProgram &program = plan.programs[index];
  const MeshLayout mesh(plan.mesh);

  os << "  {\n    ExecProgram p;\n";
  os << "    p.stage = " << program.stage << ";\n";
  os << "    p.rankClass = " << cString(rankClassOf(program)) << ";\n";
  os << "    p.ranks = " << ints(Shape(program.ranks.begin(), program.ranks.end())) << ";\n";
  os << "    p.arenaBytes = " << program.arenaSize << "ull;\n";
  os << "    p.ledgerBytes = "
     << (index < settings.ledgerBytes.size() ? settings.ledgerBytes[index] : uint64_t(0)) << "ull;\n";
  std::map<std::string, int64_t> paramIndexByPath;
  int64_t paramCount = 0;
  for (size_t bi = 0; bi < program.buffers.size(); ++bi) {
    const exec::Buffer &b = program.buffers[bi];
    if (b.role == exec::BufferRole::Param && b.aliasOf < 0) {
      // The parameter's checkpoint name keys its initial values too.
      const std::string &initKey = b.path.empty() ? b.value() : b.path;
      const char *init = b.init.kind == ir::InitKind::Zeros  ? "Zeros"
                         : b.init.kind == ir::InitKind::Ones ? "Ones"
                                                             : "Normal";
      // Each rank's place in the global tensor (ir/LocalBlocks.h).
      std::string offsets = "{";
      for (size_t r = 0; r < program.ranks.size(); ++r) {
        std::vector<int64_t> o = ir::blockOffsets(b.type(), mesh, program.ranks[r]);
        offsets += (r ? ", " : "") + ints(Shape(o.begin(), o.end()));
      }
      offsets += "}";
      os << "    p.params.push_back({" << cString(initKey) << ", " << cString(initKey)
         << ", " << b.offset << "ull, ElementType::" << elementTypeName(b.type().dtype) << ", " << ints(b.local())
         << ", " << ints(b.type().shape) << ", " << cString(toString(b.type().sharding)) << ", ParamInit::" << init
         << ", " << backend::floatLiteral(b.init.stddev, true) << ", " << (b.init.modelParam ? "true" : "false") << ", "
         << offsets << "});\n";
      paramIndexByPath[initKey] = paramCount++;
    } else if (b.role == exec::BufferRole::Input) {
      const std::string &v = b.value();
      const char *kind = v == "tokens" ? "Tokens" : v == "targets" ? "Targets" : v == "step" ? "Step" : nullptr;
      if (!kind)
        return makeError("input '" + v + "' of plan '" + plan.name +
                         "' is neither 'tokens', 'targets' nor the step count; the executable feeds only those");
      hasTokens |= v == "tokens";
      hasTargets |= v == "targets";
      os << "    p.inputs.push_back({ExecInput::Kind::" << kind << ", " << std::max(0, b.slot) << ", " << b.offset
         << "ull, ElementType::" << elementTypeName(b.type().dtype) << ", " << ints(b.local()) << "});\n";
    }
  }
  for (const exec::OutputBinding &o : program.outputs) {
    if (o.buffer < 0) continue;
    const exec::Buffer &b = program.buffers[size_t(o.buffer)];
    int64_t copyTo = -1;
    if (o.isUpdate()) {
      auto it = paramIndexByPath.find(o.path);
      if (it == paramIndexByPath.end()) continue; // a state of another stage
      // In place (the update aliases its parameter): nothing to copy.
      const exec::Buffer *param = nullptr;
      for (const exec::Buffer &c : program.buffers)
        if (c.role == exec::BufferRole::Param && c.path == o.path) param = &c;
      if (!param || param->offset != b.offset) copyTo = it->second;
      else continue;
    } else if (o.name != "loss" && o.name != "lr" && o.name != "grad_norm" && o.name != "found_inf" &&
               o.name != "loss_scale") {
      continue;
    }
    uint64_t bytes = std::max<uint64_t>(1, uint64_t(ir::TensorType(b.local(), b.type().dtype).numel())) *
                     ir::byteSize(b.type().dtype);
    os << "    p.outputs.push_back({" << cString(o.name) << ", " << b.offset << "ull, ElementType::"
       << elementTypeName(b.type().dtype) << ", " << bytes << "ull, " << copyTo << "});\n";
  }
  os << "    p.step = planc_step_" << index << ";\n";
  os << "    m.programs.push_back(std::move(p));\n  }\n";
  return llvm::Error::success();
}

/// The inference step's part of makeModel().
void renderInferenceModel(const exec::ExecutionPlan &inference, llvm::raw_ostream &os) {
  const exec::RankProgram &ip = inference.programs.front();
  os << "  m.inference.arenaBytes = " << ip.arenaSize << "ull;\n";
  bool tokens = false, logits = false;
  for (const exec::Buffer &b : ip.buffers) {
    if (b.role == exec::BufferRole::Param && b.aliasOf < 0) {
      os << "  m.inference.params.push_back({" << cString(b.path.empty() ? b.value() : b.path) << ", " << b.offset
         << "ull, ElementType::" << elementTypeName(b.type().dtype) << ", "
         << ir::TensorType(b.local(), b.type().dtype).numel() << "});\n";
    } else if (b.role == exec::BufferRole::Input && b.value() == "tokens" && b.slot <= 0 && b.local().size() == 2) {
      os << "  m.inference.tokensOffset = " << b.offset << "ull;\n  m.inference.tokensType = ElementType::"
         << elementTypeName(b.type().dtype) << ";\n  m.inference.rows = " << b.local()[0]
         << ";\n  m.inference.seq = " << b.local()[1] << ";\n";
      tokens = true;
    }
  }
  for (const exec::OutputBinding &o : ip.outputs)
    if (o.name == "logits" && o.buffer >= 0) {
      const exec::Buffer &b = ip.buffers[size_t(o.buffer)];
      if (b.local().size() != 3) break;
      os << "  m.inference.logitsOffset = " << b.offset << "ull;\n  m.inference.logitsType = ElementType::"
         << elementTypeName(b.type().dtype) << ";\n  m.inference.vocab = " << b.local()[2] << ";\n";
      logits = true;
    }
  if (tokens && logits) os << "  m.inference.run = planc_infer;\n";
  else os << "  // (no inference step: its tokens are not [rows, seq] or its logits not [rows, seq, vocab])\n";
}

} // namespace

llvm::Error host::renderModel(const exec::ExecutionPlan &plan, const HostProgramSettings &settings,
                              const exec::ExecutionPlan *inference, llvm::raw_ostream &os) {
  const MeshLayout mesh(plan.mesh);
  os << "planc::runtime::ExecutableModel makeModel() {\n";
  os << "  using namespace planc::runtime;\n";
  os << "  ExecutableModel m;\n";
  os << "  m.plan = " << cString(plan.name) << ";\n";
  os << "  m.source = " << cString(settings.source) << ";\n";
  os << "  m.ranks = " << mesh.numRanks() << ";\n";
  os << "  m.mesh = {";
  for (unsigned a = 0; a < kNumMeshAxes; ++a) os << (a ? ", " : "") << plan.mesh[a];
  os << "}; // dp, pp, tp, cp, ep\n";
  bool hasTokens = false, hasTargets = false;
  for (size_t p = 0; p < plan.programs.size(); ++p)
    if (llvm::Error e = renderProgramModel(plan, p, settings, hasTokens, hasTargets, os)) return e;
  if (!hasTokens || !hasTargets)
    return makeError("plan '" + plan.name + "' has no 'tokens' and 'targets' inputs for the data to feed");
  os << "  m.batch.batch = " << settings.batch.batch << ";\n";
  os << "  m.batch.seq = " << settings.batch.seq << ";\n";
  os << "  m.batch.vocab = " << settings.batch.vocab << ";\n";
  os << "  m.batch.type = ElementType::" << elementTypeName(settings.batch.type) << ";\n";
  os << "  m.microBatches = " << std::max(1, plan.schedule.microBatches) << ";\n";
  os << "  m.steps = " << settings.steps << ";\n";
  os << "  m.seed = " << settings.seed << "ull;\n";
  os << "  m.data.kind = DataSpec::Kind::" << dataKind(settings.data.kind) << ";\n";
  os << "  m.data.path = " << cString(settings.data.path) << ";\n";
  os << "  m.data.tokenDType = ElementType::" << elementTypeName(settings.data.tokenDType) << ";\n";
  os << "  m.checkpointEvery = " << settings.checkpointEvery << ";\n";
  os << "  m.checkpointDir = " << cString(settings.checkpointDir) << ";\n";
  os << "  m.checkpointKeep = " << settings.checkpointKeep << ";\n";
  if (!settings.names.empty()) os << "  m.nameMap = " << cString(runtime::nameMapJson(settings.names).dump()) << ";\n";
  os << "  m.flopsPerStep = " << backend::floatLiteral(settings.flopsPerStep, true) << ";\n";
  os << "  m.peakFlops = " << backend::floatLiteral(settings.peakFlops, true) << ";\n";
  os << "  m.predictedStepSeconds = " << backend::floatLiteral(settings.predictedStepSeconds, true) << "; // ";
  if (settings.predictedStepSeconds > 0)
    os << llvm::format("%g", settings.predictedStepSeconds) << " s, the step planc check predicts\n";
  else
    os << "none: the plan's device is not a CPU\n";
  os << "  m.predictionBasis = " << cString(settings.predictionBasis) << ";\n";
  if (inference) renderInferenceModel(*inference, os);
  os << "  m.setThreads = planc_set_threads;\n";
  os << "  m.setCoordinates = planc_set_coordinates;\n";
  os << "  return m;\n}\n\n} // namespace\n";
  return llvm::Error::success();
}
