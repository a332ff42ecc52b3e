//===- exec/PlanDeadlock.cpp - the static deadlock check of a plan -------===//
//
// The replay of exec/PlanDeadlock.h. Each program runs until it blocks (a
// recv with nothing on its channel, a collective over pp); when every
// program stands at a collective over pp, they complete together. Each
// round moves at least one program on, so the work is bounded by the steps
// times the programs.
//
//===----------------------------------------------------------------------===//

#include "exec/PlanDeadlock.h"
#include "exec/Groups.h"
#include "exec/PlanVerifier.h"
#include "support/Plural.h"

#include <deque>
#include <map>

using namespace planc;
using namespace planc::exec;

namespace {

struct Message {
  int64_t tag = 0;
  uint64_t bytes = 0;
  size_t step = 0; // the send's index in its program
};

int64_t intAttr(const Step &s, const char *name) {
  auto it = s.attrs.find(name);
  if (it == s.attrs.end()) return 0;
  const auto *i = std::get_if<int64_t>(&it->second);
  return i ? *i : 0;
}

uint64_t bytesOf(const RankProgram &p, const std::vector<int64_t> &refs) {
  if (refs.empty() || refs[0] < 0 || refs[0] >= int64_t(p.buffers.size())) return 0;
  return blockBytes(p.buffers[size_t(refs[0])]);
}

class Replay {
public:
  Replay(const ExecutionPlan &plan, std::vector<std::string> &problems)
      : plan(plan), problems(problems), pc(plan.programs.size(), 0),
        pp(plan.mesh[unsigned(MeshAxis::PP)]) {
    for (size_t i = 0; i < plan.programs.size(); ++i) byStage[plan.programs[i].stage] = i;
  }

  void run() {
    while (true) {
      bool moved = false;
      for (size_t i = 0; i < plan.programs.size(); ++i) moved |= advance(i);
      if (!moved) moved = completePipelineCollective();
      if (!moved) break;
    }
    reportStuck();
    reportUnreceived();
  }

private:
  const RankProgram &program(size_t i) const { return plan.programs[i]; }
  bool done(size_t i) const { return pc[i] >= program(i).steps.size(); }
  std::string where(size_t i, size_t step) const {
    return "stage " + std::to_string(program(i).stage) + " " + describeStep(program(i), step);
  }

  /// The program a send or recv of program `i` talks to; -1 (reported) where
  /// its peer's stage has no program.
  int64_t peerProgram(size_t i, const Step &s) {
    std::optional<MeshAxis> axis = axisOf(s);
    if (!axis || *axis != MeshAxis::PP) return int64_t(i);
    int64_t stage = wrapCoordinate(program(i).stage, intAttr(s, "peer_offset"), pp);
    auto it = byStage.find(stage);
    if (it != byStage.end()) return int64_t(it->second);
    problems.push_back(where(i, pc[i]) + ": its peer, stage " + std::to_string(stage) + ", has no program");
    return -1;
  }

  bool atPipelineCollective(size_t i) const {
    if (done(i)) return false;
    const Step &s = program(i).steps[pc[i]];
    if (s.kind >= ir::OpKind::NumOps || !isCommunicationStep(s.kind) || s.kind == ir::OpKind::Send ||
        s.kind == ir::OpKind::Recv)
      return false;
    std::optional<MeshAxis> axis = axisOf(s);
    return axis && *axis == MeshAxis::PP;
  }

  /// Runs program `i` until it blocks or ends; whether it moved.
  bool advance(size_t i) {
    bool moved = false;
    const RankProgram &p = program(i);
    while (!done(i) && !atPipelineCollective(i)) {
      const Step &s = p.steps[pc[i]];
      if (s.kind == ir::OpKind::Send) {
        int64_t peer = peerProgram(i, s);
        if (peer >= 0) channels[{i, size_t(peer)}].push_back({intAttr(s, "tag"), bytesOf(p, s.inputs), pc[i]});
      } else if (s.kind == ir::OpKind::Recv) {
        int64_t peer = peerProgram(i, s);
        if (peer >= 0) {
          std::deque<Message> &channel = channels[{size_t(peer), i}];
          if (channel.empty()) return moved;
          Message m = channel.front();
          channel.pop_front();
          int64_t tag = intAttr(s, "tag");
          uint64_t bytes = bytesOf(p, s.outputs);
          if (m.tag != tag || m.bytes != bytes)
            problems.push_back(where(i, pc[i]) + " expects tag " + std::to_string(tag) + " (" + counted(int64_t(bytes), "byte") +
                               ") from stage " + std::to_string(program(size_t(peer)).stage) +
                               " but takes the message of " + where(size_t(peer), m.step) + ", tag " +
                               std::to_string(m.tag) + " (" + counted(int64_t(m.bytes), "byte") + ")");
        }
      }
      ++pc[i];
      moved = true;
    }
    return moved;
  }

  /// When every program stands at a collective over pp, they complete.
  bool completePipelineCollective() {
    if (plan.programs.empty()) return false;
    for (size_t i = 0; i < plan.programs.size(); ++i)
      if (!atPipelineCollective(i)) return false;
    const Step &first = program(0).steps[pc[0]];
    uint64_t bytes = bytesOf(program(0), first.inputs);
    for (size_t i = 1; i < plan.programs.size(); ++i) {
      const Step &s = program(i).steps[pc[i]];
      uint64_t b = bytesOf(program(i), s.inputs);
      if (s.kind != first.kind || b != bytes)
        problems.push_back(where(i, pc[i]) + " (" + counted(int64_t(b), "byte") + ") meets " + where(0, pc[0]) + " (" +
                           counted(int64_t(bytes), "byte") + ") in one collective over pp: they differ");
    }
    for (size_t &step : pc) ++step;
    return true;
  }

  void reportStuck() {
    bool stuck = false;
    for (size_t i = 0; i < plan.programs.size(); ++i) stuck |= !done(i);
    if (!stuck) return;
    std::string text = "deadlock:";
    for (size_t i = 0; i < plan.programs.size(); ++i) {
      text += i ? ";" : "";
      if (done(i)) {
        text += " stage " + std::to_string(program(i).stage) + " has ended";
        continue;
      }
      const Step &s = program(i).steps[pc[i]];
      text += " " + where(i, pc[i]);
      if (s.kind == ir::OpKind::Recv) {
        int64_t peer = peerProgram(i, s);
        text += " waits for tag " + std::to_string(intAttr(s, "tag"));
        if (peer >= 0) text += " from stage " + std::to_string(program(size_t(peer)).stage);
      }
      else text += " waits for every stage's collective over pp";
    }
    problems.push_back(text);
  }

  void reportUnreceived() {
    for (const auto &[ends, channel] : channels)
      for (const Message &m : channel)
        problems.push_back(where(ends.first, m.step) + ": its message, tag " + std::to_string(m.tag) + " (" +
                           counted(int64_t(m.bytes), "byte") + "), to stage " + std::to_string(program(ends.second).stage) +
                           " is never received");
  }

  const ExecutionPlan &plan;
  std::vector<std::string> &problems;
  std::vector<size_t> pc;                                      // the next step of each program
  int64_t pp;
  std::map<int64_t, size_t> byStage;                           // program index of each stage
  std::map<std::pair<size_t, size_t>, std::deque<Message>> channels; // (from, to) program
};

} // namespace

void exec::checkDeadlock(const ExecutionPlan &plan, std::vector<std::string> &problems) {
  Replay(plan, problems).run();
}
