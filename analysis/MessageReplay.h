//===- analysis/MessageReplay.h - the deadlock replay, once ------*- C++ -*-===//
//
// The static deadlock check replays what one representative rank of every
// pipeline stage runs, as a runtime would, over a view of its communication
// (as analysis/PipelineStructure.h's StepView serves the structure check):
// the rolled module's (passes/DeadlockCheck.cpp) and the execution plan's
// (exec/PlanDeadlock.h) read alike.
//
//   - a send posts its message on the channel to its peer and never blocks;
//   - a recv waits for a message on the channel from its peer and takes the
//     oldest; a different tag or size is a mismatch (the observer says
//     whether the replay goes on);
//   - a collective over pp waits until every program stands at one; then
//     they complete together (the observer judges whether they agree).
//
// Each program runs until it blocks, in program order; when none can move,
// a collective every program stands at completes; when that cannot happen
// either, the replay ends. The work is bounded by the events times the
// programs. What is left (programs not at their end, messages no recv took)
// is the caller's to report.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_ANALYSIS_MESSAGEREPLAY_H
#define PLANC_ANALYSIS_MESSAGEREPLAY_H

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

namespace planc::replay {

struct Event {
  enum Kind { Send, Recv, Collective } kind = Send;
  int64_t peer = -1;  // Send, Recv: the program at the other end; -1: none (Observer::noPeer)
  int64_t tag = 0;
  uint64_t bytes = 0; // 0 where the view does not know
  size_t at = 0;      // the caller's: where the event comes from (an op, a step)
};

class Observer {
public:
  virtual ~Observer() = default;
  /// A recv of program `to` took `sent`, whose tag or bytes differ from
  /// `recv`'s. Whether the replay goes on.
  virtual bool mismatch(size_t to, const Event &recv, size_t from, const Event &sent) = 0;
  /// Every program stands at a collective (`at`, by program), about to
  /// complete. Whether the replay goes on.
  virtual bool collective(const std::vector<const Event *> &at) = 0;
  /// A send or recv of `program` with no peer, passed over.
  virtual void noPeer(size_t program, const Event &e) {}
};

/// Where the replay ended.
struct ReplayEnd {
  bool stopped = false;     // an observer's call ended it
  std::vector<size_t> next; // by program: the event it stands at (its size: ended)
  /// The messages no recv took, by (from, to) program, oldest first.
  std::map<std::pair<size_t, size_t>, std::deque<const Event *>> unreceived;
  bool ended(const std::vector<std::vector<Event>> &programs, size_t p) const { return next[p] >= programs[p].size(); }
};

ReplayEnd replayMessages(const std::vector<std::vector<Event>> &programs, Observer &observer);

} // namespace planc::replay

#endif
