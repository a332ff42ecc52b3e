//===- backend/cpu/CppEmitter.cpp - a rank class's program as one C++ file ===//

#include "backend/cpu/CppEmitter.h"

#include "backend/c/ProgramKernels.h"
#include "exec/Groups.h"
#include "ir/LocalBlocks.h"
#include "ir/Mesh.h"
#include "ir/MeshLayout.h"
#include "support/Error.h"
#include "support/Plural.h"

#include <nlohmann/json.hpp>

#include "llvm/Support/Format.h"
#include "llvm/Support/SHA1.h"

#include <cctype>
#include <map>
#include <optional>

using namespace planc;
using namespace planc::cpu;
using backend::cComment;

std::string cpu::cString(llvm::StringRef s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c >= 0x20 && c < 0x7f && c != '?') {
      out += char(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c); // octal: never runs into a following digit beyond three
      out += buf;
    }
  }
  return out + "\"";
}

namespace {

const char *elementTypeName(ir::DType t) {
  switch (t) {
  case ir::DType::F64: return "F64";
  case ir::DType::F32: return "F32";
  case ir::DType::BF16: return "BF16";
  case ir::DType::F16: return "F16";
  case ir::DType::F8E4M3: return "F8E4M3";
  case ir::DType::F8E5M2: return "F8E5M2";
  case ir::DType::I32: return "I32";
  case ir::DType::I64: return "I64";
  case ir::DType::U8: return "U8";
  case ir::DType::U16: return "U16";
  case ir::DType::U32: return "U32";
  case ir::DType::Bool: return "Bool";
  }
  return "F32";
}

const char *elementTypeName(runtime::ElementType t) {
  using E = runtime::ElementType;
  switch (t) {
  case E::F64: return "F64";
  case E::F32: return "F32";
  case E::BF16: return "BF16";
  case E::F16: return "F16";
  case E::F8E4M3: return "F8E4M3";
  case E::F8E5M2: return "F8E5M2";
  case E::I32: return "I32";
  case E::I64: return "I64";
  case E::U8: return "U8";
  case E::U16: return "U16";
  case E::U32: return "U32";
  case E::Bool: return "Bool";
  }
  return "F32";
}

std::string ints(const Shape &s) {
  std::string t = "{";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "}";
}

std::string dataKind(runtime::DataSpec::Kind k) {
  switch (k) {
  case runtime::DataSpec::Kind::Text: return "Text";
  case runtime::DataSpec::Kind::Tokens: return "Tokens";
  case runtime::DataSpec::Kind::Synthetic: return "Synthetic";
  }
  return "Synthetic";
}

/// "pipeline stage 0 (rank 0)" / "pipeline stage 1 (ranks 2, 3)".
std::string rankClassOf(const exec::RankProgram &p) {
  std::string s = "pipeline stage " + std::to_string(p.stage) + " (" + pluralOf(int64_t(p.ranks.size()), "rank") + " ";
  for (size_t i = 0; i < p.ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(p.ranks[i]);
  return s + ")";
}

std::string argumentOf(const exec::RankProgram &p, int64_t buffer) {
  if (buffer < 0) return "nullptr /* made on another pipeline stage */";
  const exec::Buffer &b = p.buffers[size_t(buffer)];
  return "arena + " + std::to_string(b.offset) + " /* #" + std::to_string(buffer) + " " + cComment(b.name) + " " +
         spelling(b.type().dtype) + ir::toString(b.local()) + " */";
}

/// The section a step belongs to: "forward, micro-batch 0", "update".
std::string sectionOf(const exec::Step &s) {
  std::string w = ir::spelling(s.work);
  if (s.microBatch < 0) return w + ", once per step";
  return w + ", micro-batch " + std::to_string(s.microBatch);
}

uint64_t bytesOf(const exec::Buffer &b) {
  return uint64_t(ir::TensorType(b.local(), b.type().dtype).numel()) * ir::byteSize(b.type().dtype);
}

/// A communication step as the runtime's CommStep constant (runtime/
/// StepComms.h), with the fields the interpreter's plan executor reads
/// (backend/interp/PlanInterpreter.cpp communicate()); "" and `why` when
/// the step cannot be described.
std::string commStepConstant(const exec::RankProgram &p, size_t i, const std::string &name, std::string &why) {
  const exec::Step &s = p.steps[i];
  std::optional<MeshAxis> axis = exec::axisOf(s);
  if (!axis) {
    why = "the step names no mesh axis";
    return "";
  }
  auto intAttr = [&](const char *attr, int64_t otherwise) {
    auto it = s.attrs.find(attr);
    return it != s.attrs.end() && std::holds_alternative<int64_t>(it->second) ? std::get<int64_t>(it->second)
                                                                              : otherwise;
  };
  std::string kind = "Collective", collective = "AllReduce", op = "Sum";
  const exec::Buffer *block = nullptr, *out = nullptr;
  int dim = 0, splitDim = 0, concatDim = 0;
  int64_t gathered = 0, root = 0, peerOffset = 0, tag = 0;
  auto normal = [&](int64_t d) { return int(d < 0 ? d + int64_t(block->local().size()) : d); };
  if (s.kind == ir::OpKind::Send || s.kind == ir::OpKind::Recv) {
    const bool send = s.kind == ir::OpKind::Send;
    const std::vector<int64_t> &list = send ? s.inputs : s.outputs;
    if (list.size() != 1 || list[0] < 0) {
      why = "a message moves one buffer";
      return "";
    }
    kind = send ? "Send" : "Recv";
    block = out = &p.buffers[size_t(list[0])];
    peerOffset = intAttr("peer_offset", 0);
    tag = intAttr("tag", 0);
  } else {
    if (s.inputs.size() != 1 || s.outputs.size() != 1 || s.inputs[0] < 0 || s.outputs[0] < 0) {
      why = "a collective reads one buffer and writes one";
      return "";
    }
    block = &p.buffers[size_t(s.inputs[0])];
    out = &p.buffers[size_t(s.outputs[0])];
    switch (s.kind) {
    case ir::OpKind::AllReduce: {
      auto it = s.attrs.find("reduce");
      if (it != s.attrs.end() && std::holds_alternative<std::string>(it->second) &&
          std::get<std::string>(it->second) == "max")
        op = "Max";
      break;
    }
    case ir::OpKind::ReduceScatter:
      collective = "ReduceScatter";
      dim = normal(intAttr("dim", 0));
      break;
    case ir::OpKind::AllGather:
      collective = "AllGather";
      dim = normal(intAttr("dim", 0));
      gathered = size_t(dim) < out->local().size() ? out->local()[size_t(dim)] : 0;
      break;
    case ir::OpKind::AllToAll:
      collective = "AllToAll";
      splitDim = normal(intAttr("split_dim", 0));
      concatDim = normal(intAttr("concat_dim", 0));
      break;
    case ir::OpKind::Broadcast:
      collective = "Broadcast";
      root = intAttr("root", 0);
      break;
    default:
      why = "no communicator call runs this op";
      return "";
    }
  }
  // "op": the training step is the runtime's to name (runtime/StepComms.h).
  const std::string what = "op " + std::to_string(i) + " (" + ir::spelling(s.kind) +
                           (s.path.empty() ? "" : " in " + s.path) + ")";
  std::string t;
  llvm::raw_string_ostream os(t);
  os << "static const planc::runtime::CommStep " << name << " = {\n"
     << "    planc::runtime::CommStep::Kind::" << kind << ", planc::runtime::CollectiveKind::" << collective
     << ", planc::runtime::ReduceOp::" << op << ",\n"
     << "    planc::runtime::ElementType::" << elementTypeName(block->type().dtype) << ", /*axis " << spelling(*axis)
     << "*/ " << unsigned(*axis) << ", /*shape*/ " << ints(block->local()) << ", /*dim*/ " << dim
     << ", /*gathered rows*/ " << gathered << ", /*split, concat*/ " << splitDim << ", " << concatDim
     << ", /*root*/ " << root << ",\n"
     << "    /*peer offset*/ " << peerOffset << ", /*tag*/ " << tag << ", /*output bytes*/ " << bytesOf(*out)
     << "ull, /*accumulate*/ " << (s.accumulates(0) ? "true" : "false") << ", /*event*/ " << s.event << ", "
     << cString(what) << "};\n";
  os.flush();
  return t;
}

/// Every step of `program` as a call, under a comment per section; a
/// communication step as a call on the runtime's communicator (its CommStep
/// constant into `constants`), and the waits the plan puts before a step.
void renderCalls(const exec::RankProgram &program, const std::vector<backend::StepKernel> &chosen,
                 const std::string &prefix, std::string &constants, llvm::raw_ostream &os) {
  std::string section;
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const exec::Step &s = program.steps[i];
    if (std::string here = sectionOf(s); here != section) {
      section = here;
      os << "\n  // " << section << "\n";
      // A traced step records the section of each kernel and wait after this.
      os << "  if (profile && planc::runtime::tracing()) planc::runtime::setTraceSection(\"" << ir::spelling(s.work)
         << "\", " << s.microBatch << ", " << s.chunk << ");\n";
    }
    for (int64_t e : s.waits) os << "  PLANC_CALL(kCommunication, \"wait\", planc::runtime::commWait(" << e << "));\n";
    if (exec::isCommunicationStep(s.kind)) {
      std::string why;
      const std::string name = prefix + "comm" + std::to_string(i);
      std::string constant = commStepConstant(program, i, name, why);
      if (constant.empty()) {
        os << "  // step " << i << ": " << ir::spelling(s.kind) << ": " << cComment(why) << "\n";
        continue;
      }
      constants += constant;
      const bool send = s.kind == ir::OpKind::Send, recv = s.kind == ir::OpKind::Recv;
      os << "  PLANC_CALL(kCommunication, \"" << ir::spelling(s.kind) << "\", planc::runtime::commStart(" << name << ", "
         << (recv ? std::string("nullptr") : argumentOf(program, s.inputs[0])) << ", "
         << (send ? std::string("nullptr") : argumentOf(program, s.outputs[0])) << ")); // step " << i
         << (s.path.empty() ? "" : ", " + cComment(s.path)) << "\n";
      continue;
    }
    const backend::StepKernel &k = chosen[i];
    if (!k.rendered) {
      os << "  // step " << i << ": " << ir::spelling(s.kind) << ": " << cComment(k.reason) << "\n";
      continue;
    }
    if (k.foldedInto >= 0) {
      os << "  // step " << i << ": " << ir::spelling(s.kind) << ": computed inside step " << k.foldedInto
         << "'s kernel\n";
      continue;
    }
    const std::string call = "  PLANC_CALL(k" + std::string(1, char(std::toupper(backend::spelling(k.kind)[0]))) +
                             (backend::spelling(k.kind) + 1) + ", \"" + k.name + "\", " + k.name + "(";
    const std::string indent(call.size(), ' ');
    os << call;
    bool first = true;
    for (const std::vector<int64_t> *list : {k.callInputs.empty() ? &s.inputs : &k.callInputs, &s.outputs})
      for (int64_t b : *list) {
        os << (first ? "" : ",\n" + indent) << argumentOf(program, b);
        first = false;
      }
    os << ")); // step " << i << (s.path.empty() ? "" : ", " + cComment(s.path)) << "\n";
  }
  if (program.events > 0)
    os << "\n  // everything still in flight\n  PLANC_CALL(kCommunication, \"wait\", planc::runtime::commWaitAll());\n";
}

/// Why a program cannot be built: its steps without a
/// kernel (the first ten), or "".
std::string missingKernels(const exec::RankProgram &program, const std::vector<backend::StepKernel> &chosen) {
  std::string missing;
  size_t count = 0;
  for (size_t i = 0; i < chosen.size(); ++i) {
    const exec::Step &s = program.steps[i];
    if (chosen[i].rendered || exec::isCommunicationStep(s.kind)) continue;
    if (++count <= 10)
      missing += "\n  step " + std::to_string(i) + " (" + ir::spelling(s.kind) + (s.path.empty() ? "" : " in " + s.path) +
                 "): " + chosen[i].reason;
  }
  if (!count) return "";
  return counted(int64_t(count), "step") + ":" + missing + (count > 10 ? "\n  ..." : "");
}

/// The parameters, inputs and outputs of `program` as statements filling
/// `ExecProgram p` in makeModel(); an error where the plan has a buffer the
/// executable cannot feed.
llvm::Error renderProgramModel(const ir::Module &placed, const exec::ExecutionPlan &plan, size_t index,
                               const CpuProgramSettings &settings, bool &hasTokens, bool &hasTargets,
                               llvm::raw_ostream &os) {
  const exec::RankProgram &program = plan.programs[index];
  const MeshLayout mesh(plan.mesh);
  std::map<std::string, const ir::Value *> paramsByName;
  for (const ir::Value *p : placed.params) paramsByName[p->name] = p;
  std::map<std::string, bool> updated; // paths with an update output: their frozen params are optimizer state
  for (const ir::Output &o : placed.outputs)
    if (o.isUpdate()) updated[o.path] = true;

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
      auto it = paramsByName.find(b.value());
      if (it == paramsByName.end())
        return makeError("internal error: parameter buffer '" + b.name + "' has no parameter in module '" +
                         placed.name + "'");
      const ir::Value *p = it->second;
      const std::string initKey = p->path.empty() ? p->name : p->path;
      const bool state = p->frozen && updated.count(initKey);
      const char *init = p->init == ir::InitKind::Zeros  ? "Zeros"
                         : p->init == ir::InitKind::Ones ? "Ones"
                                                         : "Normal";
      // Each rank's place in the global tensor (ir/LocalBlocks.h).
      std::string offsets = "{";
      for (size_t r = 0; r < program.ranks.size(); ++r) {
        std::vector<int64_t> o = ir::blockOffsets(b.type(), mesh, program.ranks[r]);
        offsets += (r ? ", " : "") + ints(Shape(o.begin(), o.end()));
      }
      offsets += "}";
      os << "    p.params.push_back({" << cString(b.path.empty() ? initKey : b.path) << ", " << cString(initKey)
         << ", " << b.offset << "ull, ElementType::" << elementTypeName(b.type().dtype) << ", " << ints(b.local())
         << ", " << ints(b.type().shape) << ", " << cString(toString(b.type().sharding)) << ", ParamInit::" << init
         << ", " << backend::floatLiteral(p->initStd, true) << ", " << (state ? "false" : "true") << ", " << offsets << "});\n";
      paramIndexByPath[b.path.empty() ? initKey : b.path] = paramCount++;
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

llvm::Error cpu::emitCpuProgram(const ir::Module &placed, const exec::ExecutionPlan &plan,
                                const CpuProgramSettings &settings, llvm::raw_ostream &out,
                                const exec::ExecutionPlan *inference) {
  if (plan.programs.empty()) return makeError("plan '" + plan.name + "' has no program to build");
  const MeshLayout mesh(plan.mesh);
  const bool oneRank = mesh.numRanks() == 1;
  const bool stages = plan.programs.size() > 1;

  // The kernels of every program: the first with the prelude, the others
  // named apart ("p1_s12_gelu"). Every step must have its kernel, or a call
  // on the communicator.
  std::string kernelsText;
  llvm::raw_string_ostream kernels(kernelsText);
  std::vector<std::vector<backend::StepKernel>> chosen;
  for (size_t p = 0; p < plan.programs.size(); ++p) {
    const exec::RankProgram &program = plan.programs[p];
    backend::RenderOptions render;
    render.prefix = p ? "p" + std::to_string(p) + "_" : "";
    render.prelude = p == 0;
    render.foldProducers = settings.foldProducers;
    chosen.push_back(backend::renderProgramKernels(plan, program, backend::cpuLanguage(), kernels, render));
    if (std::string why = missingKernels(program, chosen.back()); !why.empty())
      return makeError("the CPU backend has no kernel for " + why + " of plan '" + plan.name + "'" +
                       (stages ? " (" + rankClassOf(program) + ")" : ""));
  }
  kernels.flush();
  // The inference step's kernels, named apart ("is12_gelu"), after the
  // training step's prelude.
  std::vector<backend::StepKernel> inferChosen;
  if (inference) {
    if (inference->programs.size() != 1)
      return makeError("internal error: an inference plan of several programs");
    llvm::raw_string_ostream more(kernelsText);
    backend::RenderOptions render;
    render.prefix = "i";
    render.prelude = false;
    inferChosen = backend::renderProgramKernels(*inference, inference->programs.front(), backend::cpuLanguage(), more,
                                                render);
    more.flush();
    if (std::string why = missingKernels(inference->programs.front(), inferChosen); !why.empty())
      return makeError("the CPU backend has no kernel for " + why + " of the inference step of plan '" + plan.name +
                       "'");
  }

  std::string text;
  llvm::raw_string_ostream os(text);
  // The banner.
  os << "// " << cComment(plan.name) << ": the training step of "
     << (stages ? "every rank class" : "its rank class") << ", generated by planc from " << cComment(settings.source)
     << ".\n// Mesh:";
  for (unsigned a = 0; a < kNumMeshAxes; ++a)
    if (plan.mesh[size_t(a)] > 1) os << " " << spelling(MeshAxis(a)) << "=" << plan.mesh[size_t(a)];
  if (oneRank) os << " one device";
  else os << " (" << counted(mesh.numRanks(), "rank") << ", one process each under MPI)";
  os << ".\n";
  for (const exec::RankProgram &program : plan.programs) {
    os << "// Rank class: " << rankClassOf(program);
    if (!oneRank && !program.ranks.empty()) {
      os << "; coordinates of its first rank:";
      MeshCoords c = mesh.coordinates(program.ranks.front());
      for (unsigned a = 0; a < kNumMeshAxes; ++a)
        if (plan.mesh[size_t(a)] > 1) os << " " << spelling(MeshAxis(a)) << "=" << c[size_t(a)];
    }
    os << ".\n//   Arena: " << counted(int64_t(program.arenaSize), "byte") << ", every buffer at a fixed offset in it; "
       << counted(int64_t(program.steps.size()), "step") << ", " << counted(int64_t(program.buffers.size()), "buffer")
       << ".\n";
  }
  os << "// Build: c++ -std=c++17 -O3 -fopenmp with the planc runtime, OpenBLAS and MPI (planc build does it).\n\n";
  os << kernelsText;
  os << "#include \"runtime/Executable.h\"\n#include \"runtime/StepComms.h\"\n#include \"runtime/StepTrace.h\"\n\n#include <chrono>\n#ifdef "
        "_OPENMP\n#include <omp.h>\n#endif\n\n";

  // The steps.
  os << "namespace {\n\n";
  os << "// Each call timed into its kernel class when profiling (--profile), and recorded when\n"
     << "// tracing (--trace; communication records itself, runtime/StepTrace.h).\n"
     << "// One call site per kernel (the profiling is a runtime call), so the compiler does not\n"
     << "// inline every kernel twice.\n"
     << "#define PLANC_CALL(kernel_class, name, call)                                  \\\n"
     << "  do {                                                                     \\\n"
     << "    std::chrono::steady_clock::time_point planc_start;                     \\\n"
     << "    if (profile) planc_start = std::chrono::steady_clock::now();           \\\n"
     << "    call;                                                                  \\\n"
     << "    if (profile) planc::runtime::profileKernel(profile, kernel_class, name, planc_start); \\\n"
     << "  } while (0)\n\n";
  os << "// The kernel classes of --profile (runtime/Executable.h kKernelClasses).\n"
     << "enum { kCommunication, kElementwise, kGemm, kLayout, kReduction, kLibrary };\n\n";
  for (size_t p = 0; p < plan.programs.size(); ++p) {
    std::string constants, calls;
    llvm::raw_string_ostream callStream(calls);
    renderCalls(plan.programs[p], chosen[p], p ? "p" + std::to_string(p) + "_" : "", constants, callStream);
    callStream.flush();
    if (!constants.empty())
      os << "// The communication steps of " << rankClassOf(plan.programs[p])
         << " (runtime/StepComms.h): the group and peer follow from the rank.\n"
         << constants << "\n";
    os << "// The training step of " << rankClassOf(plan.programs[p]) << ".\n";
    os << "void planc_step_" << p << "(uint8_t *arena, uint64_t draw_seed, planc::runtime::StepProfile *profile) {\n";
    os << "  planc_draw_seed = draw_seed;\n" << calls << "}\n\n";
  }
  if (inference) {
    std::string constants;
    os << "// The inference step (--sample): the forward program up to the logits, in its own arena.\n";
    os << "void planc_infer(uint8_t *arena) {\n";
    os << "  planc_draw_seed = 0;\n  planc::runtime::StepProfile *profile = nullptr;\n";
    renderCalls(inference->programs.front(), inferChosen, "i", constants, os);
    os << "}\n\n";
  }
  os << "void planc_set_threads(int threads) {\n#ifdef _OPENMP\n  omp_set_num_threads(threads);\n#endif\n"
     << "  openblas_set_num_threads(threads);\n}\n\n";
  // The prelude declares the coordinates (backend/c/RankPlace.h).
  os << "// The rank's place, for the kernels that depend on it.\n"
       << "void planc_set_coordinates(const int64_t *coordinates) {\n"
       << "  for (int a = 0; a < 5; ++a) planc_mesh_coord[a] = coordinates[a];\n}\n\n";

  // The model.
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
    if (llvm::Error e = renderProgramModel(placed, plan, p, settings, hasTokens, hasTargets, os)) return e;
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
  os.flush();

  // The build id: a hash of everything above (the same plan and compiler
  // give the same executable and the same id).
  llvm::SHA1 sha;
  sha.update(text);
  std::string id;
  for (unsigned char c : sha.final().take_front(8)) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", c);
    id += hex;
  }
  out << text << "\n// The build's identity, a hash of the source above: checkpoints record it, and the ranks\n"
      << "// of a mesh compare it before the first step.\n"
      << "int main(int argc, char **argv) {\n"
      << "  planc::runtime::ExecutableModel m = makeModel();\n"
      << "  m.buildId = \"" << id << "\";\n"
      << "  return planc::runtime::runExecutable(m, argc, argv);\n}\n";
  return llvm::Error::success();
}
