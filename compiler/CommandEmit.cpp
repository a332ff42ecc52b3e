//===- compiler/CommandEmit.cpp - `planc emit` -----------------------------===//
//
// One intermediate form on stdout, picked from the emit table
// (compiler/EmitForms.h).
//
//===----------------------------------------------------------------------===//

#include "compiler/Commands.h"
#include "compiler/Build.h"
#include "compiler/FusionReport.h"
#include "compiler/HuggingFaceConfig.h"
#include "compiler/Ledger.h"
#include "compiler/Pipeline.h"
#include "compiler/TrainOptions.h"

#include "analysis/CommSummary.h"
#include "analysis/MeasuredTimeline.h"
#include "analysis/PipelineSchedule.h"
#include "analysis/StageSequence.h"
#include "backend/c/ProgramKernels.h"
#include "exec/PlanPrinter.h"
#include "frontend/Frontend.h"
#include "ir/MeshLayout.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "support/Plural.h"

#include "llvm/Support/BuryPointer.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>

using namespace planc;

namespace {

/// The pipeline of the checked parallel block; with no pipeline axis, the
/// one-stage schedule.
llvm::Expected<pipeline::PipelineSchedule> scheduleOf(const ParallelConfig &par) {
  return pipeline::buildSchedule(scheduleOfPlan(par));
}

int emitMeshOrSchedule(const CommandOptions &o, const PlanConfig &config) {
  if (o.emit == EmitForm::Mesh) {
    printMeshLayout(MeshLayout(config.parallel.axisSize), llvm::outs());
    return 0;
  }
  auto fail = [](llvm::Error e) {
    llvm::errs() << "planc: error: " << llvm::toString(std::move(e)) << "\n";
    return 1;
  };
  auto schedule = scheduleOf(config.parallel);
  if (!schedule) return fail(schedule.takeError());
  auto sim = pipeline::simulate(*schedule);
  if (!sim) return fail(sim.takeError());
  if (o.emit == EmitForm::Schedule) {
    pipeline::printSchedule(*schedule, *sim, llvm::outs());
    return 0;
  }
  if (o.trace.empty()) {
    pipeline::printScheduleSVG(*schedule, *sim, llvm::outs());
    return 0;
  }
  // The measured timeline: every rank of the mesh, labelled with its stage.
  MeshLayout mesh(config.parallel.axisSize);
  auto measured = pipeline::readMeasuredTimeline(o.trace, mesh.numRanks());
  if (!measured) return fail(measured.takeError());
  for (pipeline::MeasuredRank &r : measured->ranks)
    r.stage = mesh.coordinates(r.rank)[unsigned(MeshAxis::PP)];
  pipeline::printScheduleSVG(*schedule, *sim, llvm::outs(), &*measured);
  return 0;
}

/// --emit=memory: the memory planner's result for every pipeline stage.
int emitMemory(Compilation &c, bool json, bool verifyEach) {
  auto plan = planMemoryOf(c, verifyEach);
  if (!plan) return failAfterCheck(c, plan.takeError());
  if (json) printLedgerJson(*plan, c.getConfig().cluster.device.memoryBytes, llvm::outs());
  else printLedger(*plan, c.getConfig().cluster.device.memoryBytes, llvm::outs());
  return 0;
}

/// --emit=ir-partitioned, comm and exec: views of the partitioned step.
int emitPartitioned(const CommandOptions &o, Compilation &c) {
  MeshLayout mesh(c.getConfig().parallel.axisSize);
  const bool kernels = o.emit == EmitForm::Kernels || o.emit == EmitForm::KernelsCuda;
  if ((o.emit == EmitForm::Exec || kernels) && o.rank >= mesh.numRanks()) {
    llvm::errs() << "planc: error: --rank " << o.rank << " is out of range: the mesh has "
                 << counted(mesh.numRanks(), "rank")
                 << (mesh.numRanks() == 1 ? " (0)" : " (0-" + std::to_string(mesh.numRanks() - 1) + ")") << "\n";
    return 1;
  }
  CompileOptions options;
  options.passes = o.passes;
  options.stopAfter = o.emit == EmitForm::IrPartitioned ? CompileStage::Partitioned
                      : o.emit == EmitForm::Exec || kernels ? CompileStage::ExecutionPlanned
                                                 : CompileStage::Scheduled;
  auto step = compile(c, options);
  if (!step) return failAfterCheck(c, step.takeError());
  const ir::Module &part = *step->module;
  if (o.emit == EmitForm::IrPartitioned) {
    ir::print(part, llvm::outs());
    return 0;
  }
  MeshLayout layout(part.mesh);
  if (o.emit == EmitForm::Comm) {
    // One whole step: every micro-batch, in the order each rank runs it.
    sequence::StageSequencer sequencer(part, *step->schedule);
    printCommSummary(summarizeStepComm(part, layout, sequencer), llvm::outs());
    return 0;
  }
  if (kernels) {
    // One rank's program (rank 0's unless --rank says), as the backends
    // will render it.
    const exec::RankProgram &program = step->plan->programOf(std::max<int64_t>(o.rank, 0));
    backend::RenderOptions render;
    render.foldProducers = step->plan->foldProducers;
    backend::renderProgramKernels(*step->plan, program,
                                  o.emit == EmitForm::KernelsCuda ? backend::cudaLanguage() : backend::cpuLanguage(),
                                  llvm::outs(), render);
  } else if (o.rank >= 0) {
    exec::printRankProgram(*step->plan, o.rank, llvm::outs());
  } else {
    exec::printPlan(*step->plan, llvm::outs());
  }
  // The process ends next: freeing a large plan's millions of buffers and
  // steps one by one would cost a fifth of the run. Buried, as clang's
  // -disable-free does, the result stays reachable, so LeakSanitizer does
  // not report it.
  llvm::BuryPointer(std::make_unique<CompileResult>(std::move(*step)));
  return 0;
}

} // namespace

