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
// Each error names the two ranks and the two ops. Collectives over other
// axes (tp, dp) are issued by every member of their group in the same
// program order — the members of a group are on the same stage and run the
// same ops — so they match by construction and are not replayed.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/MeshLayout.h"
#include "ir/Printer.h"

#include <deque>
#include <map>

using namespace planc;
using namespace planc::ir;

namespace {

llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

struct Event {
  enum Kind { Send, Recv, Collective } kind;
  int peer = -1; // pipeline rank of the other side
  int64_t tag = 0;
  const Op *op = nullptr;
};

std::string where(const Op &op) {
  std::string s = "'" + std::string(spelling(op.kind)) + "'";
  if (op.kind == OpKind::Send || op.kind == OpKind::Recv) s += " (tag " + std::to_string(op.getInt("tag")) + ")";
  else if (!op.results.empty()) s += " defining %" + op.results[0]->name;
  if (!op.path.empty()) s += " in " + op.path;
  if (op.has("micro_batch")) s += ", micro-batch " + std::to_string(op.getInt("micro_batch"));
  return s;
}

bool isPpCollective(const Op &op) {
  switch (op.kind) {
  case OpKind::AllReduce: case OpKind::ReduceScatter: case OpKind::AllGather: case OpKind::AllToAll:
  case OpKind::Broadcast:
    return op.getString("axis") == "pp";
  default:
    return false;
  }
}

class DeadlockCheckPass : public Pass {
public:
  llvm::Error run(Module &m) override {
    const int P = int(m.mesh[unsigned(MeshAxis::PP)]);
    std::vector<std::vector<Event>> programs(static_cast<size_t>(P));
    for (const auto &up : m.ops) {
      const Op &op = *up;
      bool comm = op.kind == OpKind::Send || op.kind == OpKind::Recv || isPpCollective(op);
      if (!comm) continue;
      if ((op.kind == OpKind::Send || op.kind == OpKind::Recv) && op.getString("axis") != "pp")
        return fail(where(op) + " is a point-to-point message over '" + op.getString("axis") +
                    "'; only pipeline (pp) messages are checked");
      for (int r = 0; r < P; ++r) {
        if (op.has("pipeline_stage") && op.getInt("pipeline_stage") != r) continue;
        Event e;
        e.op = &op;
        if (isPpCollective(op)) {
          e.kind = Event::Collective;
        } else {
          e.kind = op.kind == OpKind::Send ? Event::Send : Event::Recv;
          e.peer = int(((r + op.getInt("peer_offset")) % P + P) % P);
          e.tag = op.getInt("tag");
        }
        programs[size_t(r)].push_back(e);
      }
    }
    return replay(programs, P, MeshLayout(m.mesh));
  }

private:
  static std::string rankName(int stage, const MeshLayout &mesh) {
    MeshCoords c{};
    c[unsigned(MeshAxis::PP)] = stage;
    return "rank " + std::to_string(mesh.rankOf(c)) + " (pp=" + std::to_string(stage) + ")";
  }

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
              return fail("pipeline messages out of order: " + rankName(r, mesh) + " receives " + where(*e.op) +
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
            return fail("collectives out of order: " + rankName(0, mesh) + " is at " + where(*first) + " while " +
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
        return fail("deadlock: " + rankName(r, mesh) + " waits at " + where(*e.op) + " for " +
                    rankName(e.peer, mesh) + ", which " + other);
      }
      for (int r = 0; r < P; ++r)
        if (!done(r))
          return fail("deadlock: " + rankName(r, mesh) + " waits at " + where(*programs[size_t(r)][head[size_t(r)]].op) +
                      ", which not every pipeline stage reaches");
    }
    for (const auto &[k, q] : channel)
      if (!q.empty())
        return fail(rankName(k.first, mesh) + " sends " + where(*q.front()->op) + " to " + rankName(k.second, mesh) +
                    ", which never receives it");
    return llvm::Error::success();
  }
};

} // namespace

std::unique_ptr<Pass> planc::createDeadlockCheckPass() { return std::make_unique<DeadlockCheckPass>(); }
