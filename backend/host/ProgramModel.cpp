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

/// Appends `values` to the flat integer table and to its text (one line,
/// ending in a comment naming whose they are); their index in the table.
size_t appendInts(std::vector<int64_t> &table, std::string &text, llvm::ArrayRef<int64_t> values,
                  llvm::StringRef whose) {
  const size_t first = table.size();
  if (values.empty()) return first;
  text += "  ";
  for (int64_t v : values) {
    table.push_back(v);
    text += std::to_string(v) + ", ";
  }
  text += "// " + backend::cComment(whose) + "\n";
  return first;
}

/// `static const TYPE NAME[] = {ROWS};`, or nothing where there are no rows
/// (C++ has no empty arrays): the ProgramTables entry is then a null pointer.
void renderTable(llvm::StringRef type, llvm::StringRef name, const std::string &rows, size_t count,
                 llvm::raw_ostream &os) {
  if (count == 0) return;
  os << "static const " << type << " " << name << "[] = {\n" << rows << "};\n";
}

/// A table's pointer and count in a ProgramTables row ("nullptr, 0" when empty).
std::string tableRef(llvm::StringRef name, size_t count) {
  return (count ? name.str() : std::string("nullptr")) + ", " + std::to_string(count);
}

/// The Param, input and output buffers of `program` as constant tables
/// (runtime/ModelTables.h) before makeModel(), and its ProgramTables row
/// into `programRow`; an error where the plan has a buffer the executable
/// cannot feed.
llvm::Error renderProgramTables(const exec::ExecutionPlan &plan, size_t index, const HostProgramSettings &settings,
                                bool &hasTokens, bool &hasTargets, llvm::raw_ostream &os, std::string &programRow) {
  const exec::RankProgram &program = plan.programs[index];
  const MeshLayout mesh(plan.mesh);
  const std::string suffix = "_" + std::to_string(index);

  std::vector<int64_t> table;
  std::string intsText, paramRows, inputRows, outputRows;
  size_t params = 0, inputs = 0, outputs = 0;
  std::map<std::string, int64_t> paramIndexByPath;
  for (size_t bi = 0; bi < program.buffers.size(); ++bi) {
    const exec::Buffer &b = program.buffers[bi];
    if (b.role == exec::BufferRole::Param && b.aliasOf < 0) {
      // The parameter's checkpoint name keys its initial values too.
      const std::string &name = b.path.empty() ? b.value() : b.path;
      const char *init = b.init.kind == ir::InitKind::Zeros  ? "Zeros"
                         : b.init.kind == ir::InitKind::Ones ? "Ones"
                                                             : "Normal";
      // The block's shape, the global shape, each rank's place in the
      // global tensor (ir/LocalBlocks.h).
      std::vector<int64_t> dims(b.local().begin(), b.local().end());
      dims.insert(dims.end(), b.type().shape.begin(), b.type().shape.end());
      for (int64_t rank : program.ranks) {
        std::vector<int64_t> o = ir::blockOffsets(b.type(), mesh, rank);
        dims.insert(dims.end(), o.begin(), o.end());
      }
      const size_t first = appendInts(table, intsText, dims, name);
      paramRows += "  {" + cString(name) + ", " + std::to_string(b.offset) + "ull, ElementType::" +
                   elementTypeName(b.type().dtype) + ", " + std::to_string(b.local().size()) + ", " +
                   std::to_string(first) + ", " + cString(toString(b.type().sharding)) + ", ParamInit::" + init + ", " +
                   backend::floatLiteral(b.init.stddev, true) + ", " + (b.init.modelParam ? "true" : "false") + "},\n";
      paramIndexByPath[name] = int64_t(params++);
    } else if (b.role == exec::BufferRole::Input) {
      const std::string &v = b.value();
      const char *kind = v == "tokens" ? "Tokens" : v == "targets" ? "Targets" : v == "step" ? "Step" : nullptr;
      if (!kind)
        return makeError("input '" + v + "' of plan '" + plan.name +
                         "' is neither 'tokens', 'targets' nor the step count; the executable feeds only those");
      hasTokens |= v == "tokens";
      hasTargets |= v == "targets";
      const Shape &shape = b.local();
      const size_t first = appendInts(table, intsText, shape, v + " " + std::to_string(std::max(0, b.slot)));
      inputRows += "  {ExecInput::Kind::" + std::string(kind) + ", " + std::to_string(std::max(0, b.slot)) + ", " +
                   std::to_string(b.offset) + "ull, ElementType::" + elementTypeName(b.type().dtype) + ", " +
                   std::to_string(shape.size()) + ", " + std::to_string(first) + "},\n";
      ++inputs;
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
    outputRows += "  {" + cString(o.name) + ", " + std::to_string(b.offset) + "ull, ElementType::" +
                  elementTypeName(b.type().dtype) + ", " + std::to_string(bytes) + "ull, " + std::to_string(copyTo) +
                  "},\n";
    ++outputs;
  }

  os << "// The buffers of " << rankClassOf(program) << ".\n";
  renderTable("int64_t", "planc_ints" + suffix, intsText, table.size(), os);
  os << "static const int64_t planc_ranks" << suffix << "[] = {";
  for (size_t r = 0; r < program.ranks.size(); ++r) os << (r ? ", " : "") << program.ranks[r];
  os << "};\n";
  renderTable("ParamRow", "planc_params" + suffix, paramRows, params, os);
  renderTable("InputRow", "planc_inputs" + suffix, inputRows, inputs, os);
  renderTable("OutputRow", "planc_outputs" + suffix, outputRows, outputs, os);
  os << "\n";

  const uint64_t ledger = index < settings.ledgerBytes.size() ? settings.ledgerBytes[index] : uint64_t(0);
  programRow = "  {" + std::to_string(program.stage) + ", " + cString(rankClassOf(program)) + ", planc_ranks" + suffix +
               ", " + std::to_string(program.ranks.size()) + ", " + std::to_string(program.arenaSize) + "ull, " +
               std::to_string(ledger) + "ull,\n   " + tableRef("planc_params" + suffix, params) + ", " +
               tableRef("planc_inputs" + suffix, inputs) + ", " + tableRef("planc_outputs" + suffix, outputs) + ", " +
               tableRef("planc_ints" + suffix, table.size()) + ", planc_step" + suffix + "},\n";
  return llvm::Error::success();
}

/// The inference step's part of makeModel(), its parameters' table into `tables`.
void renderInferenceModel(const exec::ExecutionPlan &inference, llvm::raw_ostream &tables, llvm::raw_ostream &os) {
  const exec::RankProgram &ip = inference.programs.front();
  os << "  m.inference.arenaBytes = " << ip.arenaSize << "ull;\n";
  bool tokens = false, logits = false;
  std::string rows;
  size_t params = 0;
  for (const exec::Buffer &b : ip.buffers) {
    if (b.role == exec::BufferRole::Param && b.aliasOf < 0) {
      rows += "  {" + cString(b.path.empty() ? b.value() : b.path) + ", " + std::to_string(b.offset) +
              "ull, ElementType::" + elementTypeName(b.type().dtype) + ", " +
              std::to_string(ir::TensorType(b.local(), b.type().dtype).numel()) + "},\n";
      ++params;
    } else if (b.role == exec::BufferRole::Input && b.value() == "tokens" && b.slot <= 0 && b.local().size() == 2) {
      os << "  m.inference.tokensOffset = " << b.offset << "ull;\n  m.inference.tokensType = ElementType::"
         << elementTypeName(b.type().dtype) << ";\n  m.inference.rows = " << b.local()[0]
         << ";\n  m.inference.seq = " << b.local()[1] << ";\n";
      tokens = true;
    }
  }
  if (params) {
    tables << "// The parameters the inference step reads, by their training names (runtime/ModelTables.h).\n";
    renderTable("InferenceParamRow", "planc_inference_params", rows, params, tables);
    tables << "\n";
    os << "  m.inference.params = readInferenceParams(planc_inference_params, " << params << ");\n";
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
  // The tables first (constant data), then makeModel() reading them.
  os << "// Each rank class's buffers as constant tables (runtime/ModelTables.h): a row per Param,\n"
     << "// input and output buffer, and the integers of their shapes (a Param's shape, global shape\n"
     << "// and each rank's block offset; an input's shape) in one array the rows index.\n";
  os << "using planc::runtime::ElementType;\nusing planc::runtime::ExecInput;\nusing planc::runtime::InferenceParamRow;\n"
     << "using planc::runtime::InputRow;\nusing planc::runtime::OutputRow;\nusing planc::runtime::ParamInit;\n"
     << "using planc::runtime::ParamRow;\nusing planc::runtime::ProgramTables;\n\n";
  bool hasTokens = false, hasTargets = false;
  std::string programRows;
  for (size_t p = 0; p < plan.programs.size(); ++p) {
    std::string row;
    if (llvm::Error e = renderProgramTables(plan, p, settings, hasTokens, hasTargets, os, row)) return e;
    programRows += row;
  }
  if (!hasTokens || !hasTargets)
    return makeError("plan '" + plan.name + "' has no 'tokens' and 'targets' inputs for the data to feed");
  os << "// The rank classes: their ranks, arenas, tables and steps.\n"
     << "static const ProgramTables planc_programs[] = {\n" << programRows << "};\n\n";
  std::string body;
  llvm::raw_string_ostream bs(body);
  if (inference) renderInferenceModel(*inference, os, bs);
  bs.flush();

  os << "planc::runtime::ExecutableModel makeModel() {\n";
  os << "  using namespace planc::runtime;\n";
  os << "  ExecutableModel m;\n";
  os << "  m.plan = " << cString(plan.name) << ";\n";
  os << "  m.source = " << cString(settings.source) << ";\n";
  os << "  m.ranks = " << mesh.numRanks() << ";\n";
  os << "  m.mesh = {";
  for (unsigned a = 0; a < kNumMeshAxes; ++a) os << (a ? ", " : "") << plan.mesh[a];
  os << "}; // dp, pp, tp, cp, ep\n";
  os << "  for (const ProgramTables &t : planc_programs) m.programs.push_back(readProgramTables(t));\n";
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
  os << body;
  os << "  m.setThreads = planc_set_threads;\n";
  os << "  m.setCoordinates = planc_set_coordinates;\n";
  os << "  return m;\n}\n\n} // namespace\n";
  return llvm::Error::success();
}
