//===- backend/interp/InterpTarget.cpp - the interpreter as a Target ------===//

#include "backend/interp/InterpTarget.h"
#include "backend/interp/PlanTrainer.h"

#include "exec/Groups.h"
#include "ir/OpDef.h"
#include "runtime/Data.h"
#include "support/Error.h"

using namespace planc;
using namespace planc::backend;

namespace {

class InterpTarget final : public Target {
public:
  TargetKind kind() const override { return TargetKind::Interp; }
  bool emitsCode() const override { return false; }

  std::vector<RefusedStep> refusedSteps(const exec::ExecutionPlan &plan, bool /*foldProducers*/) const override {
    // The interpreter runs every op with a reference kernel (ir/ops), and
    // every communication step on its in-process communicator.
    std::vector<RefusedStep> refused;
    for (size_t p = 0; p < plan.programs.size(); ++p)
      for (size_t i = 0; i < plan.programs[p].steps.size(); ++i) {
        const exec::Step &s = plan.programs[p].steps[i];
        if (s.kind >= ir::OpKind::NumOps || exec::isCommunicationStep(s.kind) || ir::opDef(s.kind).eval) continue;
        refused.push_back(refusedStep(p, i, s, "the op has no reference kernel"));
      }
    return refused;
  }

  llvm::Error emit(const TargetProgram &, llvm::raw_ostream &) const override {
    return makeError("the interpreter emits no code: it runs the execution plan itself (planc run --target=interp)");
  }

  llvm::Error build(const std::string &, const std::string &, const ToolchainOptions &,
                    llvm::raw_ostream &) const override {
    return makeError("the interpreter builds no executable; planc builds for --target=cpu");
  }

  llvm::Expected<int> run(const TargetProgram &program, const std::string &,
                          const TargetRunOptions &options) const override {
    if (!program.placed || !program.plan) return makeError("internal error: the interpreter needs a placed plan");
    const ProgramSettings &s = program.settings;
    const uint64_t seed = options.seed ? *options.seed : s.seed;
    auto data = runtime::openDataSource(s.data, s.batch, seed);
    if (!data.ok()) return makeError(data.error());
    interp::TrainLoopOptions loop;
    loop.steps = options.steps > 0 ? options.steps : s.steps;
    loop.seed = seed;
    loop.dumpDir = options.dumpDir;
    loop.log = options.log;
    auto result = interp::trainPlan(*program.placed, *program.plan, **data, loop);
    if (!result) return result.takeError();
    return 0;
  }
};

} // namespace

std::unique_ptr<Target> interp::makeInterpTarget() { return std::make_unique<InterpTarget>(); }
