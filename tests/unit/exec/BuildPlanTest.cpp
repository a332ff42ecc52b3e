//===- tests/unit/exec/BuildPlanTest.cpp - execution plans of real plans ----===//
//
// The builder on compiled plans of several shapes (one device, data,
// tensor and pipeline parallel, ZeRO, an encoder and a classifier): every
// plan is sound by its verifier, round-trips through its text, holds the
// memory plan's arena and buffers, and carries what each micro-batch
// changes (the 1/m seed, distinct tags, the loss's mean).

#include "backend/c/CLanguage.h"
#include "backend/c/ProgramKernels.h"
#include "compiler/Pipeline.h"
#include "exec/Groups.h"
#include "exec/PlanParser.h"
#include "exec/PlanPrinter.h"
#include "exec/PlanVerifier.h"
#include "frontend/Frontend.h"
#include "frontend/Verify.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>

using namespace planc;
using namespace planc::exec;

namespace {

std::string sourcePath(const std::string &rel) {
  const char *root = std::getenv("PLANC_SOURCE_DIR");
  if (!root) root = PLANC_SOURCE_DIR;
  return std::string(root) + "/" + rel;
}

struct Compiled {
  CompileResult result;
  bool ok = false;
};

Compiled compilePlan(const std::string &file, std::vector<std::string> sets) {
  FrontendOptions fo;
  fo.setOverrides = std::move(sets);
  Compilation c(fo);
  auto consumer = std::make_unique<CollectingConsumer>();
  CollectingConsumer *diags = consumer.get();
  c.setDiagnosticConsumer(std::move(consumer));
  Compiled out;
  if (!c.loadFile(sourcePath(file)) || !c.check()) {
    std::string text;
    for (const Diagnostic &d : diags->diagnostics) text += d.message + "\n";
    ADD_FAILURE() << file << ": the frontend rejected the plan:\n" << text;
    return out;
  }
  CompileOptions options;
  options.stopAfter = CompileStage::ExecutionPlanned;
  auto r = compile(c, options);
  if (!r) {
    ADD_FAILURE() << file << ": " << llvm::toString(r.takeError());
    return out;
  }
  out.result = std::move(*r);
  out.ok = true;
  return out;
}

struct Case {
  const char *file;
  std::vector<std::string> sets;
};

const std::vector<Case> &cases() {
  static const std::vector<Case> all = {
      {"examples/tiny-gpt.plan", {}},
      {"examples/tiny-gpt.plan", {"parallel.mesh.dp=2", "cluster.gpus_per_node=2", "train.global_batch=16", "parallel.zero=1"}},
      {"examples/tiny-gpt.plan",
       {"parallel.mesh.pp=2", "cluster.gpus_per_node=2", "train.global_batch=16",
        "parallel.pipeline=1f1b(micro_batches = 4)"}},
      {"examples/tiny-gpt.plan",
       {"parallel.mesh.pp=2", "cluster.gpus_per_node=2", "train.global_batch=8", "train.micro_batch=2",
        "parallel.pipeline=zero_bubble(micro_batches = 4)"}},
      {"examples/tiny-llama.plan", {}},
      {"tests/lit/verify/Inputs/encoder.plan", {}},
      {"tests/lit/verify/Inputs/classifier.plan", {}},
  };
  return all;
}

TEST(BuildPlanTest, EveryPlanIsSoundAndRoundTrips) {
  for (const Case &k : cases()) {
    SCOPED_TRACE(std::string(k.file) + " " + (k.sets.empty() ? "" : k.sets.front()));
    Compiled c = compilePlan(k.file, k.sets);
    ASSERT_TRUE(c.ok);
    const ExecutionPlan &plan = *c.result.plan;
    std::vector<std::string> problems = checkPlan(plan);
    EXPECT_TRUE(problems.empty()) << problems.front();
    std::string text = toText(plan);
    auto parsed = parsePlan(text, "plan.exec");
    ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
    EXPECT_TRUE(*parsed == plan);
    EXPECT_EQ(toText(*parsed), text);
  }
}

TEST(BuildPlanTest, TheArenaIsTheLedgers) {
  for (const Case &k : cases()) {
    SCOPED_TRACE(k.file);
    Compiled c = compilePlan(k.file, k.sets);
    ASSERT_TRUE(c.ok);
    const ExecutionPlan &plan = *c.result.plan;
    const memory::MemoryPlan &memory = *c.result.memory;
    ASSERT_EQ(plan.programs.size(), memory.stages.size());
    for (size_t s = 0; s < plan.programs.size(); ++s) {
      const RankProgram &p = plan.programs[s];
      EXPECT_EQ(p.arenaSize, memory.stages[s].arena);
      EXPECT_EQ(p.ranks, memory.stages[s].ranks);
      // Every buffer the planner allocated is one of the plan's (aliases
      // reuse bytes and are not allocations).
      uint64_t allocated = 0, highest = 0;
      for (const Buffer &b : p.buffers) {
        allocated += b.aliasOf < 0;
        highest = std::max(highest, b.offset + b.size);
      }
      EXPECT_EQ(allocated, memory.stages[s].buffers);
      EXPECT_EQ(highest, p.arenaSize);
    }
  }
}

TEST(BuildPlanTest, MicroBatchesChangeTheSeedTagsAndLoss) {
  Compiled c = compilePlan("examples/tiny-gpt.plan", cases()[2].sets);
  ASSERT_TRUE(c.ok);
  const ExecutionPlan &plan = *c.result.plan;
  ASSERT_EQ(plan.schedule.microBatches, 4);
  ASSERT_EQ(plan.programs.size(), 2u);
  int seeds = 0, scales = 0;
  for (const RankProgram &p : plan.programs) {
    std::set<int64_t> sendTags, recvTags;
    std::set<int> forwardMicroBatches;
    for (const Step &s : p.steps) {
      if (s.kind == ir::OpKind::Send && s.microBatch >= 0) EXPECT_TRUE(sendTags.insert(std::get<int64_t>(s.attrs.at("tag"))).second);
      if (s.kind == ir::OpKind::Recv && s.microBatch >= 0) EXPECT_TRUE(recvTags.insert(std::get<int64_t>(s.attrs.at("tag"))).second);
      if (s.work == ir::Work::Forward && s.microBatch >= 0) forwardMicroBatches.insert(s.microBatch);
      if (s.kind == ir::OpKind::Fill && s.attrs.count("value") && !s.outputs.empty() &&
          p.buffers[size_t(s.outputs[0])].value() == "grad.loss") {
        ++seeds;
        EXPECT_DOUBLE_EQ(std::get<double>(s.attrs.at("value")), 0.25);
      }
      if (s.kind == ir::OpKind::Scale && s.microBatch == -1 && s.attrs.count("factor") &&
          std::get<double>(s.attrs.at("factor")) == 0.25)
        ++scales;
    }
    // One message per micro-batch in each direction (the tied embedding's
    // gradient crosses once more, in the optimizer phase).
    EXPECT_EQ(sendTags.size(), 4u);
    EXPECT_EQ(recvTags.size(), 4u);
    EXPECT_EQ(forwardMicroBatches, (std::set<int>{0, 1, 2, 3}));
  }
  EXPECT_EQ(seeds, 4);  // the last stage seeds backward in every micro-batch
  EXPECT_EQ(scales, 1); // and takes the mean of the losses once
}

TEST(BuildPlanTest, GradientsSumOverMicroBatches) {
  Compiled c = compilePlan("examples/tiny-gpt.plan", cases()[2].sets);
  ASSERT_TRUE(c.ok);
  // Every gradient of a parameter is written once and added to three times.
  for (const RankProgram &p : c.result.plan->programs) {
    std::map<int64_t, std::pair<int, int>> writes; // buffer -> (first writes, accumulations)
    for (const Step &s : p.steps)
      for (size_t k = 0; k < s.outputs.size(); ++k) {
        const Buffer &b = p.buffers[size_t(s.outputs[k])];
        if (b.category != memory::Category::Gradients || b.slot != -1) continue;
        auto &w = writes[s.outputs[k]];
        (s.accumulates(k) ? w.second : w.first)++;
      }
    ASSERT_FALSE(writes.empty());
    for (const auto &[buffer, w] : writes) {
      SCOPED_TRACE(p.buffers[size_t(buffer)].name);
      EXPECT_EQ(w.first, 1);
      EXPECT_EQ(w.second, 3);
    }
  }
}

// What a backend needs of the model is on the plan: every Param buffer
// carries its parameter's initialisation, and the optimizer's states (the
// frozen values the update writes) say they are no model parameter.
TEST(BuildPlanTest, ParamBuffersCarryTheirInitialisation) {
  Compiled c = compilePlan("examples/tiny-gpt.plan", {});
  ASSERT_TRUE(c.ok);
  const ir::Module &m = *c.result.module;
  std::map<std::string, const ir::Value *> params;
  for (const ir::Value *v : m.params) params[v->name] = v;
  std::set<std::string> updated;
  for (const ir::Output &o : m.outputs)
    if (o.isUpdate()) updated.insert(o.path);
  int model = 0, states = 0, zeros = 0;
  for (const RankProgram &p : c.result.plan->programs)
    for (const Buffer &b : p.buffers) {
      if (b.role != BufferRole::Param) continue;
      SCOPED_TRACE(b.name);
      auto it = params.find(b.value());
      ASSERT_NE(it, params.end());
      const ir::Value &v = *it->second;
      EXPECT_EQ(b.init.kind, v.init);
      EXPECT_DOUBLE_EQ(b.init.stddev, v.initStd);
      const bool state = v.frozen && updated.count(b.path);
      EXPECT_EQ(b.init.modelParam, !state);
      (state ? states : model)++;
      zeros += b.init.kind == ir::InitKind::Zeros;
    }
  EXPECT_GT(model, 0);
  EXPECT_GT(states, 0); // AdamW's moments
  EXPECT_GT(zeros, 0);  // the moments and the biases start at zero
}

// The fusion policy's folding is a fact of the plan: on by default, off
// under `fusion = none`.
TEST(BuildPlanTest, TheFusionPolicyDecidesFolding) {
  Compiled fused = compilePlan("examples/tiny-gpt.plan", {});
  ASSERT_TRUE(fused.ok);
  EXPECT_TRUE(fused.result.plan->foldProducers);
  Compiled plain = compilePlan("examples/tiny-gpt.plan", {"train.fusion=none"});
  ASSERT_TRUE(plain.ok);
  EXPECT_FALSE(plain.result.plan->foldProducers);
}

// A step computed inside the next step's kernel (folded) is read where the
// kernel writes its results: an operand of it must be the same bytes as a
// result or share none with any. Under f16 the cast gradients, dead after
// the clip's multiply, had the memory plan's bytes of the update's new
// parameter 128 bytes further on: with two threads, one wrote elements the
// other had still to read, and the losses changed from run to run.
TEST(BuildPlanTest, AFoldedStepsOperandsAreTheBytesOfAResultOrApart) {
  Compiled f16 = compilePlan("examples/tiny-gpt.plan",
                             {"train.precision=f16(loss_scale = dynamic(scale = 1e9, growth_interval = 10))"});
  ASSERT_TRUE(f16.ok);
  const ExecutionPlan &plan = *f16.result.plan;
  backend::RenderOptions options;
  options.foldProducers = true;
  int folded = 0;
  for (const RankProgram &program : plan.programs) {
    std::string text;
    llvm::raw_string_ostream os(text);
    std::vector<backend::StepKernel> kernels = backend::renderProgramKernels(plan, program, backend::cpuLanguage(), os, options);
    for (size_t i = 0; i < kernels.size(); ++i) {
      if (kernels[i].foldedInto < 0) continue;
      ++folded;
      const Step &made = program.steps[i], &into = program.steps[size_t(kernels[i].foldedInto)];
      for (int64_t in : made.inputs)
        for (int64_t out : into.outputs) {
          if (in < 0 || out < 0) continue;
          const Buffer &a = program.buffers[size_t(in)], &b = program.buffers[size_t(out)];
          const bool apart = a.offset + a.size <= b.offset || b.offset + b.size <= a.offset;
          EXPECT_TRUE(apart || (a.offset == b.offset && a.size == b.size))
              << "step " << i << " folded into step " << kernels[i].foldedInto << ": operand #" << in << " at "
              << a.offset << " (" << a.size << " bytes) and result #" << out << " at " << b.offset << " (" << b.size
              << " bytes)";
        }
    }
  }
  EXPECT_GT(folded, 0); // the clipped gradients are folded into AdamW's updates
}

} // namespace
