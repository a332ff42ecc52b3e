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
// same ops — so they match by construction and are not replayed. The replay
// is analysis/MessageReplay.h's, the one exec/PlanDeadlock.h runs on the
// execution plan; this pass reports its first problem.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "analysis/MessageReplay.h"
#include "analysis/StageSequence.h"
#include "analysis/StepSchedule.h"
#include "analysis/Placement.h"
#include "passes/PartitionOptions.h"

#include "ir/MeshLayout.h"
#include "ir/OpDef.h"
#include "ir/Placement.h"
#include "ir/Printer.h"
#include "support/Error.h"


using namespace planc;
using namespace planc::ir;

namespace {

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
    std::vector<std::vector<replay::Event>> programs(static_cast<size_t>(P));
    std::vector<const Op *> ops; // by Event::at
    if (unrolled || P == 1) {
      for (const Op *op : comms)
        for (int r = 0; r < P; ++r) add(programs, ops, *op, r, P, 0);
      return firstProblem(programs, ops, P, MeshLayout(m.mesh));
    }
    // Rolled: each rank runs its ops in the order analysis/StageSequence.h
    // derives from the schedule (the one the memory planner and the
    // execution plan follow), each message tagged per micro-batch. The
    // schedule the pipeline pass recorded, or for a module read from text
    // the one `spec` names.
    pipeline::ScheduleOptions so = pipeline::scheduleOf(m, scheduleOptionsOf(spec, P));
    auto schedule = pipeline::buildSchedule(so);
    if (!schedule) return schedule.takeError();
    sequence::StageSequencer sequencer(m, *schedule);
    std::vector<std::vector<sequence::SequencedOp>> ranks = sequencer.sequenceAll();
    for (int r = 0; r < P; ++r)
      for (const sequence::SequencedOp &q : ranks[size_t(r)])
        if (isPointToPoint(q.op->kind) || isPpCollective(*q.op))
          add(programs, ops, *q.op, r, P, sequencer.tagOf(*q.op, q.microBatch) - q.op->getInt("tag"));
    return firstProblem(programs, ops, P, MeshLayout(m.mesh));
  }

private:
  /// `op` as an event of rank `r`'s program, if that rank runs it.
  static void add(std::vector<std::vector<replay::Event>> &programs, std::vector<const Op *> &ops, const Op &op, int r,
                  int P, int64_t tagShift) {
    if (hasPipelineStage(op) && pipelineStageOf(op) != r) return;
    replay::Event e;
    e.at = ops.size();
    ops.push_back(&op);
    if (isPpCollective(op)) {
      e.kind = replay::Event::Collective;
    } else {
      e.kind = op.kind == OpKind::Send ? replay::Event::Send : replay::Event::Recv;
      e.peer = ((r + op.getInt("peer_offset")) % P + P) % P;
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

  /// The first problem of the replay (analysis/MessageReplay.h), as the
  /// error of the pass.
  static llvm::Error firstProblem(const std::vector<std::vector<replay::Event>> &programs,
                                  const std::vector<const Op *> &ops, int P, const MeshLayout &mesh) {
    struct FirstProblem : replay::Observer {
      const std::vector<const Op *> &ops;
      const MeshLayout &mesh;
      std::string error;
      FirstProblem(const std::vector<const Op *> &ops, const MeshLayout &mesh) : ops(ops), mesh(mesh) {}
      bool mismatch(size_t to, const replay::Event &recv, size_t from, const replay::Event &sent) override {
        error = "pipeline messages out of order: " + rankName(int(to), mesh) + " receives " + where(*ops[recv.at]) +
                " from " + rankName(int(from), mesh) + ", whose next message to it is " + where(*ops[sent.at]);
        return false;
      }
      bool collective(const std::vector<const replay::Event *> &at) override {
        const Op *first = ops[at[0]->at];
        for (size_t r = 1; r < at.size(); ++r)
          if (ops[at[r]->at] != first) {
            error = "collectives out of order: " + rankName(0, mesh) + " is at " + where(*first) + " while " +
                    rankName(int(r), mesh) + " is at " + where(*ops[at[r]->at]);
            return false;
          }
        return true;
      }
    } observer(ops, mesh);
    replay::ReplayEnd end = replay::replayMessages(programs, observer);
    if (end.stopped) return makeError(observer.error);
    auto done = [&](int r) { return end.ended(programs, size_t(r)); };
    auto at = [&](int r) -> const Op & { return *ops[programs[size_t(r)][end.next[size_t(r)]].at]; };
    // Stuck: name a waiting rank and what the rank it waits for is doing.
    for (int r = 0; r < P; ++r) {
      if (done(r)) continue;
      const replay::Event &e = programs[size_t(r)][end.next[size_t(r)]];
      if (e.kind != replay::Event::Recv) continue;
      const int peer = int(e.peer);
      std::string other = done(peer) ? "has finished its program" : "waits at " + where(at(peer));
      return makeError("deadlock: " + rankName(r, mesh) + " waits at " + where(at(r)) + " for " +
                       rankName(peer, mesh) + ", which " + other);
    }
    for (int r = 0; r < P; ++r)
      if (!done(r))
        return makeError("deadlock: " + rankName(r, mesh) + " waits at " + where(at(r)) +
                         ", which not every pipeline stage reaches");
    for (const auto &[k, q] : end.unreceived)
      return makeError(rankName(int(k.first), mesh) + " sends " + where(*ops[q.front()->at]) + " to " +
                       rankName(int(k.second), mesh) + ", which never receives it");
    return llvm::Error::success();
  }
};

} // namespace

std::unique_ptr<Pass> planc::createDeadlockCheckPass(const PipelineScheduleSpec &spec) {
  return std::make_unique<DeadlockCheckPass>(spec);
}
