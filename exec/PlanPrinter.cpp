//===- exec/PlanPrinter.cpp - the execution plan as text -----------------===//
//
// Every choice here (which clauses are left out when they hold their
// default, how a missing buffer or the ends of a live range are spelt) is
// mirrored by exec/PlanParser.cpp, so parse(print(p)) == p.
//
//===----------------------------------------------------------------------===//

#include "exec/PlanPrinter.h"
#include "exec/Groups.h"
#include "exec/PlanWords.h"
#include "ir/Printer.h"
#include "support/Parallel.h"

#include <unordered_map>

using namespace planc;
using namespace planc::exec;

namespace {

/// `#3`, or `none` for -1 (a stage_merge operand made on another stage).
std::string bufferRef(int64_t i) { return i == -1 ? "none" : "#" + std::to_string(i); }

/// The value a buffer holds when the text leaves it out: its name without
/// the slot's ".mb<j>" suffix.
std::string impliedValue(const Buffer &b) {
  std::string suffix = ".mb" + std::to_string(b.slot);
  if (b.slot >= 0 && llvm::StringRef(b.name).endswith(suffix)) return b.name.substr(0, b.name.size() - suffix.size());
  return b.name;
}

template <typename T> void printList(const std::vector<T> &items, llvm::raw_ostream &os) {
  os << "[";
  for (size_t i = 0; i < items.size(); ++i) os << (i ? ", " : "") << items[i];
  os << "]";
}

void printHeader(const ExecutionPlan &plan, llvm::raw_ostream &os) {
  os << "plan " << ir::nameRef('@', plan.name) << " mesh [";
  bool first = true;
  for (unsigned a = 0; a < kNumMeshAxes; ++a) {
    if (plan.mesh[a] == 1) continue;
    os << (first ? "" : ", ") << spelling(MeshAxis(a)) << "=" << plan.mesh[a];
    first = false;
  }
  const ScheduleOptions &s = plan.schedule;
  os << "] schedule " << spelling(s.style) << " stages " << s.stages << " micro_batches " << s.microBatches
     << " chunks " << s.virtualStages << " alignment " << plan.alignment << "\n";
}

void printLiveEnd(int64_t step, llvm::raw_ostream &os) {
  if (step == kBeforeSteps) os << "before";
  else if (step == kAfterSteps) os << "after";
  else os << step;
}

void printSlot(int64_t j, llvm::raw_ostream &os) {
  if (j == -1) os << "once";
  else os << "mb" << j;
}

/// Whether `b` holds the value its name implies (impliedValue), without
/// making a string: the common case of millions of buffers.
bool holdsImpliedValue(const Buffer &b) {
  llvm::StringRef name = b.name, value = b.value();
  if (b.slot < 0) return value == name;
  if (!name.startswith(value)) return value == name;
  // The rest of the name is ".mb<slot>" exactly.
  llvm::StringRef rest = name.drop_front(value.size());
  unsigned slot = 0;
  if (rest.consume_front(".mb") && !rest.empty() && (rest == "0" || rest.front() != '0') &&
      !rest.getAsInteger(10, slot) && int64_t(slot) == b.slot)
    return true;
  return value == impliedValue(b);
}

/// The text of the type and local block of values shared by many buffers
/// (a value's in every micro-batch slot), made once.
class ValueTexts {
public:
  void print(const Buffer &b, llvm::raw_ostream &os) {
    const BufferValue *shared = b.sharedValue().get();
    if (!shared || b.sharedValue().use_count() == 1) return printTypeAndLocal(b, os);
    auto [it, made] = texts.try_emplace(shared);
    if (made) {
      llvm::raw_string_ostream text(it->second);
      printTypeAndLocal(b, text);
    }
    os << it->second;
  }

private:
  static void printTypeAndLocal(const Buffer &b, llvm::raw_ostream &os) {
    ir::printType(b.type(), os);
    os << " local ";
    ir::printShape(b.local(), os);
  }
  std::unordered_map<const BufferValue *, std::string> texts;
};

void printBuffer(size_t i, const Buffer &b, ValueTexts &valueTexts, llvm::raw_ostream &os) {
  os << "  #" << i << " ";
  ir::printNameRef('%', b.name, os);
  os << " : ";
  valueTexts.print(b, os);
  os << " ";
  printSlot(b.slot, os);
  os << " at " << b.offset << " size " << b.size << " " << categoryWord(b.category) << " " << spelling(b.role);
  if (!holdsImpliedValue(b)) {
    os << " value ";
    ir::printNameRef('%', b.value(), os);
  }
  if (!b.path.empty()) {
    os << " path ";
    ir::printQuoted(b.path, os);
  }
  if (b.aliasOf != -1) os << " alias " << bufferRef(b.aliasOf);
  os << " live [";
  printLiveEnd(b.firstStep, os);
  os << ", ";
  printLiveEnd(b.lastStep, os);
  os << "]\n";
}

void printRefs(const std::vector<int64_t> &refs, llvm::raw_ostream &os) {
  os << "(";
  for (size_t i = 0; i < refs.size(); ++i) {
    if (i) os << ", ";
    if (refs[i] == -1) os << "none";
    else os << '#' << refs[i];
  }
  os << ")";
}

/// The text of what the steps of one op in every micro-batch have alike
/// (their shared attributes, their place in the .plan), made once.
class AttrTexts {
public:
  void print(const StepAttrs &attrs, llvm::raw_ostream &os) {
    if (!attrs.isShared()) return ir::printAttrs(attrs, os);
    auto [it, made] = texts.try_emplace(attrs.identity());
    if (made) {
      llvm::raw_string_ostream text(it->second);
      ir::printAttrs(attrs, text);
    }
    os << it->second;
  }

