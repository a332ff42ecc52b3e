//===- exec/PlanVerifier.cpp - is an execution plan sound? ---------------===//
//
// Rules (a) to (d) of exec/PlanVerifier.h, one function per rule, each
// tolerant of what an earlier rule reported (an index out of range is
// reported once and skipped after), and (e) by exec/PlanDeadlock.cpp.
//
//===----------------------------------------------------------------------===//

#include "exec/PlanVerifier.h"
#include "exec/Groups.h"
#include "exec/PlanDeadlock.h"
#include "ir/MeshLayout.h"
#include "support/Parallel.h"
#include "support/Plural.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <limits>
#include <set>
#include <unordered_map>

using namespace planc;
using namespace planc::exec;

uint64_t exec::blockBytes(const Buffer &b) {
  uint64_t n = ir::byteSize(b.type().dtype);
  for (int64_t d : b.local()) {
    if (d <= 0) return 0;
    if (__builtin_mul_overflow(n, uint64_t(d), &n)) return std::numeric_limits<uint64_t>::max();
  }
  return n;
}

std::string exec::describeBuffer(const RankProgram &p, int64_t index) {
  std::string s = "#" + std::to_string(index);
  if (index >= 0 && index < int64_t(p.buffers.size())) s += " %" + p.buffers[size_t(index)].name;
  return s;
}

std::string exec::describeStep(const RankProgram &p, size_t index) {
  const Step &s = p.steps[index];
  return "step " + std::to_string(index) + " (" + (s.kind < ir::OpKind::NumOps ? ir::spelling(s.kind) : "no op") + ")";
}

namespace {

/// The messages of one program, each starting with its stage.
class Report {
public:
  Report(const RankProgram &p, std::vector<std::string> &out) : p(p), out(out) {}
  void buffer(int64_t i, const llvm::Twine &what) {
    out.push_back(("stage " + llvm::Twine(p.stage) + ": buffer " + describeBuffer(p, i) + ": " + what).str());
  }
  void step(size_t i, const llvm::Twine &what) {
    out.push_back(("stage " + llvm::Twine(p.stage) + ": " + describeStep(p, i) + ": " + what).str());
  }
  void program(const llvm::Twine &what) { out.push_back(("stage " + llvm::Twine(p.stage) + ": " + what).str()); }
  std::string buf(int64_t i) const { return describeBuffer(p, i); }

  const RankProgram &p;
  std::vector<std::string> &out;
};

bool inRange(int64_t i, size_t n) { return i >= 0 && i < int64_t(n); }

std::string liveText(int64_t step) {
  if (step == kBeforeSteps) return "before";
  if (step == kAfterSteps) return "after";
  return std::to_string(step);
}

/// Whether a buffer's live range is well formed (rule a), so the later
/// rules can use it. [before, before] is what is there when the step starts
/// and no step reads.
bool validLive(const Buffer &b, size_t steps) {
  bool first = b.firstStep == kBeforeSteps || inRange(b.firstStep, steps);
  bool last = b.lastStep == kAfterSteps || b.lastStep == kBeforeSteps || inRange(b.lastStep, steps);
  return first && last && b.firstStep <= b.lastStep;
}

/// Whether each buffer's aliasOf chain ends (at -1 or an index that is no
/// buffer) rather than running into a cycle: one walk over all chains, O(n).
std::vector<bool> chainsThatEnd(const RankProgram &p) {
  enum : char { New, OnPath, Ends, Cycles };
  std::vector<char> state(p.buffers.size(), New);
  std::vector<int64_t> path;
  for (size_t start = 0; start < p.buffers.size(); ++start) {
    path.clear();
    int64_t j = int64_t(start);
    while (inRange(j, p.buffers.size()) && state[size_t(j)] == New) {
      state[size_t(j)] = OnPath;
      path.push_back(j);
      j = p.buffers[size_t(j)].aliasOf;
    }
    char result = !inRange(j, p.buffers.size()) ? char(Ends) : state[size_t(j)] == OnPath ? char(Cycles) : state[size_t(j)];
    for (int64_t k : path) state[size_t(k)] = result;
  }
  std::vector<bool> ends(p.buffers.size());
  for (size_t i = 0; i < state.size(); ++i) ends[i] = state[i] == Ends;
  return ends;
}

/// The aliasOf chain from `i` (one that ends) reaches `j`.
bool aliases(const RankProgram &p, const std::vector<bool> &ends, int64_t i, int64_t j) {
  if (!inRange(i, p.buffers.size()) || !ends[size_t(i)]) return false;
  while (inRange(i, p.buffers.size())) {
    i = p.buffers[size_t(i)].aliasOf;
    if (i == j) return true;
  }
  return false;
}

// ---- (a) every buffer alone
void checkBuffers(const ExecutionPlan &plan, const RankProgram &p, const std::vector<bool> &ends, Report &r) {
  uint64_t align = plan.alignment;
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const Buffer &b = p.buffers[i];
    if (align && b.offset % align) r.buffer(i, "offset " + llvm::Twine(b.offset) + " is not a multiple of the alignment " + llvm::Twine(align));
    if (align && b.size % align) r.buffer(i, "size " + llvm::Twine(b.size) + " is not a multiple of the alignment " + llvm::Twine(align));
    if (b.size > p.arenaSize || b.offset > p.arenaSize - b.size)
      r.buffer(i, "bytes [" + llvm::Twine(b.offset) + ", " + llvm::Twine(b.offset + b.size) + ") end past the arena of " +
                      counted(int64_t(p.arenaSize), "byte"));
    uint64_t need = blockBytes(b);
    if (b.size < need)
      r.buffer(i, "size " + llvm::Twine(b.size) + " is smaller than its local block's " + counted(int64_t(need), "byte"));
    if (b.aliasOf != -1) {
      if (!inRange(b.aliasOf, p.buffers.size()) || b.aliasOf == int64_t(i))
        r.buffer(i, "aliases " + r.buf(b.aliasOf) + ", which is not another buffer of the program");
      else if (p.buffers[size_t(b.aliasOf)].offset != b.offset)
        r.buffer(i, "aliases " + r.buf(b.aliasOf) + " at offset " + llvm::Twine(p.buffers[size_t(b.aliasOf)].offset) +
                        " but sits at offset " + llvm::Twine(b.offset));
      else if (!ends[i])
        r.buffer(i, "its aliasOf chain runs into a cycle");
    }
    if (!validLive(b, p.steps.size()))
      r.buffer(i, "live range [" + liveText(b.firstStep) + ", " + liveText(b.lastStep) + "] is not in order within the " +
                      counted(int64_t(p.steps.size()), "step"));
  }
}

