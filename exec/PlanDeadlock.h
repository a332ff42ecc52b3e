//===- exec/PlanDeadlock.h - the static deadlock check of a plan -*- C++ -*-===//
//
// Replays one representative rank of every program (stage s at coordinate 0
// of every other axis) against the others, on the plan alone:
//
//   - a send posts its message (tag, bytes of its input buffer) on the
//     channel to its peer's program (over pp: stage (s + peer_offset) mod
//     pp; over another axis the peer runs the same program) and never blocks;
//   - a recv completes when the oldest message on its channel from its peer
//     has its tag; a different tag at the front, or different bytes, is a
//     mismatch naming both steps (the message is taken, and the replay goes
//     on, so one run reports every mismatch);
//   - a collective over pp completes when every program has reached a
//     collective, and they must be of one kind and size; collectives over
//     other axes complete at once (their group runs the same program).
//
// When no program can go on before all have ended, the deadlock is reported
// naming the step each stuck program waits at; messages no recv takes are
// reported at the end. The replay is analysis/MessageReplay.h's, the one the
// `check-deadlock` pass runs on the rolled module.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_EXEC_PLANDEADLOCK_H
#define PLANC_EXEC_PLANDEADLOCK_H

#include "exec/ExecutionPlan.h"

#include <string>
#include <vector>

namespace planc::exec {

/// Appends one message per mismatch, deadlock and unreceived message.
void checkDeadlock(const ExecutionPlan &plan, std::vector<std::string> &problems);

} // namespace planc::exec

#endif
