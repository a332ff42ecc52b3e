//===- tests/unit/exec/ExecTestPlans.h - small execution plans by hand -*- C++ -*-===//
//
// Plans the exec tests print, parse and verify, built field by field so a
// test can corrupt exactly one thing:
//
//   pipelinePlan()  dp=2 x pp=2, one micro-batch. Stage 0 (ranks 0, 2)
//                   computes h, sends it to stage 1, receives the gradient
//                   back, waits for it, computes dw and all-reduces it over
//                   dp in place (an alias). Stage 1 (ranks 1, 3) receives h,
//                   waits, computes the loss, accumulates into it and sends
//                   the gradient back. Sound: checkPlan finds nothing.
//   pingPlan(...)   pp=2: stage 0 sends two messages (tags given), stage 1
//                   receives tags 0 and 1 in that order; or each stage
//                   receives first (a deadlock).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_TESTS_UNIT_EXEC_EXECTESTPLANS_H
#define PLANC_TESTS_UNIT_EXEC_EXECTESTPLANS_H

#include "exec/ExecutionPlan.h"

namespace planc::exec::testplans {

inline Buffer buffer(std::string name, ir::TensorType type, Shape local, int slot, uint64_t offset,
                     memory::Category category, BufferRole role, int64_t first, int64_t last) {
  Buffer b;
  b.name = std::move(name);
  b.slot = slot;
  b.setValue(BufferValue{slot >= 0 ? b.name.substr(0, b.name.rfind(".mb")) : b.name, std::move(type), std::move(local)});
  b.offset = offset;
  b.size = 64;
  b.category = category;
  b.role = role;
  b.firstStep = first;
  b.lastStep = last;
  return b;
}

inline Step step(ir::OpKind kind, ir::Work work, int microBatch, std::vector<int64_t> inputs,
                 std::vector<int64_t> outputs, ir::AttrMap attrs = {}) {
  Step s;
  s.kind = kind;
  s.work = work;
  s.microBatch = microBatch;
  s.inputs = std::move(inputs);
  s.outputs = std::move(outputs);
  s.attrs = std::move(attrs);
  return s;
}

inline Step comm(Step s, int64_t event) {
  s.stream = Stream::Communication;
  s.event = event;
  return s;
}

/// f32[2, 4] split over dp: each rank holds [1, 4].
inline ir::TensorType rowsOverDp() {
  ir::TensorType t({2, 4}, ir::DType::F32);
  t.sharding.dims[0] = {MeshAxis::DP};
  return t;
}

inline ExecutionPlan pipelinePlan() {
  using ir::OpKind;
  using ir::Work;
  using memory::Category;
  ExecutionPlan plan;
  plan.name = "tiny";
  plan.mesh[unsigned(MeshAxis::DP)] = 2;
  plan.mesh[unsigned(MeshAxis::PP)] = 2;
  plan.schedule.stages = 2;
  plan.schedule.microBatches = 1;
  ir::TensorType square({4, 4}, ir::DType::F32);

  RankProgram s0;
  s0.stage = 0;
  s0.ranks = {0, 2};
  s0.arenaSize = 384;
  s0.events = 3;
  s0.buffers = {
      buffer("w", square, {4, 4}, -1, 0, Category::Parameters, BufferRole::Param, kBeforeSteps, kAfterSteps),
      buffer("x.mb0", rowsOverDp(), {1, 4}, 0, 64, Category::Activations, BufferRole::Input, kBeforeSteps, 3),
      buffer("h.mb0", rowsOverDp(), {1, 4}, 0, 128, Category::Activations, BufferRole::Internal, 0, 1),
      buffer("g.mb0", rowsOverDp(), {1, 4}, 0, 256, Category::Communication, BufferRole::Internal, 2, 3),
      buffer("dw", square, {4, 4}, -1, 192, Category::Gradients, BufferRole::Internal, 3, 4),
      buffer("dw.sum", square, {4, 4}, -1, 192, Category::Gradients, BufferRole::Internal, 4, kAfterSteps),
  };
  s0.buffers[0].path = "w";
  s0.buffers[1].path = "x";
  s0.buffers[5].aliasOf = 4;
  s0.steps = {
      step(OpKind::MatMul, Work::Forward, 0, {1, 0}, {2}),
      comm(step(OpKind::Send, Work::Forward, 0, {2}, {}, {{"axis", "pp"}, {"peer_offset", int64_t(1)}, {"tag", int64_t(0)}}), 0),
      comm(step(OpKind::Recv, Work::Backward, 0, {}, {3},
                {{"axis", "pp"}, {"peer_offset", int64_t(1)}, {"tag", int64_t(1)},
                 {"shape", std::vector<int64_t>{2, 4}}, {"dtype", "f32"}}),
           1),
      step(OpKind::MatMul, Work::Backward, 0, {1, 3}, {4}, {{"transpose_a", true}}),
      comm(step(OpKind::AllReduce, Work::Backward, -1, {4}, {5}, {{"axis", "dp"}}), 2),
  };
  s0.steps[0].loc = {"tiny.plan", 3, 7};
  s0.steps[0].path = "blocks.0";
  s0.steps[3].waits = {1};
  s0.outputs = {{"grad.w", ir::OutputRole::ParamGradient, "w", "", 5}};

  RankProgram s1;
  s1.stage = 1;
  s1.ranks = {1, 3};
  s1.arenaSize = 256;
  s1.events = 2;
  s1.buffers = {
      buffer("w2", square, {4, 4}, -1, 0, Category::Parameters, BufferRole::Param, kBeforeSteps, kAfterSteps),
      buffer("h.mb0", rowsOverDp(), {1, 4}, 0, 64, Category::Communication, BufferRole::Internal, 0, 2),
      buffer("loss", ir::TensorType({}, ir::DType::F32), {}, -1, 128, Category::Activations, BufferRole::Internal, 1,
             kAfterSteps),
      buffer("dh.mb0", rowsOverDp(), {1, 4}, 0, 192, Category::Gradients, BufferRole::Internal, 3, 4),
  };
  s1.buffers[0].path = "w2";
  s1.steps = {
      comm(step(OpKind::Recv, Work::Forward, 0, {}, {1},
                {{"axis", "pp"}, {"peer_offset", int64_t(-1)}, {"tag", int64_t(0)},
                 {"shape", std::vector<int64_t>{2, 4}}, {"dtype", "f32"}}),
           0),
      step(OpKind::ReduceSum, Work::Forward, 0, {1}, {2}, {{"dims", std::vector<int64_t>{0, 1}}}),
      step(OpKind::ReduceSum, Work::Forward, 0, {1}, {2}, {{"dims", std::vector<int64_t>{0, 1}}}),
      step(OpKind::Mul, Work::Backward, 0, {2, 0}, {3}),
      comm(step(OpKind::Send, Work::Backward, 0, {3}, {}, {{"axis", "pp"}, {"peer_offset", int64_t(1)}, {"tag", int64_t(1)}}), 1),
  };
  s1.steps[1].waits = {0};
  s1.steps[2].accumulate = {true};
  s1.outputs = {{"loss", ir::OutputRole::Loss, "", "", 2}};

  plan.programs = {std::move(s0), std::move(s1)};
  return plan;
}

/// pp=2. recvFirst: each stage receives before it sends (stage 0 tag 1, stage
/// 1 tag 0): a deadlock. Otherwise stage 0 sends `tagA` then `tagB` and
/// stage 1 receives tags 0 then 1.
inline ExecutionPlan pingPlan(int64_t tagA, int64_t tagB, bool recvFirst = false) {
  using ir::OpKind;
  using ir::Work;
  ExecutionPlan plan;
  plan.name = "ping";
  plan.mesh[unsigned(MeshAxis::PP)] = 2;
  plan.schedule.stages = 2;
  ir::TensorType t({4}, ir::DType::F32);
  auto send = [](int64_t in, int64_t tag, int64_t event) {
    return comm(step(OpKind::Send, Work::Forward, 0, {in}, {}, {{"axis", "pp"}, {"peer_offset", int64_t(1)}, {"tag", tag}}), event);
  };
  auto recv = [](int64_t out, int64_t tag, int64_t event) {
    return comm(step(OpKind::Recv, Work::Forward, 0, {}, {out}, {{"axis", "pp"}, {"peer_offset", int64_t(1)}, {"tag", tag}}), event);
  };
  for (int stage = 0; stage < 2; ++stage) {
    RankProgram p;
    p.stage = stage;
    p.ranks = {stage};
    p.arenaSize = 128;
    p.events = 2;
    p.buffers = {buffer("a", t, {4}, -1, 0, memory::Category::Communication, BufferRole::Internal, kBeforeSteps, kAfterSteps),
                 buffer("b", t, {4}, -1, 64, memory::Category::Communication, BufferRole::Internal, kBeforeSteps, kAfterSteps)};
    if (recvFirst) {
      // Written by the recv at step 0: a's life starts there.
      p.buffers[0].firstStep = 0;
      p.steps = {recv(0, stage == 0 ? 1 : 0, 0), send(1, stage == 0 ? 0 : 1, 1)};
    } else if (stage == 0) {
      p.steps = {send(0, tagA, 0), send(1, tagB, 1)};
    } else {
      p.buffers[0].firstStep = 0;
      p.buffers[1].firstStep = 1;
      p.steps = {recv(0, 0, 0), recv(1, 1, 1)};
    }
    plan.programs.push_back(std::move(p));
  }
  return plan;
}

} // namespace planc::exec::testplans

#endif