// ---- (b) no two live buffers share a byte
//
// A sweep over the steps (kBeforeSteps as -1, kAfterSteps as the step
// count): at each step the buffers whose lives start there are checked
// against the live ones, kept ordered by offset, then those whose lives end
// there leave. A buffer that overlaps a live one it does not alias is
// reported and kept out of the set, so buffers in the set at different
// offsets never overlap and the neighbours of a new buffer are the only
// ones to check: the entries at the nearest lower offset and those
// starting inside it.
void checkOverlaps(const RankProgram &p, const std::vector<bool> &ends, Report &r) {
  int64_t n = int64_t(p.steps.size());
  auto lo = [&](const Buffer &b) { return b.firstStep == kBeforeSteps ? -1 : b.firstStep; };
  auto hi = [&](const Buffer &b) { return b.lastStep == kAfterSteps ? n : b.lastStep; };
  std::vector<int64_t> order;
  // Buffers rule (a) rejects (outside the arena, live range out of order) stay out.
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const Buffer &b = p.buffers[i];
    if (b.size > 0 && b.size <= p.arenaSize && b.offset <= p.arenaSize - b.size && validLive(b, p.steps.size()))
      order.push_back(int64_t(i));
  }
  // Ordered by the step a life starts (ends) at, a counting sort: the keys
  // are steps -1 ..= n, and a large plan has hundreds of thousands of buffers.
  auto byStep = [&](auto key) {
    std::vector<size_t> start(size_t(n) + 3, 0);
    for (int64_t i : order) ++start[size_t(key(p.buffers[size_t(i)]) + 2)];
    for (size_t k = 1; k < start.size(); ++k) start[k] += start[k - 1];
    std::vector<int64_t> sorted(order.size());
    for (int64_t i : order) sorted[start[size_t(key(p.buffers[size_t(i)]) + 1)]++] = i;
    return sorted;
  };
  std::vector<int64_t> byEnd = byStep(hi);
  order = byStep(lo);

  using Key = std::pair<uint64_t, int64_t>; // (offset, buffer)
  std::set<Key> live;
  std::vector<bool> inSet(p.buffers.size(), false);
  const size_t kMaxReports = 100;
  size_t reported = 0, unreported = 0;
  auto clash = [&](int64_t a, int64_t b) {
    const Buffer &x = p.buffers[a], &y = p.buffers[b];
    if (x.offset + x.size <= y.offset || y.offset + y.size <= x.offset) return false;
    if (aliases(p, ends, a, b) || aliases(p, ends, b, a)) return x.offset != y.offset; // an alias elsewhere: rule (a)
    if (reported == kMaxReports) {
      ++unreported;
      return true;
    }
    ++reported;
    uint64_t from = std::max(x.offset, y.offset), to = std::min(x.offset + x.size, y.offset + y.size);
    r.buffer(b, "shares bytes [" + llvm::Twine(from) + ", " + llvm::Twine(to) + ") with " + r.buf(a) +
                    " while both are live (steps " + liveText(std::max(x.firstStep, y.firstStep)) + " to " +
                    liveText(std::min(x.lastStep, y.lastStep)) + ")");
    return true;
  };
  size_t next = 0, leaving = 0;
  for (int64_t t = -1; t <= n; ++t) {
    for (; next < order.size() && lo(p.buffers[order[next]]) == t; ++next) {
      int64_t i = order[next];
      const Buffer &b = p.buffers[i];
      bool bad = false;
      auto at = live.lower_bound({b.offset, -1});
      // The entries at the nearest lower offset (an alias group shares one).
      if (at != live.begin()) {
        uint64_t below = std::prev(at)->first;
        for (auto it = live.lower_bound({below, -1}); it != at; ++it) bad |= clash(it->second, i);
      }
      for (auto it = at; it != live.end() && it->first < b.offset + b.size; ++it) bad |= clash(it->second, i);
      if (!bad) {
        live.insert({b.offset, i});
        inSet[i] = true;
      }
    }
    for (; leaving < byEnd.size() && hi(p.buffers[byEnd[leaving]]) == t; ++leaving)
      if (inSet[byEnd[leaving]]) live.erase({p.buffers[byEnd[leaving]].offset, byEnd[leaving]});
  }
  if (unreported) r.program("and " + llvm::Twine(unreported) + " more pairs of live buffers that share bytes");
}

