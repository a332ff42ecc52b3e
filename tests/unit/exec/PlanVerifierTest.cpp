//===- tests/unit/exec/PlanVerifierTest.cpp - checkPlan's rules -----------===//
//
// Each rule of exec/PlanVerifier.h fires on a small plan corrupted for it,
// with the message naming the stage, step and buffers, and none fires on
// the sound plans (tests/unit/exec/ExecTestPlans.h).
//
//===----------------------------------------------------------------------===//

#include "ExecTestPlans.h"
#include "exec/PlanVerifier.h"

#include <gtest/gtest.h>

#include <random>

using namespace planc;
using namespace planc::exec;
using namespace planc::exec::testplans;

namespace {

using Messages = std::vector<std::string>;

bool has(const Messages &messages, llvm::StringRef text) {
  for (const std::string &m : messages)
    if (m == text) return true;
  return false;
}

std::string all(const Messages &messages) {
  std::string s;
  for (const std::string &m : messages) s += m + "\n";
  return s;
}

TEST(PlanVerifierTest, SoundPlansPass) {
  EXPECT_EQ(all(checkPlan(pipelinePlan())), "");
  EXPECT_EQ(all(checkPlan(pingPlan(0, 1))), "");
  // A count of events far beyond the steps is allowed, and costs nothing.
  ExecutionPlan plan = pipelinePlan();
  plan.programs[0].events = int64_t(1) << 50;
  EXPECT_EQ(all(checkPlan(plan)), "");
}

TEST(PlanVerifierTest, BuffersAlone) {
  ExecutionPlan plan = pipelinePlan();
  plan.programs[0].buffers[0].size = 0;
  plan.programs[0].buffers[5].aliasOf = 9;
  plan.programs[1].arenaSize = 200;
  plan.programs[1].buffers[2].offset = 130;
  Messages m = checkPlan(plan);
  EXPECT_TRUE(has(m, "stage 0: buffer #0 %w: size 0 is smaller than its local block's 64 bytes")) << all(m);
  EXPECT_TRUE(has(m, "stage 0: buffer #5 %dw.sum: aliases #9, which is not another buffer of the program")) << all(m);
  EXPECT_TRUE(has(m, "stage 1: buffer #3 %dh.mb0: bytes [192, 256) end past the arena of 200 bytes")) << all(m);
  EXPECT_TRUE(has(m, "stage 1: buffer #2 %loss: offset 130 is not a multiple of the alignment 64")) << all(m);

  plan = pipelinePlan();
  plan.programs[0].buffers[2].firstStep = 2;
  plan.programs[0].buffers[2].lastStep = 1;
  m = checkPlan(plan);
  EXPECT_TRUE(has(m, "stage 0: buffer #2 %h.mb0: live range [2, 1] is not in order within the 5 steps")) << all(m);

  plan = pipelinePlan();
  plan.programs[0].buffers[4].aliasOf = 5;
  m = checkPlan(plan);
  EXPECT_TRUE(has(m, "stage 0: buffer #4 %dw: its aliasOf chain runs into a cycle")) << all(m);
  EXPECT_TRUE(has(m, "stage 0: buffer #5 %dw.sum: its aliasOf chain runs into a cycle")) << all(m);
  plan.programs[0].buffers[4].aliasOf = -1;
  plan.programs[0].buffers[5].offset = 320;
  m = checkPlan(plan);
  EXPECT_TRUE(has(m, "stage 0: buffer #5 %dw.sum: aliases #4 %dw at offset 192 but sits at offset 320")) << all(m);
}

TEST(PlanVerifierTest, LiveBuffersSharingBytes) {
  ExecutionPlan plan = pipelinePlan();
  plan.programs[0].buffers[3].offset = 64; // g.mb0 onto x.mb0, which is read at step 3
  EXPECT_EQ(all(checkPlan(plan)),
            "stage 0: buffer #3 %g.mb0: shares bytes [64, 128) with #1 %x.mb0 while both are live (steps 2 to 3)\n");
  // Bytes shared by buffers whose lives do not meet are fine: g.mb0 onto
  // h.mb0, whose life ends at step 1.
  plan.programs[0].buffers[3].offset = 128;
  EXPECT_EQ(all(checkPlan(plan)), "");
  // Without its alias the all-reduce's output collides with its input.
  plan = pipelinePlan();
  plan.programs[0].buffers[5].aliasOf = -1;
  EXPECT_EQ(all(checkPlan(plan)),
            "stage 0: buffer #5 %dw.sum: shares bytes [192, 256) with #4 %dw while both are live (steps 4 to 4)\n");
}

TEST(PlanVerifierTest, ReadBeforeWrite) {
  ExecutionPlan plan = pipelinePlan();
  plan.programs[1].steps[1].inputs = {3};
  EXPECT_EQ(all(checkPlan(plan)), "stage 1: step 1 (reduce_sum): reads #3 %dh.mb0 before it is written (at step 3)\n");
  plan = pipelinePlan();
  plan.programs[1].steps[2].accumulate.clear();
  EXPECT_EQ(all(checkPlan(plan)), "stage 1: step 2 (reduce_sum): writes #2 %loss, whose life starts at step 1, "
                                  "neither first nor accumulating nor in place\n");
  plan = pipelinePlan();
  plan.programs[0].steps[0].inputs = {-1, 0};
  EXPECT_TRUE(has(checkPlan(plan),
                  "stage 0: step 0 (matmul): reads no buffer ('none' is for stage_merge operands only)"));
}

TEST(PlanVerifierTest, WaitForAMissingEvent) {
  ExecutionPlan plan = pipelinePlan();
  plan.programs[1].steps[1].waits = {5};
  EXPECT_EQ(all(checkPlan(plan)),
            "stage 1: step 1 (reduce_sum): waits for e5, which no earlier step records\n"
            "stage 1: step 1 (reduce_sum): reads #1 %h.mb0, the output of step 0 (recv), without waiting for its event e0\n"
            "stage 1: step 2 (reduce_sum): reads #1 %h.mb0, the output of step 0 (recv), without waiting for its event e0\n");
  // A wait for an event recorded only later is no wait either.
  plan = pipelinePlan();
  plan.programs[0].steps[3].waits = {2};
  EXPECT_TRUE(has(checkPlan(plan), "stage 0: step 3 (matmul): waits for e2, which no earlier step records"));
}

TEST(PlanVerifierTest, ReadOfACommunicationOutputWithoutWaiting) {
  ExecutionPlan plan = pipelinePlan();
  plan.programs[0].steps[3].waits.clear();
  EXPECT_EQ(all(checkPlan(plan)),
            "stage 0: step 3 (matmul): reads #3 %g.mb0, the output of step 2 (recv), without waiting for its event e1\n");
}

TEST(PlanVerifierTest, EventsOfTheWrongSteps) {
  ExecutionPlan plan = pipelinePlan();
  plan.programs[0].steps[2].event = 0;
  plan.programs[0].steps[0].event = 2;
  plan.programs[1].steps[3].stream = Stream::Communication;
  plan.programs[1].steps[3].event = 1;
  Messages m = checkPlan(plan);
  EXPECT_TRUE(has(m, "stage 0: step 2 (recv): records e0, which step 1 (send) records already")) << all(m);
  EXPECT_TRUE(has(m, "stage 0: step 0 (matmul): records event e2 on the compute stream")) << all(m);
  EXPECT_TRUE(has(m, "stage 1: step 3 (mul): runs on the comm stream but does not communicate")) << all(m);
  EXPECT_TRUE(has(m, "stage 1: step 4 (send): records e1, which step 3 (mul) records already")) << all(m);
}

TEST(PlanVerifierTest, EventsDeclaredFarBeyondTheSteps) {
  // A parsed plan may declare many more events than it has steps: they are
  // looked up, not tabled, with the same findings.
  ExecutionPlan plan = pipelinePlan();
  RankProgram &p = plan.programs[0];
  p.events = int64_t(1) << 40;
  const int64_t far = (int64_t(1) << 40) - 1;
  for (Step &s : p.steps) {
    if (s.event >= 0) s.event = far - s.event;
    for (int64_t &w : s.waits) w = far - w;
  }
  EXPECT_TRUE(checkPlan(plan).empty()) << all(checkPlan(plan));
  p.steps[3].waits = {far - 5};
  EXPECT_TRUE(has(checkPlan(plan), "stage 0: step 3 (matmul): waits for e" + std::to_string(far - 5) +
                                       ", which no earlier step records"))
      << all(checkPlan(plan));
}

TEST(PlanVerifierTest, SwappedSendTagsMismatch) {
  EXPECT_EQ(all(checkPlan(pingPlan(1, 0))),
            "stage 1 step 0 (recv) expects tag 0 (16 bytes) from stage 0 but takes the message of stage 0 step 0 "
            "(send), tag 1 (16 bytes)\n"
            "stage 1 step 1 (recv) expects tag 1 (16 bytes) from stage 0 but takes the message of stage 0 step 1 "
            "(send), tag 0 (16 bytes)\n");
  ExecutionPlan plan = pingPlan(0, 1);
  plan.programs[1].buffers[1].editValue().local = {2};
  EXPECT_EQ(all(checkPlan(plan)), "stage 1 step 1 (recv) expects tag 1 (8 bytes) from stage 0 but takes the message "
                                  "of stage 0 step 1 (send), tag 1 (16 bytes)\n");
}

TEST(PlanVerifierTest, DeadlockOfTwoRecvsFirst) {
  EXPECT_EQ(all(checkPlan(pingPlan(0, 0, /*recvFirst=*/true))),
            "deadlock: stage 0 step 0 (recv) waits for tag 1 from stage 1; stage 1 step 0 (recv) waits for tag 0 from "
            "stage 0\n");
}

TEST(PlanVerifierTest, UnreceivedMessagesAndALonePipelineCollective) {
  ExecutionPlan plan = pingPlan(0, 1);
  plan.programs[1].steps.pop_back();
  plan.programs[1].buffers[1].firstStep = kBeforeSteps;
  EXPECT_EQ(all(checkPlan(plan)),
            "stage 0 step 1 (send): its message, tag 1 (16 bytes), to stage 1 is never received\n");

  plan = pingPlan(0, 1);
  Step reduce = comm(step(ir::OpKind::AllReduce, ir::Work::Forward, 0, {0}, {0}, {{"axis", "pp"}}), 1);
  plan.programs[1].steps.push_back(reduce);
  plan.programs[1].events = 3;
  plan.programs[1].steps.back().event = 2;
  plan.programs[1].steps.back().waits = {0};
  EXPECT_EQ(all(checkPlan(plan)),
            "deadlock: stage 0 has ended; stage 1 step 2 (all_reduce) waits for every stage's collective over pp\n");
  // Both stages at one: it completes, and the two must be of one kind and size.
  plan.programs[0].events = 3;
  plan.programs[0].steps.push_back(reduce);
  plan.programs[0].steps.back().event = 2;
  EXPECT_EQ(all(checkPlan(plan)), "");
  plan.programs[0].steps.back().kind = ir::OpKind::AllGather;
  EXPECT_EQ(all(checkPlan(plan)), "stage 1 step 2 (all_reduce) (16 bytes) meets stage 0 step 2 (all_gather) (16 bytes) "
                                  "in one collective over pp: they differ\n");
}

} // namespace

