//===- tests/unit/exec/PlanTextTest.cpp - printing and parsing plans ------===//
//
// The text form of exec/PlanPrinter.h read back by exec/PlanParser.h: the
// lines of a small plan written out by hand, parse(print(p)) == p and
// print(parse(print(p))) == print(p), the rank form's concrete groups and
// peers on a dp=2 x pp=2 mesh, and file:line:col errors on bad text.
//
//===----------------------------------------------------------------------===//

#include "ExecTestPlans.h"
#include "exec/Groups.h"
#include "exec/PlanParser.h"
#include "exec/PlanPrinter.h"

#include <gtest/gtest.h>

using namespace planc;
using namespace planc::exec;
using namespace planc::exec::testplans;

namespace {

const char *kPipelineText =
    "plan @tiny mesh [dp=2, pp=2] schedule 1f1b stages 2 micro_batches 1 chunks 1 alignment 64\n"
    "program stage 0 ranks [0, 2] arena 384 events 3 {\n"
    "  #0 %w : f32[4, 4] local [4, 4] once at 0 size 64 parameters param path \"w\" live [before, after]\n"
    "  #1 %x.mb0 : f32[2, 4]{shard(0, dp)} local [1, 4] mb0 at 64 size 64 activations input path \"x\" live [before, 3]\n"
    "  #2 %h.mb0 : f32[2, 4]{shard(0, dp)} local [1, 4] mb0 at 128 size 64 activations internal live [0, 1]\n"
    "  #3 %g.mb0 : f32[2, 4]{shard(0, dp)} local [1, 4] mb0 at 256 size 64 communication internal live [2, 3]\n"
    "  #4 %dw : f32[4, 4] local [4, 4] once at 192 size 64 gradients internal live [3, 4]\n"
    "  #5 %dw.sum : f32[4, 4] local [4, 4] once at 192 size 64 gradients internal alias #4 live [4, after]\n"
    "  0: forward mb0 c0 compute matmul (#1, #0) -> (#2) loc(\"tiny.plan\":3:7) path \"blocks.0\"\n"
    "  1: forward mb0 c0 comm send (#2) -> () {axis = \"pp\", peer_offset = 1, tag = 0} event e0\n"
    "  2: backward mb0 c0 comm recv () -> (#3) {axis = \"pp\", dtype = \"f32\", peer_offset = 1, shape = [2, 4], tag = 1} event e1\n"
    "  3: backward mb0 c0 compute matmul (#1, #3) -> (#4) {transpose_a = true} waits [e1]\n"
    "  4: backward once c0 comm all_reduce (#4) -> (#5) {axis = \"dp\"} event e2\n"
    "  output \"grad.w\" param_gradient path \"w\" #5\n"
    "}\n"
    "program stage 1 ranks [1, 3] arena 256 events 2 {\n"
    "  #0 %w2 : f32[4, 4] local [4, 4] once at 0 size 64 parameters param path \"w2\" live [before, after]\n"
    "  #1 %h.mb0 : f32[2, 4]{shard(0, dp)} local [1, 4] mb0 at 64 size 64 communication internal live [0, 2]\n"
    "  #2 %loss : f32[] local [] once at 128 size 64 activations internal live [1, after]\n"
    "  #3 %dh.mb0 : f32[2, 4]{shard(0, dp)} local [1, 4] mb0 at 192 size 64 gradients internal live [3, 4]\n"
    "  0: forward mb0 c0 comm recv () -> (#1) {axis = \"pp\", dtype = \"f32\", peer_offset = -1, shape = [2, 4], tag = 0} event e0\n"
    "  1: forward mb0 c0 compute reduce_sum (#1) -> (#2) {dims = [0, 1]} waits [e0]\n"
    "  2: forward mb0 c0 compute reduce_sum (#1) -> (#2) {dims = [0, 1]} accumulate [0]\n"
    "  3: backward mb0 c0 compute mul (#2, #0) -> (#3)\n"
    "  4: backward mb0 c0 comm send (#3) -> () {axis = \"pp\", peer_offset = 1, tag = 1} event e1\n"
    "  output \"loss\" loss #2\n"
    "}\n";

ExecutionPlan parseOrFail(llvm::StringRef text) {
  llvm::Expected<ExecutionPlan> plan = parsePlan(text, "t.exec");
  if (!plan) {
    ADD_FAILURE() << llvm::toString(plan.takeError());
    return {};
  }
  return std::move(*plan);
}

/// The first line of the error of parsing `text` as t.exec, or "<parsed>".
std::string firstError(llvm::StringRef text) {
  llvm::Expected<ExecutionPlan> plan = parsePlan(text, "t.exec");
  if (plan) return "<parsed>";
  return llvm::StringRef(llvm::toString(plan.takeError())).split('\n').first.str();
}

TEST(PlanTextTest, PrintsEveryBufferAndStepOnItsLine) {
  EXPECT_EQ(toText(pipelinePlan()), kPipelineText);
}

TEST(PlanTextTest, RoundTripsThroughText) {
  ExecutionPlan plan = pipelinePlan();
  ExecutionPlan back = parseOrFail(toText(plan));
  EXPECT_TRUE(back == plan);
  EXPECT_EQ(toText(back), toText(plan));
  EXPECT_EQ(toText(parseOrFail(kPipelineText)), kPipelineText);
}

TEST(PlanTextTest, ParsedBuffersOfOneValueShareIt) {
  ExecutionPlan plan = pipelinePlan();
  // %h in a second slot, and a buffer of %h that holds another block.
  std::vector<Buffer> &buffers = plan.programs[0].buffers;
  buffers.push_back(buffer("h.mb1", rowsOverDp(), {1, 4}, 1, 320, memory::Category::Activations,
                           BufferRole::Internal, 0, 1));
  buffers.push_back(buffer("h.mb2", rowsOverDp(), {2, 4}, 2, 384, memory::Category::Activations,
                           BufferRole::Internal, 0, 1));
  auto parsed = parsePlan(toText(plan), "plan.txt");
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  EXPECT_TRUE(*parsed == plan);
  const std::vector<Buffer> &back = parsed->programs[0].buffers;
  const Buffer &mb0 = back[2], &mb1 = back[back.size() - 2], &mb2 = back.back();
  ASSERT_EQ(mb0.name, "h.mb0");
  EXPECT_EQ(mb0.sharedValue(), mb1.sharedValue());
  EXPECT_NE(mb0.sharedValue(), mb2.sharedValue());
  EXPECT_EQ(mb2.value(), "h");
  // Programs do not share: stage 1's %h.mb0 is its own.
  EXPECT_NE(parsed->programs[1].buffers[1].sharedValue(), mb0.sharedValue());
}

TEST(PlanTextTest, RoundTripsOddValuesToo) {
  // Fields away from their defaults, names that need quotes, a value that is
  // not the name without its slot, negative numbers the printer spells with
  // a prefix, and a stage_merge operand made on another stage.
  ExecutionPlan plan = pipelinePlan();
  plan.name = "odd name";
  plan.schedule.style = ScheduleStyle::Interleaved;
  plan.schedule.virtualStages = 2;
  plan.alignment = 256;
  Buffer &b = plan.programs[0].buffers[2];
  b.name = "h with space.mb0";
  b.editValue().name = "other";
  b.path = "a \"quoted\" path";
  Step &s = plan.programs[0].steps[0];
  s.kind = ir::OpKind::StageMerge;
  s.inputs = {-1, 1};
  s.chunk = -3;
  s.microBatch = -2;
  s.event = -5;
  s.waits = {-1, 7};
  s.attrs["float"] = 0.5;
  s.attrs["odd key"] = std::string("x\ny");
  plan.programs[1].outputs.push_back({"new.w2", ir::OutputRole::StateUpdate, "w2.m", "w2", -1});
  plan.programs[1].buffers[3].slot = 4;
  ExecutionPlan back = parseOrFail(toText(plan));
  EXPECT_TRUE(back == plan) << toText(back);
  EXPECT_EQ(toText(back), toText(plan));
}

TEST(PlanTextTest, RankFormNamesGroupsAndPeers) {
  ExecutionPlan plan = pipelinePlan();
  // rank = pp + 2 * dp: rank 2 is dp 1, pp 0; its pp group is [2, 3], its dp
  // group [0, 2]; rank 3 (dp 1, pp 1) receives from pp 0 (offset -1), rank 2.
  std::string rank2 = rankProgramText(plan, 2);
  EXPECT_NE(rank2.find("program stage 0 ranks [0, 2] rank 2 arena 384 events 3 {\n"), std::string::npos) << rank2;
  EXPECT_NE(rank2.find("tag = 0} event e0 group [2, 3] peer 3\n"), std::string::npos) << rank2;
  EXPECT_NE(rank2.find("tag = 1} event e1 group [2, 3] peer 3\n"), std::string::npos) << rank2;
  EXPECT_NE(rank2.find("{axis = \"dp\"} event e2 group [0, 2]\n"), std::string::npos) << rank2;
  EXPECT_EQ(rank2.find("program stage 1"), std::string::npos);
  // Compute steps carry no group.
  EXPECT_NE(rank2.find("{transpose_a = true} waits [e1]\n"), std::string::npos);

  std::string rank3 = rankProgramText(plan, 3);
  EXPECT_NE(rank3.find("tag = 0} event e0 group [2, 3] peer 2\n"), std::string::npos) << rank3;
  EXPECT_NE(rank3.find("tag = 1} event e1 group [2, 3] peer 2\n"), std::string::npos) << rank3;

  EXPECT_EQ(groupOf(plan, plan.programs[0].steps[4], 1), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(peerOf(plan, plan.programs[1].steps[0], 1), 0);
  EXPECT_EQ(peerOf(plan, plan.programs[0].steps[4], 0), -1); // a collective has no peer
  EXPECT_EQ(&plan.programOf(3), &plan.programs[1]);
  EXPECT_EQ(&plan.programOf(2), &plan.programs[0]);
}

TEST(PlanTextTest, RankFormParsesToItsOneProgram) {
  ExecutionPlan plan = pipelinePlan();
  ExecutionPlan one = parseOrFail(rankProgramText(plan, 3));
  ASSERT_EQ(one.programs.size(), 1u);
  EXPECT_TRUE(one.programs[0] == plan.programs[1]);
  EXPECT_EQ(one.mesh, plan.mesh);
  EXPECT_EQ(&one.programOf(3), &one.programs[0]);
  EXPECT_EQ(rankProgramText(one, 3), rankProgramText(plan, 3));
}

TEST(PlanTextTest, RankFormAnnotationsAreChecked) {
  std::string text = rankProgramText(pipelinePlan(), 2);
  std::string wrongPeer = text;
  size_t at = wrongPeer.find("peer 3");
  wrongPeer.replace(at, 6, "peer 1");
  EXPECT_NE(firstError(wrongPeer).find("error: the peer of rank 2 for this step is 3"), std::string::npos)
      << firstError(wrongPeer);
  std::string wrongGroup = text;
  at = wrongGroup.find("group [0, 2]");
  wrongGroup.replace(at, 12, "group [2, 0]");
  EXPECT_NE(firstError(wrongGroup).find("error: the group of rank 2 for this step is [0, 2]"), std::string::npos);
  std::string missing = text;
  at = missing.find(" group [0, 2]");
  missing.erase(at, 13);
  EXPECT_NE(firstError(missing).find("expected the step's 'group [ranks]'"), std::string::npos);
  // The rank must run the program it annotates.
  std::string wrongRank = text;
  at = wrongRank.find("rank 2 arena");
  wrongRank.replace(at, 6, "rank 1");
  EXPECT_NE(firstError(wrongRank).find("error: rank 1 runs stage 1, not stage 0"), std::string::npos);
  // Annotations belong to the rank form only.
  std::string whole = toText(pipelinePlan());
  at = whole.find("event e2");
  whole.insert(at + 8, " group [0, 2]");
  EXPECT_NE(firstError(whole).find("error: 'group' annotates the rank form only"), std::string::npos);
}

const char *kSmall =
    "plan @p mesh [] schedule gpipe stages 1 micro_batches 1 chunks 1 alignment 64\n"
    "program stage 0 ranks [0] arena 64 events 0 {\n"
    "  #0 %a : f32[4] local [4] once at 0 size 64 temporaries internal live [0, 0]\n"
    "  0: forward once c0 compute neg (#0) -> (#0)\n"
    "}\n";

/// kSmall with `from` (which must occur) replaced by `to`.
std::string smallWith(llvm::StringRef from, llvm::StringRef to) {
  std::string text = kSmall;
  size_t at = text.find(from.str());
  EXPECT_NE(at, std::string::npos) << from.str();
  if (at != std::string::npos) text.replace(at, from.size(), to.str());
  return text;
}

TEST(PlanTextTest, ParseErrorsNameTheFileLineAndColumn) {
  EXPECT_EQ(firstError(kSmall), "<parsed>");
  EXPECT_EQ(firstError(smallWith("neg", "nag")), "t.exec:4:30: error: unknown op 'nag'; did you mean 'neg'?");
  EXPECT_EQ(firstError(smallWith("-> ", "")), "t.exec:4:39: error: expected '->', found '('");
  EXPECT_EQ(firstError(smallWith("#0 %a", "#1 %a")),
            "t.exec:3:4: error: expected buffer #0 here, buffers are numbered in order");
  EXPECT_EQ(firstError(smallWith("temporaries", "scratch")),
            "t.exec:3:46: error: unknown memory category 'scratch' (parameters, gradients, optimizer_state, "
            "activations, temporaries, communication)");
  EXPECT_EQ(firstError(smallWith("mesh []", "mesh [dp=0]")), "t.exec:1:18: error: a mesh axis has at least one rank");
  EXPECT_EQ(firstError(smallWith("mesh []", "mesh [dp=4096, tp=4096]")),
            "t.exec:1:9: error: the mesh has more than 4194304 (2^22) ranks");
  EXPECT_EQ(firstError(smallWith("gpipe", "2f2b")),
            "t.exec:1:26: error: unknown schedule style '2f2b' (gpipe, 1f1b, interleaved, zero_bubble)");
  EXPECT_EQ(firstError(smallWith("c0 compute", "chunk compute")),
            "t.exec:4:19: error: expected the model chunk such as 'c0', found 'chunk'");
  EXPECT_EQ(firstError(smallWith("live [0, 0]", "live [0 0]")), "t.exec:3:75: error: expected ',', found '0'");
  EXPECT_EQ(firstError(smallWith("}\n", "")), "t.exec:5:1: error: expected a buffer '#<i>', a step '<i>:', an "
                                              "'output' or '}', found end of input");
  EXPECT_EQ(firstError(smallWith("%a", "%a\x01")), "t.exec:3:8: error: unexpected byte 0x01");
  EXPECT_EQ(firstError(smallWith("size 64", "size -64")), "t.exec:3:43: error: the buffer's size in bytes is not negative");
  EXPECT_EQ(firstError(smallWith("(#0) ->", "(#0")), "t.exec:4:38: error: expected ')', found '('");
  EXPECT_EQ(firstError("plan @p mesh [] schedule"), "t.exec:1:25: error: expected a schedule style, found end of input");
  EXPECT_EQ(firstError(""), "t.exec:1:1: error: expected 'plan', found end of input");
}

TEST(PlanTextTest, NeverCrashesOnCutOrMangledText) {
  // Every prefix of a plan, and every prefix with one byte flipped, parses or
  // fails with a message: none crashes.
  std::string text = kPipelineText;
  for (size_t n = 0; n < text.size(); n += 7) {
    (void)firstError(text.substr(0, n));
    std::string mangled = text;
    mangled[n] = char(mangled[n] ^ 0x25);
    (void)firstError(mangled);
  }
  EXPECT_EQ(firstError(text.substr(0, text.size() - 2)),
            "t.exec:27:1: error: expected a buffer '#<i>', a step '<i>:', an 'output' or '}', found end of input");
}

} // namespace
