//===- exec/PlanDeadlock.cpp - the static deadlock check of a plan -------===//
//
// exec/PlanDeadlock.h on the one replay of analysis/MessageReplay.h: each
// program's sends, recvs and collectives over pp become its events, and
// every mismatch, disagreeing collective, stuck program and unreceived
// message is reported, the replay going on past each.
//
//===----------------------------------------------------------------------===//

#include "exec/PlanDeadlock.h"
#include "exec/Groups.h"
#include "exec/PlanVerifier.h"

#include "analysis/MessageReplay.h"
#include "support/Plural.h"

#include <map>

using namespace planc;
using namespace planc::exec;

namespace {

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

class PlanReplay : public replay::Observer {
public:
  PlanReplay(const ExecutionPlan &plan, std::vector<std::string> &problems)
      : plan(plan), problems(problems), pp(plan.mesh[unsigned(MeshAxis::PP)]) {
    for (size_t i = 0; i < plan.programs.size(); ++i) byStage[plan.programs[i].stage] = i;
  }

  void run() {
    std::vector<std::vector<replay::Event>> programs(plan.programs.size());
    for (size_t i = 0; i < plan.programs.size(); ++i) programs[i] = eventsOf(i);
    replay::ReplayEnd end = replay::replayMessages(programs, *this);
    reportStuck(programs, end);
    for (const auto &[ends, channel] : end.unreceived)
      for (const replay::Event *m : channel)
        problems.push_back(where(ends.first, m->at) + ": its message, tag " + std::to_string(m->tag) + " (" +
                           counted(int64_t(m->bytes), "byte") + "), to stage " +
                           std::to_string(program(ends.second).stage) + " is never received");
  }

  bool mismatch(size_t to, const replay::Event &recv, size_t from, const replay::Event &sent) override {
    problems.push_back(where(to, recv.at) + " expects tag " + std::to_string(recv.tag) + " (" +
                       counted(int64_t(recv.bytes), "byte") + ") from stage " + std::to_string(program(from).stage) +
                       " but takes the message of " + where(from, sent.at) + ", tag " + std::to_string(sent.tag) + " (" +
                       counted(int64_t(sent.bytes), "byte") + ")");
    return true;
  }

  bool collective(const std::vector<const replay::Event *> &at) override {
    const Step &first = program(0).steps[at[0]->at];
    for (size_t i = 1; i < at.size(); ++i) {
      const Step &s = program(i).steps[at[i]->at];
      if (s.kind != first.kind || at[i]->bytes != at[0]->bytes)
        problems.push_back(where(i, at[i]->at) + " (" + counted(int64_t(at[i]->bytes), "byte") + ") meets " +
                           where(0, at[0]->at) + " (" + counted(int64_t(at[0]->bytes), "byte") +
                           ") in one collective over pp: they differ");
    }
    return true;
  }

  void noPeer(size_t i, const replay::Event &e) override {
    const Step &s = program(i).steps[e.at];
    problems.push_back(where(i, e.at) + ": its peer, stage " +
                       std::to_string(wrapCoordinate(program(i).stage, intAttr(s, "peer_offset"), pp)) +
                       ", has no program");
  }

private:
  const RankProgram &program(size_t i) const { return plan.programs[i]; }
  std::string where(size_t i, size_t step) const {
    return "stage " + std::to_string(program(i).stage) + " " + describeStep(program(i), step);
  }

  /// The program a send or recv of program `i` talks to: over pp the one of
  /// the peer's stage (-1 where that stage has none), over another axis its
  /// own (the peer runs the same program).
  int64_t peerProgram(size_t i, const Step &s) const {
    std::optional<MeshAxis> axis = axisOf(s);
    if (!axis || *axis != MeshAxis::PP) return int64_t(i);
    auto it = byStage.find(wrapCoordinate(program(i).stage, intAttr(s, "peer_offset"), pp));
    return it != byStage.end() ? int64_t(it->second) : -1;
  }

  /// Program `i`'s messages and its collectives over pp, in its order.
  std::vector<replay::Event> eventsOf(size_t i) const {
    std::vector<replay::Event> events;
    const RankProgram &p = program(i);
    for (size_t k = 0; k < p.steps.size(); ++k) {
      const Step &s = p.steps[k];
      if (s.kind >= ir::OpKind::NumOps || !isCommunicationStep(s.kind)) continue;
      replay::Event e;
      e.at = k;
      e.tag = intAttr(s, "tag");
      if (s.kind == ir::OpKind::Send || s.kind == ir::OpKind::Recv) {
        e.kind = s.kind == ir::OpKind::Send ? replay::Event::Send : replay::Event::Recv;
        e.peer = peerProgram(i, s);
        e.bytes = bytesOf(p, s.kind == ir::OpKind::Send ? s.inputs : s.outputs);
      } else {
        std::optional<MeshAxis> axis = axisOf(s);
        if (!axis || *axis != MeshAxis::PP) continue;
        e.kind = replay::Event::Collective;
        e.bytes = bytesOf(p, s.inputs);
      }
      events.push_back(e);
    }
    return events;
  }

  void reportStuck(const std::vector<std::vector<replay::Event>> &programs, const replay::ReplayEnd &end) {
    bool stuck = false;
    for (size_t i = 0; i < plan.programs.size(); ++i) stuck |= !end.ended(programs, i);
    if (!stuck) return;
    std::string text = "deadlock:";
    for (size_t i = 0; i < plan.programs.size(); ++i) {
      text += i ? ";" : "";
      if (end.ended(programs, i)) {
        text += " stage " + std::to_string(program(i).stage) + " has ended";
        continue;
      }
      const replay::Event &e = programs[i][end.next[i]];
      text += " " + where(i, e.at);
      if (e.kind == replay::Event::Recv) {
        text += " waits for tag " + std::to_string(e.tag);
        if (e.peer >= 0) text += " from stage " + std::to_string(program(size_t(e.peer)).stage);
      }
      else text += " waits for every stage's collective over pp";
    }
    problems.push_back(text);
  }

  const ExecutionPlan &plan;
  std::vector<std::string> &problems;
  int64_t pp;
  std::map<int64_t, size_t> byStage; // program index of each stage
};

} // namespace

void exec::checkDeadlock(const ExecutionPlan &plan, std::vector<std::string> &problems) {
  PlanReplay(plan, problems).run();
}