namespace {

/// Whether the aliasOf chain from `i` reaches `j` (chains here end).
bool chainReaches(const RankProgram &p, int64_t i, int64_t j) {
  for (i = p.buffers[size_t(i)].aliasOf; i >= 0; i = p.buffers[size_t(i)].aliasOf)
    if (i == j) return true;
  return false;
}

TEST(PlanVerifierTest, SweepFindsWhatComparingEveryPairFinds) {
  // Random programs in a small arena: the sweep reports a pair of live
  // buffers sharing bytes exactly when comparing every pair finds one.
  std::mt19937 random(7);
  int withClash = 0;
  for (int round = 0; round < 2000; ++round) {
    ExecutionPlan plan;
    RankProgram p;
    p.ranks = {0};
    p.arenaSize = 64 * 8;
    int steps = 1 + int(random() % 6);
    for (int s = 0; s < steps; ++s) p.steps.push_back(step(ir::OpKind::Fill, ir::Work::Forward, -1, {}, {}));
    int buffers = 1 + int(random() % 7);
    for (int i = 0; i < buffers; ++i) {
      int64_t first = int64_t(random() % (steps + 1)) - 1, last = first + int64_t(random() % 3);
      if (last >= steps) last = kAfterSteps;
      uint64_t offset = 64 * (random() % 7), size = 64 * (1 + random() % 2);
      Buffer b = buffer("b" + std::to_string(i), ir::TensorType({}, ir::DType::F32), {}, -1, offset,
                        memory::Category::Temporaries, BufferRole::Internal, first, last);
      b.size = std::min<uint64_t>(size, p.arenaSize - offset);
      if (i > 0 && random() % 4 == 0) {
        b.aliasOf = int64_t(random() % i);
        b.offset = p.buffers[size_t(b.aliasOf)].offset;
        b.size = std::min<uint64_t>(b.size, p.arenaSize - b.offset);
      }
      p.buffers.push_back(b);
    }
    auto end = [&](int64_t s) { return s == kAfterSteps ? int64_t(steps) : s; };
    bool clash = false;
    for (size_t i = 0; i < p.buffers.size(); ++i)
      for (size_t j = 0; j < i; ++j) {
        const Buffer &x = p.buffers[i], &y = p.buffers[j];
        bool time = std::max(x.firstStep, y.firstStep) <= std::min(end(x.lastStep), end(y.lastStep));
        bool bytes = x.offset < y.offset + y.size && y.offset < x.offset + x.size;
        if (time && bytes && !chainReaches(p, int64_t(i), int64_t(j)) && !chainReaches(p, int64_t(j), int64_t(i)))
          clash = true;
      }
    plan.programs.push_back(p);
    bool reported = false;
    for (const std::string &m : checkPlan(plan)) reported |= m.find("shares bytes") != std::string::npos;
    EXPECT_EQ(reported, clash) << "round " << round << "\n" << all(checkPlan(plan));
    withClash += clash;
  }
  // Both outcomes occur often enough to matter.
  EXPECT_GT(withClash, 200);
  EXPECT_LT(withClash, 1800);
}

} // namespace
