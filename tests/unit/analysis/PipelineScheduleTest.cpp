//===- tests/unit/analysis/PipelineScheduleTest.cpp - pipeline schedules -----------===//
//
// The bubble fractions measured by replaying each schedule agree with the
// closed forms (GPipe, 1F1B) or beat them (interleaved, zero-bubble); every
// rank orders each micro-batch's work legally; 1F1B bounds the activations in
// flight where GPipe does not.
//
//===----------------------------------------------------------------------===//

#include "analysis/PipelineSchedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

using namespace planc::pipeline;

namespace {

struct Replayed {
  PipelineSchedule schedule;
  Simulation sim;
};

Replayed replay(ScheduleStyle style, int p, int m, int v = 1) {
  auto schedule = buildSchedule({style, p, m, v});
  EXPECT_TRUE(bool(schedule)) << llvm::toString(schedule.takeError());
  auto sim = simulate(*schedule);
  EXPECT_TRUE(bool(sim)) << llvm::toString(sim.takeError());
  return {std::move(*schedule), std::move(*sim)};
}

double closedForm(int p, int m) { return double(p - 1) / double(m + p - 1); }

TEST(PipelineScheduleTest, GPipeAndOneFOneBMatchTheClosedForm) {
  for (ScheduleStyle style : {ScheduleStyle::GPipe, ScheduleStyle::OneFOneB}) {
    Replayed r = replay(style, 4, 8);
    // idle 36 of 4 x 33: exactly 3/11.
    EXPECT_EQ(r.sim.stepTime, 33) << spelling(style);
    EXPECT_EQ(r.sim.idleTime() * 11, 3 * 4 * r.sim.stepTime) << spelling(style);
    EXPECT_DOUBLE_EQ(r.sim.bubbleFraction(), closedForm(4, 8)) << spelling(style);
  }
  // And for other shapes, including a pipeline deeper than its micro-batches.
  for (auto [p, m] : {std::pair{2, 4}, {8, 16}, {4, 2}, {1, 3}})
    for (ScheduleStyle style : {ScheduleStyle::GPipe, ScheduleStyle::OneFOneB})
      EXPECT_DOUBLE_EQ(replay(style, p, m).sim.bubbleFraction(), closedForm(p, m))
          << spelling(style) << " p = " << p << " m = " << m;
}

TEST(PipelineScheduleTest, InterleavedAndZeroBubbleAreSmaller) {
  double oneFOneB = replay(ScheduleStyle::OneFOneB, 4, 8).sim.bubbleFraction();
  Replayed interleaved = replay(ScheduleStyle::Interleaved, 4, 8, 2);
  Replayed zeroBubble = replay(ScheduleStyle::ZeroBubble, 4, 8);
  EXPECT_LT(interleaved.sim.bubbleFraction(), oneFOneB);
  EXPECT_LT(zeroBubble.sim.bubbleFraction(), oneFOneB);
  // Interleaving divides the bubble time by v: (p - 1) / (v m) of the ideal.
  int64_t busy = interleaved.sim.busy[0];
  EXPECT_EQ((interleaved.sim.stepTime - busy) * 2 * 8, 3 * busy);
  // The measured values, for the record: 3/19 and 1/9.
  EXPECT_DOUBLE_EQ(interleaved.sim.bubbleFraction(), 3.0 / 19.0);
  EXPECT_DOUBLE_EQ(zeroBubble.sim.bubbleFraction(), 1.0 / 9.0);
}

TEST(PipelineScheduleTest, EveryRankDoesAllItsWorkInALegalOrder) {
  for (auto [style, v] : {std::pair{ScheduleStyle::GPipe, 1}, {ScheduleStyle::OneFOneB, 1},
                          {ScheduleStyle::Interleaved, 2}, {ScheduleStyle::ZeroBubble, 1}}) {
    Replayed r = replay(style, 4, 8, v);
    for (size_t rank = 0; rank < r.schedule.ranks.size(); ++rank) {
      std::set<std::pair<int, int>> forwarded, backwarded, weighted;
      for (const Instr &i : r.schedule.ranks[rank]) {
        std::pair<int, int> unit{i.microBatch, i.chunk};
        if (i.kind == InstrKind::Forward) EXPECT_TRUE(forwarded.insert(unit).second);
        if (i.kind == InstrKind::Backward) {
          EXPECT_TRUE(forwarded.count(unit)) << spelling(style) << ": B before F on rank " << rank;
          EXPECT_TRUE(backwarded.insert(unit).second);
        }
        if (i.kind == InstrKind::WeightGrad) {
          EXPECT_TRUE(backwarded.count(unit)) << spelling(style) << ": W before B on rank " << rank;
          EXPECT_TRUE(weighted.insert(unit).second);
        }
      }
      EXPECT_EQ(forwarded.size(), size_t(8 * v));
      EXPECT_EQ(backwarded.size(), size_t(8 * v));
      EXPECT_EQ(weighted.size(), style == ScheduleStyle::ZeroBubble ? 8u : 0u);
    }
  }
}

TEST(PipelineScheduleTest, TheReplayRespectsTheNeighbours) {
  // A stage's F of a micro-batch ends before the next stage's F of it starts;
  // its B starts after the next stage's B of it ended.
  for (ScheduleStyle style : {ScheduleStyle::GPipe, ScheduleStyle::OneFOneB, ScheduleStyle::ZeroBubble}) {
    Replayed r = replay(style, 4, 8);
    std::map<std::tuple<InstrKind, int, int>, TimedInstr> at; // (kind, mb, stage)
    for (int rank = 0; rank < 4; ++rank)
      for (const TimedInstr &t : r.sim.timelines[rank])
        if (t.instr.isCompute()) at[{t.instr.kind, t.instr.microBatch, rank}] = t;
    for (int mb = 0; mb < 8; ++mb)
      for (int s = 0; s + 1 < 4; ++s) {
        auto time = [&](InstrKind kind, int stage) { return at[std::make_tuple(kind, mb, stage)]; };
        EXPECT_LE(time(InstrKind::Forward, s).end, time(InstrKind::Forward, s + 1).start);
        EXPECT_LE(time(InstrKind::Backward, s + 1).end, time(InstrKind::Backward, s).start);
      }
  }
}

/// The most micro-batches whose forward ran and whose backward did not.
int maxInFlight(const std::vector<Instr> &rank) {
  int inFlight = 0, most = 0;
  for (const Instr &i : rank) {
    if (i.kind == InstrKind::Forward) most = std::max(most, ++inFlight);
    if (i.kind == InstrKind::Backward) --inFlight;
  }
  return most;
}

TEST(PipelineScheduleTest, OneFOneBBoundsTheActivationsInFlight) {
  EXPECT_EQ(maxInFlight(replay(ScheduleStyle::GPipe, 4, 8).schedule.ranks[0]), 8);
  EXPECT_EQ(maxInFlight(replay(ScheduleStyle::OneFOneB, 4, 8).schedule.ranks[0]), 4);
  EXPECT_EQ(maxInFlight(replay(ScheduleStyle::OneFOneB, 4, 8).schedule.ranks[3]), 1);
  EXPECT_LE(maxInFlight(replay(ScheduleStyle::ZeroBubble, 4, 8).schedule.ranks[0]), 4);
}

TEST(PipelineScheduleTest, MessagesPairUp) {
  // Every send has one receive on its peer, and the first and last stages
  // skip the messages that have no neighbour.
  Replayed r = replay(ScheduleStyle::Interleaved, 4, 8, 2);
  int sends = 0, recvs = 0;
  for (const auto &rank : r.schedule.ranks)
    for (const Instr &i : rank) {
      sends += i.kind == InstrKind::SendAct || i.kind == InstrKind::SendGrad;
      recvs += i.kind == InstrKind::RecvAct || i.kind == InstrKind::RecvGrad;
    }
  // 8 micro-batches cross 7 stage boundaries, both ways.
  EXPECT_EQ(sends, 8 * 7 * 2);
  EXPECT_EQ(recvs, sends);
}

TEST(PipelineScheduleTest, AMisorderedScheduleDeadlocks) {
  auto s = buildSchedule({ScheduleStyle::OneFOneB, 2, 2, 1});
  ASSERT_TRUE(bool(s));
  // Stage 0 waits for the gradient of micro-batch 0 before it sends that
  // micro-batch's activations: each stage waits for the other.
  auto &rank0 = s->ranks[0];
  auto find = [&](InstrKind kind) {
    return std::find_if(rank0.begin(), rank0.end(), [&](const Instr &i) { return i.kind == kind; });
  };
  std::iter_swap(find(InstrKind::SendAct), find(InstrKind::RecvGrad));
  auto sim = simulate(*s);
  ASSERT_FALSE(bool(sim));
  EXPECT_NE(llvm::toString(sim.takeError()).find("deadlocks"), std::string::npos);
}

TEST(PipelineScheduleTest, BadShapesAreErrors) {
  auto notMultiple = buildSchedule({ScheduleStyle::Interleaved, 4, 6, 2});
  ASSERT_FALSE(bool(notMultiple));
  EXPECT_NE(llvm::toString(notMultiple.takeError()).find("m = 6"), std::string::npos);
  auto chunks = buildSchedule({ScheduleStyle::OneFOneB, 4, 8, 2});
  EXPECT_FALSE(bool(chunks));
  llvm::consumeError(chunks.takeError());
  auto empty = buildSchedule({ScheduleStyle::GPipe, 0, 8, 1});
  EXPECT_FALSE(bool(empty));
  llvm::consumeError(empty.takeError());
}

} // namespace