// ---- (c) reads after writes, writes first or in place
void checkDataflow(const RankProgram &p, Report &r) {
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step &s = p.steps[i];
    int64_t at = int64_t(i);
    for (int64_t in : s.inputs) {
      if (in == -1) {
        if (s.kind != ir::OpKind::StageMerge) r.step(i, "reads no buffer ('none' is for stage_merge operands only)");
        continue;
      }
      if (!inRange(in, p.buffers.size())) {
        r.step(i, "reads " + r.buf(in) + ", which is not a buffer of the program");
        continue;
      }
      const Buffer &b = p.buffers[size_t(in)];
      if (b.firstStep != kBeforeSteps && b.firstStep >= at)
        r.step(i, "reads " + r.buf(in) + " before it is written (at step " + liveText(b.firstStep) + ")");
      if (b.lastStep < at) r.step(i, "reads " + r.buf(in) + " after its life ended (at step " + liveText(b.lastStep) + ")");
    }
    if (s.accumulate.size() > s.outputs.size())
      r.step(i, "has " + counted(int64_t(s.accumulate.size()), "accumulate flag") + " for " +
                    counted(int64_t(s.outputs.size()), "output"));
    for (size_t k = 0; k < s.outputs.size(); ++k) {
      int64_t out = s.outputs[k];
      if (!inRange(out, p.buffers.size())) {
        r.step(i, "writes " + r.buf(out) + ", which is not a buffer of the program");
        continue;
      }
      const Buffer &b = p.buffers[size_t(out)];
      bool inPlace = std::find(s.inputs.begin(), s.inputs.end(), out) != s.inputs.end();
      if (b.firstStep != at && !s.accumulates(k) && !inPlace)
        r.step(i, "writes " + r.buf(out) + ", whose life starts at step " + liveText(b.firstStep) +
                      ", neither first nor accumulating nor in place");
      else if ((b.firstStep != kBeforeSteps && b.firstStep > at) || b.lastStep < at)
        r.step(i, "writes " + r.buf(out) + " outside its life [" + liveText(b.firstStep) + ", " + liveText(b.lastStep) + "]");
    }
  }
}

