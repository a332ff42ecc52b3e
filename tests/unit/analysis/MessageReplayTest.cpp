//===- tests/unit/analysis/MessageReplayTest.cpp - the one deadlock replay -===//
//
// analysis/MessageReplay.h on hand-written views: messages matched in order
// by tag and size, collectives completing together, the observer stopping
// the replay or letting it go on, and what is left when programs are stuck
// or a message is never received.

#include "analysis/MessageReplay.h"

#include <gtest/gtest.h>

using namespace planc;
using namespace planc::replay;

namespace {

Event send(int64_t peer, int64_t tag, size_t at, uint64_t bytes = 4) { return {Event::Send, peer, tag, bytes, at}; }
Event recv(int64_t peer, int64_t tag, size_t at, uint64_t bytes = 4) { return {Event::Recv, peer, tag, bytes, at}; }
Event collective(size_t at, uint64_t bytes = 4) { return {Event::Collective, -1, 0, bytes, at}; }

struct Recorder : Observer {
  bool goOn = true;
  std::vector<std::string> seen;
  bool mismatch(size_t to, const Event &r, size_t from, const Event &s) override {
    seen.push_back("mismatch " + std::to_string(to) + "@" + std::to_string(r.at) + " from " + std::to_string(from) +
                   "@" + std::to_string(s.at));
    return goOn;
  }
  bool collective(const std::vector<const Event *> &at) override {
    std::string t = "collective";
    for (const Event *e : at) t += " " + std::to_string(e->at);
    seen.push_back(t);
    return goOn;
  }
  void noPeer(size_t p, const Event &e) override { seen.push_back("no peer " + std::to_string(p) + "@" + std::to_string(e.at)); }
};

TEST(MessageReplayTest, MatchedMessagesAndCollectivesEnd) {
  // Program 0 sends tags 0 and 1, meets 1 at a collective, receives tag 2;
  // program 1 receives both, sends tag 2 after the collective.
  std::vector<std::vector<Event>> programs = {
      {send(1, 0, 0), send(1, 1, 1), collective(2), recv(1, 2, 3)},
      {recv(0, 0, 0), recv(0, 1, 1), collective(2), send(0, 2, 3)},
  };
  Recorder r;
  ReplayEnd end = replayMessages(programs, r);
  EXPECT_FALSE(end.stopped);
  EXPECT_TRUE(end.ended(programs, 0));
  EXPECT_TRUE(end.ended(programs, 1));
  EXPECT_TRUE(end.unreceived.empty());
  EXPECT_EQ(r.seen, (std::vector<std::string>{"collective 2 2"}));
}

TEST(MessageReplayTest, MismatchesStopOrGoOn) {
  // Tags in the other order, and a size that differs.
  std::vector<std::vector<Event>> programs = {
      {send(1, 0, 0), send(1, 1, 1, 8)},
      {recv(0, 1, 5), recv(0, 0, 6)},
  };
  Recorder stop;
  stop.goOn = false;
  ReplayEnd end = replayMessages(programs, stop);
  EXPECT_TRUE(end.stopped);
  EXPECT_EQ(stop.seen, (std::vector<std::string>{"mismatch 1@5 from 0@0"}));

  Recorder all;
  end = replayMessages(programs, all);
  EXPECT_FALSE(end.stopped);
  EXPECT_EQ(all.seen, (std::vector<std::string>{"mismatch 1@5 from 0@0", "mismatch 1@6 from 0@1"}));
  EXPECT_TRUE(end.ended(programs, 1));
}

TEST(MessageReplayTest, StuckProgramsAndUnreceivedMessagesAreLeft) {
  // Each receives first: neither moves. A third program's message to the
  // first is never taken, and a send without peer is passed over.
  std::vector<std::vector<Event>> programs = {
      {recv(1, 0, 0), send(1, 1, 1)},
      {recv(0, 1, 0), send(0, 0, 1)},
      {send(-1, 0, 0), send(0, 7, 1)},
  };
  Recorder r;
  ReplayEnd end = replayMessages(programs, r);
  EXPECT_FALSE(end.stopped);
  EXPECT_EQ(end.next, (std::vector<size_t>{0, 0, 2}));
  EXPECT_EQ(r.seen, (std::vector<std::string>{"no peer 2@0"}));
  ASSERT_EQ(end.unreceived.size(), 1u);
  EXPECT_EQ(end.unreceived.begin()->first, (std::pair<size_t, size_t>{2, 0}));
  EXPECT_EQ(end.unreceived.begin()->second.front()->tag, 7);
}

TEST(MessageReplayTest, ACollectiveWaitsForEveryProgram) {
  std::vector<std::vector<Event>> programs = {{collective(0)}, {recv(0, 0, 0), collective(1)}};
  Recorder r;
  ReplayEnd end = replayMessages(programs, r);
  EXPECT_TRUE(r.seen.empty());
  EXPECT_EQ(end.next, (std::vector<size_t>{0, 0}));
}

} // namespace
