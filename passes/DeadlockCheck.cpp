//===- passes/DeadlockCheck.cpp - matching message order, statically ------===//
//
// A partitioned module is one program for every rank; an op with
// `pipeline_stage` runs only on that pipeline rank. This pass replays, for
// one representative rank per pipeline stage, the communication of each
// rank's program in its order, as a runtime would: a send is posted without
// waiting (NCCL/MPI send within a group), a receive waits for the next
// message from its peer, and a collective over pp waits for every stage.
// Messages between two ranks are matched in order, so the pass fails when:
//   - a receive meets a message with another tag (the two ranks issue their
//     sends and receives in different orders);
//   - stages reach different collectives;
//   - no rank can go on (every waiting rank waits for a message or a
//     collective that the others will never issue);
//   - a message is never received.
// Each error names the two ranks and the two ops. A rolled module (placed by
// `pipeline`, one micro-batch) is replayed as the schedule runs it, in the
// order analysis/StageSequence.h gives every rank (each message tagged per
// micro-batch, the optimizer's after all of them); a module whose ops carry
// their micro-batch (written out by hand) in module order. Collectives over other
// axes (tp, dp) are issued by every member of their group in the same
// program order — the members of a group are on the same stage and run the
// same ops — so they match by construction and are not replayed.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "analysis/StageSequence.h"
#include "analysis/Placement.h"
#include "passes/PartitionOptions.h"

#include "ir/MeshLayout.h"
#include "ir/OpDef.h"
#include "ir/Placement.h"
#include "ir/Printer.h"
#include "support/Error.h"

#include <deque>
#include <map>

using namespace planc;
using namespace planc::ir;

namespace {

struct Event {
  enum Kind { Send, Recv, Collective } kind;
  int peer = -1; // pipeline rank of the other side
  int64_t tag = 0;
  const Op *op = nullptr;
};

std::string where(const Op &op) {
  std::string s = "'" + std::string(spelling(op.kind)) + "'";
  if (isPointToPoint(op.kind)) s += " (tag " + std::to_string(op.getInt("tag")) + ")";
  else if (!op.results.empty()) s += " defining %" + op.results[0]->name;
  if (!op.path.empty()) s += " in " + op.path;
  if (hasMicroBatch(op)) s += ", micro-batch " + std::to_string(microBatchOf(op));
  return s;
}

bool isPpCollective(const Op &op) { return isCollective(op.kind) && op.getString("axis") == "pp"; }

class DeadlockCheckPass : public Pass {
public:
  explicit DeadlockCheckPass(const PipelineScheduleSpec &spec) : spec(spec) {}

  llvm::Error run(Module &m) override {
    const int P = int(m.mesh[unsigned(MeshAxis::PP)]);
    std::vector<const Op *> comms;
    bool unrolled = false;
    for (const auto &up : m.ops) {
      const Op &op = *up;
      unrolled |= hasMicroBatch(op);
      if (!isPointToPoint(op.kind) && !isPpCollective(op)) continue;
      if (isPointToPoint(op.kind) && op.getString("axis") != "pp")
        return makeError(where(op) + " is a point-to-point message over '" + op.getString("axis") +
                    "'; only pipeline (pp) messages are checked");
      comms.push_back(&op);
    }
    std::vector<std::vector<Event>> programs(static_cast<size_t>(P));
    if (unrolled || P == 1) {
      for (const Op *op : comms)
        for (int r = 0; r < P; ++r) add(programs, *op, r, P, 0);
      return replay(programs, P, MeshLayout(m.mesh));
    }
    // Rolled: each rank runs its ops in the order analysis/StageSequence.h
    // derives from the schedule (the one the memory planner and the
    // execution plan follow), each message tagged per micro-batch. The
    // schedule the pipeline pass recorded, or for a module read from text
    // the one `spec` names.
    pipeline::ScheduleOptions so = m.schedule.value_or(scheduleOptionsOf(spec, P));
    auto schedule = pipeline::buildSchedule(so);
    if (!schedule) return schedule.takeError();
    sequence::StageSequencer sequencer(m, *schedule);
    std::vector<std::vector<sequence::SequencedOp>> ranks = sequencer.sequenceAll();
    for (int r = 0; r < P; ++r)
      for (const sequence::SequencedOp &q : ranks[size_t(r)])
        if (isPointToPoint(q.op->kind) || isPpCollective(*q.op))
          add(programs, *q.op, r, P, sequencer.tagOf(*q.op, q.microBatch) - q.op->getInt("tag"));
    return replay(programs, P, MeshLayout(m.mesh));
  }

private:
  /// `op` as an event of rank `r`'s program, if that rank runs it.
  static void add(std::vector<std::vector<Event>> &programs, const Op &op, int r, int P, int64_t tagShift) {
    if (hasPipelineStage(op) && pipelineStageOf(op) != r) return;
    Event e;
    e.op = &op;
    if (isPpCollective(op)) {
      e.kind = Event::Collective;
    } else {
      e.kind = op.kind == OpKind::Send ? Event::Send : Event::Recv;
      e.peer = int(((r + op.getInt("peer_offset")) % P + P) % P);
      e.tag = op.getInt("tag") + tagShift;
    }
    programs[size_t(r)].push_back(e);
  }