// ---- (d) events and waits
void checkEvents(const RankProgram &p, Report &r) {
  if (p.events < 0) r.program("has " + llvm::Twine(p.events) + " events");
  size_t events = size_t(std::max<int64_t>(p.events, 0));
  // By event: a table where the count is that of a built plan (one per
  // communication step), a map for a parsed plan that declares far more.
  struct ByEvent {
    explicit ByEvent(size_t events, size_t steps) {
      if (events <= steps + 4096) dense.assign(events, -1);
    }
    int64_t at(int64_t e) const {
      if (!dense.empty() || sparse.empty()) return size_t(e) < dense.size() ? dense[size_t(e)] : int64_t(-1);
      auto it = sparse.find(e);
      return it == sparse.end() ? int64_t(-1) : it->second;
    }
    void set(int64_t e, int64_t step) {
      if (size_t(e) < dense.size()) dense[size_t(e)] = step;
      else sparse[e] = step;
    }
    std::vector<int64_t> dense;
    std::unordered_map<int64_t, int64_t> sparse;
  };
  ByEvent recordedAt(events, p.steps.size()); // the step recording each event
  ByEvent waitedAt(events, p.steps.size());   // the latest step waiting for it
  auto at = [](const ByEvent &m, int64_t e) { return m.at(e); };
  std::vector<int64_t> commWriter(p.buffers.size(), -1); // the communication step that wrote a buffer last
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step &s = p.steps[i];
    bool talks = s.kind < ir::OpKind::NumOps && isCommunicationStep(s.kind);
    if (talks != (s.stream == Stream::Communication))
      r.step(i, llvm::Twine("runs on the ") + spelling(s.stream) + " stream but " +
                    (talks ? "communicates" : "does not communicate"));
    for (int64_t e : s.waits) {
      if (!inRange(e, events) || at(recordedAt, e) < 0 || at(recordedAt, e) >= int64_t(i))
        r.step(i, "waits for e" + llvm::Twine(e) + ", which no earlier step records");
      else waitedAt.set(e, int64_t(i));
    }
    for (int64_t in : s.inputs) {
      if (!inRange(in, p.buffers.size()) || commWriter[size_t(in)] < 0) continue;
      const Step &writer = p.steps[size_t(commWriter[size_t(in)])];
      if (!inRange(writer.event, events)) continue; // reported at the writer
      if (at(waitedAt, writer.event) <= commWriter[size_t(in)])
        r.step(i, "reads " + r.buf(in) + ", the output of " + describeStep(p, size_t(commWriter[size_t(in)])) +
                      ", without waiting for its event e" + llvm::Twine(writer.event));
    }
    if (s.stream == Stream::Communication) {
      if (!inRange(s.event, events)) {
        r.step(i, "records " + (s.event == -1 ? std::string("no event") : "event e" + std::to_string(s.event)) +
                      ", not one of the program's " + std::to_string(p.events));
      } else if (at(recordedAt, s.event) >= 0) {
        r.step(i, "records e" + llvm::Twine(s.event) + ", which " + describeStep(p, size_t(at(recordedAt, s.event))) +
                      " records already");
      } else {
        recordedAt.set(s.event, int64_t(i));
      }
    } else if (s.event != -1) {
      r.step(i, "records event e" + llvm::Twine(s.event) + " on the compute stream");
    }
    for (int64_t out : s.outputs)
      if (inRange(out, p.buffers.size())) commWriter[size_t(out)] = s.stream == Stream::Communication ? int64_t(i) : -1;
  }
}

// ---- the plan as a whole: mesh, alignment, one program per stage
bool checkShape(const ExecutionPlan &plan, std::vector<std::string> &out) {
  size_t before = out.size();
  if (!hasValidMesh(plan)) out.push_back("the mesh has an axis of less than one rank or too many ranks");
  if (plan.alignment == 0) out.push_back("the alignment is 0 bytes");
  if (out.size() != before) return false;
  MeshLayout layout(plan.mesh);
  int64_t pp = layout.size(MeshAxis::PP);
  std::vector<bool> seen(size_t(pp), false);
  for (const RankProgram &p : plan.programs) {
    if (p.stage < 0 || p.stage >= pp) {
      out.push_back("stage " + std::to_string(p.stage) + ": not a pipeline stage of the mesh (pp = " + std::to_string(pp) + ")");
      continue;
    }
    if (seen[size_t(p.stage)]) out.push_back("stage " + std::to_string(p.stage) + ": a second program of the stage");
    seen[size_t(p.stage)] = true;
    for (int64_t rank : p.ranks)
      if (rank < 0 || rank >= layout.numRanks() || layout.coordinates(rank)[unsigned(MeshAxis::PP)] != p.stage)
        out.push_back("stage " + std::to_string(p.stage) + ": rank " + std::to_string(rank) + " does not run this stage");
  }
  return out.size() == before;
}

} // namespace

std::vector<std::string> exec::checkPlan(const ExecutionPlan &plan) {
  std::vector<std::string> problems;
  bool shapeOk = checkShape(plan, problems);
  // The programs are checked on every core, each into its own list, and
  // their problems reported in program order.
  std::vector<std::vector<std::string>> found(plan.programs.size());
  parallelFor(plan.programs.size(), [&](size_t i) {
    const RankProgram &p = plan.programs[i];
    Report r(p, found[i]);
    std::vector<bool> ends = chainsThatEnd(p);
    checkBuffers(plan, p, ends, r);
    checkOverlaps(p, ends, r);
    checkDataflow(p, r);
    checkEvents(p, r);
  });
  for (std::vector<std::string> &f : found) problems.insert(problems.end(), f.begin(), f.end());
  // The replay needs a mesh it can number and one program per stage.
  if (shapeOk) checkDeadlock(plan, problems);
  return problems;
}
