//===- backend/host/StepSequence.cpp - a program's steps as calls ---------===//

#include "backend/host/StepSequence.h"
#include "backend/host/HostText.h"

#include "exec/CommCall.h"
#include "exec/Groups.h"
#include "support/Plural.h"

#include <cctype>
#include <optional>

using namespace planc;
using namespace planc::host;
using backend::cComment;

namespace {

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

/// A communication step as the runtime's CommStep constant (runtime/
/// StepComms.h), from the call exec/CommCall.h describes; "" and `why` when
/// the step cannot be described.
std::string commStepConstant(const exec::RankProgram &p, size_t i, const std::string &name, std::string &why) {
  const exec::Step &s = p.steps[i];
  std::optional<exec::CommCall> call = exec::commCallOf(p, i, why);
  if (!call) return "";
  const exec::Buffer &block = p.buffers[size_t(call->block)];
  // "op": the training step is the runtime's to name (runtime/StepComms.h).
  const std::string what = "op " + std::to_string(i) + " (" + ir::spelling(s.kind) +
                           (s.path.empty() ? "" : " in " + s.path) + ")";
  std::string t;
  llvm::raw_string_ostream os(t);
  os << "static const planc::runtime::CommStep " << name << " = {\n"
     << "    planc::runtime::CommStep::Kind::" << exec::spelling(call->kind)
     << ", planc::runtime::CollectiveKind::" << exec::spelling(call->collective)
     << ", planc::runtime::ReduceOp::" << exec::spelling(call->reduce) << ",\n"
     << "    planc::runtime::ElementType::" << elementTypeName(block.type().dtype) << ", /*axis "
     << spelling(call->axis) << "*/ " << unsigned(call->axis) << ", /*shape*/ " << ints(block.local())
     << ", /*dim*/ " << call->dim << ", /*gathered rows*/ " << call->gatheredRows << ", /*split, concat*/ "
     << call->splitDim << ", " << call->concatDim << ", /*root*/ " << call->root << ",\n"
     << "    /*peer offset*/ " << call->peerOffset << ", /*tag*/ " << call->tag << ", /*output bytes*/ "
     << call->outputBytes << "ull, /*accumulate*/ " << (call->accumulates ? "true" : "false") << ", /*event*/ "
     << s.event << ", " << cString(what) << "};\n";
  os.flush();
  return t;
}

} // namespace

void host::renderStepCalls(const exec::RankProgram &program, const std::vector<backend::StepKernel> &chosen,
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

std::string host::missingKernels(const exec::RankProgram &program, const std::vector<backend::StepKernel> &chosen) {
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