  static std::string rankName(int stage, const MeshLayout &mesh) {
    MeshCoords c{};
    c[unsigned(MeshAxis::PP)] = stage;
    return "rank " + std::to_string(mesh.rankOf(c)) + " (pp=" + std::to_string(stage) + ")";
  }

  PipelineScheduleSpec spec;

  static llvm::Error replay(const std::vector<std::vector<Event>> &programs, int P, const MeshLayout &mesh) {
    std::vector<size_t> head(static_cast<size_t>(P), 0);
    std::map<std::pair<int, int>, std::deque<const Event *>> channel; // (from, to)
    auto done = [&](int r) { return head[size_t(r)] >= programs[size_t(r)].size(); };
    for (;;) {
      bool progress = false;
      for (int r = 0; r < P; ++r) {
        while (!done(r)) {
          const Event &e = programs[size_t(r)][head[size_t(r)]];
          if (e.kind == Event::Send) {
            channel[{r, e.peer}].push_back(&e);
          } else if (e.kind == Event::Recv) {
            auto &q = channel[{e.peer, r}];
            if (q.empty()) break;
            const Event &sent = *q.front();
            if (sent.tag != e.tag)
              return makeError("pipeline messages out of order: " + rankName(r, mesh) + " receives " + where(*e.op) +
                          " from " + rankName(e.peer, mesh) + ", whose next message to it is " + where(*sent.op));
            q.pop_front();
          } else {
            break; // collectives below
          }
          ++head[size_t(r)];
          progress = true;
        }
      }
      // A pp collective completes when every stage is at it.
      bool allAtCollective = true;
      for (int r = 0; r < P; ++r)
        allAtCollective &= !done(r) && programs[size_t(r)][head[size_t(r)]].kind == Event::Collective;
      if (allAtCollective) {
        const Op *first = programs[0][head[0]].op;
        for (int r = 1; r < P; ++r)
          if (programs[size_t(r)][head[size_t(r)]].op != first)
            return makeError("collectives out of order: " + rankName(0, mesh) + " is at " + where(*first) + " while " +
                        rankName(r, mesh) + " is at " + where(*programs[size_t(r)][head[size_t(r)]].op));
        for (int r = 0; r < P; ++r) ++head[size_t(r)];
        progress = true;
      }
      bool finished = true;
      for (int r = 0; r < P; ++r) finished &= done(r);
      if (finished) break;
      if (progress) continue;
      // Stuck: name a waiting rank and what the rank it waits for is doing.
      for (int r = 0; r < P; ++r) {
        if (done(r)) continue;
        const Event &e = programs[size_t(r)][head[size_t(r)]];
        if (e.kind != Event::Recv) continue;
        std::string other = done(e.peer) ? "has finished its program"
                                         : "waits at " + where(*programs[size_t(e.peer)][head[size_t(e.peer)]].op);
        return makeError("deadlock: " + rankName(r, mesh) + " waits at " + where(*e.op) + " for " +
                    rankName(e.peer, mesh) + ", which " + other);
      }
      for (int r = 0; r < P; ++r)
        if (!done(r))
          return makeError("deadlock: " + rankName(r, mesh) + " waits at " + where(*programs[size_t(r)][head[size_t(r)]].op) +
                      ", which not every pipeline stage reaches");
    }
    for (const auto &[k, q] : channel)
      if (!q.empty())
        return makeError(rankName(k.first, mesh) + " sends " + where(*q.front()->op) + " to " + rankName(k.second, mesh) +
                    ", which never receives it");
    return llvm::Error::success();
  }
};

} // namespace

std::unique_ptr<Pass> planc::createDeadlockCheckPass(const PipelineScheduleSpec &spec) {
  return std::make_unique<DeadlockCheckPass>(spec);
}
