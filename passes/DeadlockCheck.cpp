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
// `pipeline`, one micro-batch) is replayed as the schedule runs it: each
// rank's instructions in order, each with its stage's messages of that kind,
// tagged per micro-batch as `unroll-microbatches` tags them; the optimizer's
// messages after all of them. Collectives over other
// axes (tp, dp) are issued by every member of their group in the same
// program order — the members of a group are on the same stage and run the
// same ops — so they match by construction and are not replayed.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "analysis/InstructionTimes.h"
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
    // Rolled: the schedule says in which order each rank runs its work.
    // The schedule the pipeline pass recorded, or for a module read from
    // text the one `spec` names.
    pipeline::ScheduleOptions so = m.schedule.value_or(scheduleOptionsOf(spec, P));
    auto schedule = pipeline::buildSchedule(so);
    if (!schedule) return schedule.takeError();
    int64_t maxTag = 0;
    std::map<std::pair<int, Work>, std::vector<const Op *>> byWork; // (virtual stage, work)
    std::vector<const Op *> optimizer;
    for (const Op *op : comms) {
      if (op->kind == OpKind::Send) maxTag = std::max(maxTag, op->getInt("tag"));
      Work w = workOf(*op);
      if (w == Work::Optimizer || virtualStageOf(*op) < 0) optimizer.push_back(op);
      else byWork[{virtualStageOf(*op), w == Work::WeightGrad && so.style != pipeline::ScheduleStyle::ZeroBubble
                                             ? Work::Backward
                                             : w}]
               .push_back(op);
    }
    for (int r = 0; r < P; ++r) {
      for (const pipeline::Instr &in : schedule->ranks[size_t(r)]) {
        if (!in.isCompute()) continue;
        Work w = in.kind == pipeline::InstrKind::Forward    ? Work::Forward
                 : in.kind == pipeline::InstrKind::WeightGrad ? Work::WeightGrad
                                                            : Work::Backward;
        auto it = byWork.find({schedule->virtualStage(r, in.chunk), w});
        if (it == byWork.end()) continue;
        for (const Op *op : it->second) add(programs, *op, r, P, int64_t(in.microBatch) * maxTag);
      }
      for (const Op *op : optimizer) add(programs, *op, r, P, 0);
    }
    receiveInSendOrder(programs);
    return replay(programs, P, MeshLayout(m.mesh));
  }

private:
  /// What `unroll-microbatches` does to the programs it writes: on each
  /// channel the receives follow the sender's order, a receive moving up to
  /// just before a later message's receive where the schedule had it after.
  static void receiveInSendOrder(std::vector<std::vector<Event>> &programs) {
    const int P = int(programs.size());
    std::vector<std::vector<double>> pos(programs.size());
    for (size_t r = 0; r < programs.size(); ++r)
      for (size_t i = 0; i < programs[r].size(); ++i) pos[r].push_back(double(i));
    for (int dst = 0; dst < P; ++dst)
      for (int src = 0; src < P; ++src) {
        std::vector<int64_t> sent; // tags in send order
        for (const Event &e : programs[size_t(src)])
          if (e.kind == Event::Send && e.peer == dst) sent.push_back(e.tag);
        std::map<int64_t, size_t> recvAt; // tag -> index in dst's program
        for (size_t i = 0; i < programs[size_t(dst)].size(); ++i) {
          const Event &e = programs[size_t(dst)][i];
          if (e.kind == Event::Recv && e.peer == src) recvAt[e.tag] = i;
        }
        for (size_t k = sent.size(); k-- > 1;) {
          auto a = recvAt.find(sent[k - 1]), b = recvAt.find(sent[k]);
          if (a == recvAt.end() || b == recvAt.end()) continue;
          double &pa = pos[size_t(dst)][a->second], pb = pos[size_t(dst)][b->second];
          if (pa > pb) pa = pb - 1e-3;
        }
      }
    for (size_t r = 0; r < programs.size(); ++r) {
      std::vector<size_t> idx(programs[r].size());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return pos[r][a] < pos[r][b]; });
      std::vector<Event> sorted;
      for (size_t i : idx) sorted.push_back(programs[r][i]);
      programs[r] = std::move(sorted);
    }
  }

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