/// planc emit: one intermediate form on stdout.
int planc::runEmit(const CommandOptions &o, Compilation &c) {
  if (o.emit == EmitForm::Tokens) {
    unsigned id = c.addFile(o.file, {});
    if (!id) return 1;
    bool ok = dumpTokens(c.getSourceMgr(), id, c.getDiagnostics(), llvm::outs());
    return ok ? 0 : 1;
  }

  bool ok = c.loadFile(o.file);
  if (o.emit == EmitForm::Fusion) {
    if (!ok || !c.check()) return 1;
    if (llvm::Error e = printFusionReport(c, o.passes, llvm::outs())) return failAfterCheck(c, std::move(e));
    return 0;
  }
  if (o.emit == EmitForm::Names) {
    if (!ok || !c.check()) return 1;
    std::optional<CompileResult> forward;
    if (nameMapReadsIR(c)) {
      CompileOptions lowered;
      lowered.stopAfter = CompileStage::ForwardIR;
      auto compiled = compile(c, lowered);
      if (!compiled) return failAfterCheck(c, compiled.takeError());
      forward = std::move(*compiled);
    }
    auto names = executableNameMap(c, forward ? forward->module.get() : nullptr);
    if (!names) return failAfterCheck(c, names.takeError());
    printNameMap(c, *names, llvm::outs());
    return 0;
  }
  if (o.emit == EmitForm::Ir || o.emit == EmitForm::IrTrain) {
    if (!ok || !c.check()) return 1;
    CompileOptions options;
    options.stopAfter = o.emit == EmitForm::IrTrain ? CompileStage::TrainingStep : CompileStage::ForwardIR;
    options.passes = o.passes;
    auto compiled = compile(c, options);
    if (!compiled) return failAfterCheck(c, compiled.takeError());
    std::unique_ptr<ir::Module> m = std::move(compiled->module);
    // The frontend checked the plan, so IR that does not verify is planc's bug.
    if (llvm::Error e = ir::verify(*m)) {
      llvm::errs() << "planc: internal error: the lowered IR does not verify:\n" << llvm::toString(std::move(e)) << "\n";
      return 70;
    }
    ir::print(*m, llvm::outs());
    return 0;
  }
  if (o.emit == EmitForm::Memory) {
    if (!ok || !c.check()) return 1;
    c.getDiagnostics().finish();
    return emitMemory(c, o.memoryJson, o.passes.verifyEach);
  }
  if (o.emit == EmitForm::Comm || o.emit == EmitForm::Exec || o.emit == EmitForm::IrPartitioned ||
      o.emit == EmitForm::Kernels || o.emit == EmitForm::KernelsCuda) {
    if (!ok || !c.check()) return 1;
    c.getDiagnostics().finish();
    return emitPartitioned(o, c);
  }
  if (o.emit == EmitForm::Cpp) {
    if (!ok || !c.check()) return 1;
    c.getDiagnostics().finish();
    auto source = generateSource(c, backend::TargetKind::Cpu, std::nullopt, o.file);
    if (!source) return failAfterCheck(c, source.takeError());
    llvm::outs() << *source;
    return 0;
  }
  if (o.emit == EmitForm::Mesh || o.emit == EmitForm::Schedule || o.emit == EmitForm::ScheduleSvg) {
    if (!ok || !c.check()) return 1;
    c.getDiagnostics().finish();
    return emitMeshOrSchedule(o, c.getConfig());
  }
  for (const auto &f : c.getProgram().files) dumpAST(*f, c.getSourceMgr(), llvm::outs());
  return ok ? 0 : 1;
}