  /// ` loc(...) path "..."`: the same for the steps of one op, which share
  /// their attributes, so made once for them.
  void printPlace(const Step &s, llvm::raw_ostream &os) {
    if (!s.attrs.isShared()) return printPlaceOf(s, os);
    auto [it, made] = places.try_emplace(s.attrs.identity());
    Place &place = it->second;
    if (!made && !(place.loc == s.loc && place.path == s.path)) return printPlaceOf(s, os);
    if (made) {
      place.loc = s.loc;
      place.path = s.path;
      llvm::raw_string_ostream text(place.text);
      printPlaceOf(s, text);
    }
    os << place.text;
  }

private:
  static void printPlaceOf(const Step &s, llvm::raw_ostream &os) {
    if (s.loc.isKnown()) {
      os << " loc(";
      ir::printQuoted(s.loc.file, os);
      os << ":" << s.loc.line << ":" << s.loc.column << ")";
    }
    if (!s.path.empty()) {
      os << " path ";
      ir::printQuoted(s.path, os);
    }
  }
  struct Place {
    ir::Location loc;
    std::string path, text;
  };
  std::unordered_map<const void *, std::string> texts;
  std::unordered_map<const void *, Place> places;
};

/// `rank` >= 0: the rank form, with the step's group and peer.
void printStep(const ExecutionPlan &plan, size_t i, const Step &s, int64_t rank, AttrTexts &attrTexts,
               llvm::raw_ostream &os) {
  os << "  " << i << ": " << ir::spelling(s.work) << " ";
  printSlot(s.microBatch, os);
  os << " c" << s.chunk << " "
     << spelling(s.stream) << " " << (s.kind < ir::OpKind::NumOps ? ir::spelling(s.kind) : "<no op>") << " ";
  printRefs(s.inputs, os);
  os << " -> ";
  printRefs(s.outputs, os);
  if (!s.attrs.empty()) {
    os << " ";
    attrTexts.print(s.attrs, os);
  }
  bool accumulates = false;
  for (size_t k = 0; k < s.outputs.size(); ++k) accumulates |= s.accumulates(k);
  if (accumulates) {
    // The outputs that accumulate, by position: "accumulate [0, 2]".
    os << " accumulate [";
    bool first = true;
    for (size_t k = 0; k < s.outputs.size(); ++k)
      if (s.accumulates(k)) os << (first ? "" : ", ") << k, first = false;
    os << "]";
  }
  if (s.event != -1) os << " event e" << s.event;
  if (!s.waits.empty()) {
    os << " waits [";
    for (size_t w = 0; w < s.waits.size(); ++w) os << (w ? ", " : "") << "e" << s.waits[w];
    os << "]";
  }
  if (rank >= 0 && s.kind < ir::OpKind::NumOps && isCommunicationStep(s.kind)) {
    os << " group ";
    printList(groupOf(plan, s, rank), os);
    if (s.kind == ir::OpKind::Send || s.kind == ir::OpKind::Recv) os << " peer " << peerOf(plan, s, rank);
  }
  attrTexts.printPlace(s, os);
  os << "\n";
}

void printOutput(const OutputBinding &o, llvm::raw_ostream &os) {
  os << "  output " << ir::quote(o.name) << " " << outputRoleWord(o.role);
  if (!o.path.empty()) os << " path " << ir::quote(o.path);
  if (!o.owner.empty()) os << " owner " << ir::quote(o.owner);
  os << " " << bufferRef(o.buffer) << "\n";
}

void printProgram(const ExecutionPlan &plan, const RankProgram &p, int64_t rank, llvm::raw_ostream &os) {
  os << "program stage " << p.stage << " ranks ";
  printList(p.ranks, os);
  if (rank >= 0) os << " rank " << rank;
  os << " arena " << p.arenaSize << " events " << p.events << " {\n";
  ValueTexts valueTexts;
  for (size_t i = 0; i < p.buffers.size(); ++i) printBuffer(i, p.buffers[i], valueTexts, os);
  AttrTexts attrTexts;
  for (size_t i = 0; i < p.steps.size(); ++i) printStep(plan, i, p.steps[i], rank, attrTexts, os);
  for (const OutputBinding &o : p.outputs) printOutput(o, os);
  os << "}\n";
}

} // namespace

void exec::printPlan(const ExecutionPlan &plan, llvm::raw_ostream &os) {
  printHeader(plan, os);
  // Each program is rendered on its own core, then written in order: a large
  // plan's text is hundreds of megabytes.
  std::vector<std::string> texts(plan.programs.size());
  parallelFor(texts.size(), [&](size_t i) {
    llvm::raw_string_ostream text(texts[i]);
    text.SetBuffered(); // a string stream is unbuffered: a call per piece otherwise
    printProgram(plan, plan.programs[i], /*rank=*/-1, text);
    text.flush();
  });
  for (std::string &text : texts) {
    os << text;
    std::string().swap(text);
  }
}

std::string exec::toText(const ExecutionPlan &plan) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printPlan(plan, os);
  return os.str();
}

void exec::printRankProgram(const ExecutionPlan &plan, int64_t rank, llvm::raw_ostream &os) {
  printHeader(plan, os);
  int64_t index = programIndexOf(plan, rank);
  if (index < 0) {
    os << "// rank " << rank << " runs no program of this plan\n";
    return;
  }
  printProgram(plan, plan.programs[size_t(index)], rank, os);
}

std::string exec::rankProgramText(const ExecutionPlan &plan, int64_t rank) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printRankProgram(plan, rank, os);
  return os.str();
}
