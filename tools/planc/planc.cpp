//===- tools/planc/planc.cpp - the planc driver ---------------------------===//
//
// Thin: it parses the command line, builds FrontendOptions and calls the
// library. Exit codes: 0 clean, 1 errors in the plan, 2 a usage error.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "compiler/PartitionedStep.h"
#include "compiler/Run.h"
#include "frontend/Verify.h"
#include "compiler/VerifyPlan.h"
#include "compiler/Ledger.h"
#include "compiler/MemoryCheck.h"
#include "ir/MeshLayout.h"
#include "ir/Printer.h"
#include "ir/RankProgram.h"
#include "ir/Verifier.h"
#include "analysis/CommSummary.h"
#include "passes/PassManager.h"
#include "analysis/PipelineSchedule.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <pthread.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace planc;

namespace {

const char *kVersion = "0.1.0";

const char *kMainHelp = R"(planc - a compiler for distributed deep-learning training plans

USAGE: planc <command> [options] <file.plan>

COMMANDS:
  check    read, resolve and check a plan; print a summary of the model, the
           training settings, the cluster and the parallel mesh, and the
           memory per rank against the device (an error with ranked,
           re-analysed fixes when the plan does not fit)
  emit     print an intermediate form:
           --emit=tokens|ast|ir|ir-train|ir-partitioned|ir-rank|comm|memory|
                  mesh|schedule|schedule-svg
  run      train the plan on the reference interpreter, printing the loss of
           every step (--target=interp)
  verify   prove the plan's partitioning: run one training step on one device
           and partitioned over the mesh (every rank simulated), compare

OPTIONS (every command):
  --set <block.key=value>       override a setting of the train, cluster or
                                parallel block (repeatable), e.g.
                                --set parallel.zero=2 --set train.optimizer.lr=1e-4
  --dim <name=value>            give an integer `let` of the model another value
                                (repeatable), e.g. shrink a model for `planc verify`:
                                --dim hidden=64 --dim layers=2 --dim vocab=256
  --diagnostics-format=<fmt>    text (default) or json (one object per line)
  --color=<when>                auto (default: only on a terminal), always, never
  -Werror                       treat warnings as errors
  -w                            suppress warnings
  --error-limit=<n>             stop after n errors (default 50, 0: no limit)
  --stdlib=<dir>                read the standard library from <dir> instead of
                                the copy built into planc
  --help                        this text; `planc <command> --help` for one command
  --version                     print the version

EXIT STATUS: 0 no errors, 1 errors in the plan (or while running it), 2 bad command
line.
)";

const char *kCheckHelp = R"(USAGE: planc check [options] <file.plan>

Reads the plan and its imports, checks names, dims, shapes, dtypes, annotations
and the train/cluster/parallel settings, and prints a one-screen summary:
parameter count in total and by layer kind, layers, tokens per step, devices
and mesh. Then it partitions the plan and plans its memory (as --emit=memory)
and prints the ledger: per pipeline stage the bytes at the rank's peak by
category, the peak and the arena, against the device's memory.

A plan whose peak arena is larger than the budget is an error at the setting
the best fix changes, with the peak's breakdown and up to 5 fixes (a higher
ZeRO stage, recompute, a larger tp or pp, a smaller micro_batch, sequence
parallelism, adam8bit, LoRA adapters; when no single change fits, two or
three of them together), each applied with --set and analysed again: its new
peak and its price in bytes sent per rank and step, recomputed FLOPs and
pipeline bubble; fixes that fit first, cheapest first (docs/memory.md).
Less than 5% headroom is a warning.

OPTIONS:
  --budget <size>  check the memory against <size> (70GiB, 80 GB, ...) instead
                of the device's memory
  --json        print the ledger, the budget, the verdict (fits, low_headroom,
                over_budget, unknown) and the ranked fixes as one JSON object
                instead of the summary (docs/memory.md has the schema)
  --verify      instead of printing diagnostics, compare them with the
                `// expected-error {{...}}` comments of the file (clang's -verify):
                exit 0 when every expected diagnostic is reported and nothing else
  --quiet       print diagnostics only, no summary and no ledger
  --no-memory   only the plan checks: no partitioning, no ledger, no memory
                diagnostics (fast; for editors and fuzzing the frontend)
  (and the options of every command: see `planc --help`)
)";

const char *kEmitHelp = R"(USAGE: planc emit --emit=<what> [options] <file.plan>

  --emit=tokens   the tokens of the file, one per line: line:col KIND 'text'
  --emit=ast      the syntax tree of the file and of every imported file, after
                  parsing and before semantic checks

  --emit=ir       the model as textual IR (docs/ir.md): the forward graph with
                  layers inlined, repeats unrolled, dims folded, annotations
                  as attributes, and every op's .plan location and layer path

  --emit=ir-train the whole training step as IR: the forward graph, the
                  backward graph (autodiff) and the optimizer's updates, after
                  the default training pipeline
  --time-passes   with ir-train: the time each pass took, on stderr (with
                  ir-partitioned, ir-rank and comm: each partitioning pass)
  --print-after-all  with ir-train: the IR after every pass, on stderr (with
                  ir-partitioned, ir-rank and comm: after every partitioning
                  pass)

  --emit=ir-partitioned
                  the training step as the partitioner leaves it: one SPMD
                  module with global shapes, a sharding on every value, the
                  collectives between layouts, and with pp > 1 every op
                  placed on its pipeline stage and schedule instruction
                  (pipeline_stage, work) with send/recv between stages; one
                  micro-batch (ir-rank and comm show every micro-batch)

  --emit=ir-rank --rank <r>
                  rank r's program of the partitioned training step (built
                  as `planc verify` builds it): every type its local block,
                  with no sharding; shape attributes local; every collective,
                  send and recv with `group`, the ranks it talks to (send and
                  recv also `peer`). For reading: it does not verify
  --emit=comm     the communication of one partitioned training step, per
                  rank (ranks with the same list once): every collective in
                  program order with its axis, group size n, phase, local
                  block, message size S and the bytes the rank sends (ring
                  algorithms, nccl-tests conventions: all_reduce 2(n-1)/n*S;
                  reduce_scatter, all_gather, all_to_all (n-1)/n*S; broadcast
                  and send S), then totals by axis, phase and layer path
  --emit=memory   the memory planner's result (analysis/MemoryPlan.h): per
                  pipeline stage, the bytes live at the rank's peak by
                  category (parameters, gradients, optimizer state,
                  activations, temporaries, communication), the peak, the
                  arena the planner placed and its fragmentation, and the op
                  at which the peak rank peaks, and ZeRO's model states
                  (parameters as stored, gradients as held, optimizer state:
                  under mixed precision the f32 master weights count there
                  and the gradients are bf16 unless precision says
                  grads = f32; docs/memory.md)
  --json          with memory: the same as one JSON object (docs/memory.md),
                  with every stage's memory over time (at most 1024 points)

  --emit=mesh     the device mesh: the axis sizes, every rank's coordinates
                  (tp fastest-varying, then cp, ep, pp; dp slowest) and the
                  groups of ranks of every axis
  --emit=schedule the pipeline schedule of the parallel block: every pipeline
                  rank's instructions (forward, backward, weight gradient,
                  send and recv) with their times in a unit-cost replay, then
                  busy and idle time per rank, the step time and the bubble
                  fraction measured from the replay
  --emit=schedule-svg  the same schedule as an SVG Gantt chart, one row per
                  rank
  (and the options of every command: see `planc --help`)
)";

const char *kVerifyHelp = R"(USAGE: planc verify [options] <file.plan>

Builds the plan's training step (forward, backward, optimizer update), runs it
on one device on the reference interpreter, then partitions it as the parallel
block says (recompute, ZeRO layouts, tensor/sequence/data parallel sharding
and the collectives between layouts) and runs every rank of the mesh in one
process, on the same seeded parameters and batch. Prints, per rank, the
largest absolute and relative difference of the loss, the gradients and the
updated parameters and optimizer states (each rank's block against the same
block of the single-device result), then PASS or FAIL. With a pipeline it also
checks the structure: every op on the stage that owns its layer, exactly one
activation message per micro-batch between neighbouring stages in each
direction, and only shared parameters' gradients crossing stages in the
optimizer phase; each violation is printed and fails verify.

OPTIONS:
  --dtype=<t>       f64 (default) or f32: every float of the model
  --seed <s>        seed of the parameters, the batch and dropout (default 1234)
  --tolerance <x>   the largest relative difference that passes (default
                    1e-9 for f64, 1e-5 for f32)
  --time-passes     the time each partitioning pass took, on stderr
  --print-after-all the IR after every partitioning pass, on stderr
  --structure-only  only the structural check: partition the step, do not run
                    it (for plans too large for the interpreter)
  --testing-drop-collective=<n>
                    testing only: remove the n-th (from 0) all-reduce the
                    partitioner inserted, to see a missing collective caught
  --testing-swap-sends
                    testing only: swap the tags of two pipeline sends, to see
                    the wrong order caught by the deadlock check and the wrong
                    data by the comparison
  --testing-misplace-op
                    testing only: move one forward op of pipeline rank 0 to
                    rank 1 (its operands and results sent), to see the
                    structural check catch work on the wrong stage
  (and the options of every command: see `planc --help`)

EXIT STATUS: 0 within tolerance, 1 beyond it (or a plan that cannot be
partitioned or run), 2 bad command line.
)";

const char *kRunHelp = R"(USAGE: planc run [options] <file.plan>

Lowers the plan, adds the backward graph and the optimizer step, initialises
the parameters from the plan's seed and trains on the plan's data (`data` in
the train block: synthetic by default, a text file or a token file), one line
per step: `step N  loss X  lr Y  T s`.

OPTIONS:
  --target=interp   where to run: the reference interpreter (the only target
                    of this version)
  --steps <n>       steps to run (default: the plan's train.steps); the
                    learning-rate schedule stays the plan's
  --seed <s>        seed of the initialisation and the data (default: the
                    plan's train.seed)
  --dtype=<t>       f64 or f32: compute every float of the model in this dtype
                    (f64 for reference checks; default: as the plan says)
  --dump <dir>      write <dir>/init.safetensors (initial parameters),
                    batch-<step>.safetensors (tokens, targets),
                    step-<step>.safetensors (loss, lr, every gradient) and
                    losses.json; each file is written whole or not at all
  (and the options of every command: see `planc --help`)

Errors while running (an unreadable data file, a dump folder that cannot be
written, a loss that is not finite) exit with status 1.
)";

struct Options {
  std::string command;
  std::string file;
  std::string emit;
  bool verify = false, quiet = false, json = false;
  std::string color = "auto";
  FrontendOptions frontend;
  std::string target = "interp";
  RunOptions run;
  PassManagerOptions passes; // --time-passes, --print-after-all (emit ir-train, verify)
  PlanVerifyOptions verifyPlan;
  int64_t rank = -1; // --rank (emit ir-rank)
  bool memoryJson = false; // --json (emit memory, check)
  std::optional<uint64_t> budget; // --budget (check)
  bool noMemory = false;          // --no-memory (check)
};

int usage(const std::string &message) {
  llvm::errs() << "planc: error: " << message << "\n"
               << "run 'planc --help' for usage\n";
  return 2;
}

/// A decimal integer in [lo, 10^15]: step counts and seeds.
bool parseCount(const std::string &text, int64_t lo, int64_t &out) {
  if (text.empty() || text.size() > 15 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  out = std::stoll(text);
  return out >= lo;
}

/// Returns -1 to go on, or the exit code.
int parseArgs(int argc, char **argv, Options &o) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    llvm::outs() << kMainHelp;
    return 2;
  }
  auto valueOf = [&](size_t &i, const std::string &flag, std::string &out) -> bool {
    const std::string &a = args[i];
    if (a.size() > flag.size() && a.compare(0, flag.size() + 1, flag + "=") == 0) {
      out = a.substr(flag.size() + 1);
      return true;
    }
    if (a == flag) {
      if (i + 1 >= args.size()) return false;
      out = args[++i];
      return true;
    }
    return false;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    std::string v;
    if (a == "--help" || a == "-h") {
      llvm::outs() << (o.command == "check" ? kCheckHelp : o.command == "emit" ? kEmitHelp
                                                             : o.command == "run" ? kRunHelp
                                                             : o.command == "verify" ? kVerifyHelp : kMainHelp);
      return 0;
    }
    if (a == "--version") {
      llvm::outs() << "planc version " << kVersion << "\n";
      return 0;
    }
    if (o.command.empty() && !a.empty() && a[0] != '-') {
      if (a != "check" && a != "emit" && a != "run" && a != "verify")
        return usage("unknown command '" + a + "'; the commands are check, emit, run and verify");
      o.command = a;
      continue;
    }
    if (a == "--set" || a.rfind("--set=", 0) == 0) {
      if (!valueOf(i, "--set", v)) return usage("--set needs a value: --set block.key=value");
      o.frontend.setOverrides.push_back(v);
    } else if (a == "--dim" || a.rfind("--dim=", 0) == 0) {
      if (!valueOf(i, "--dim", v)) return usage("--dim needs a value: --dim name=value");
      o.frontend.dimOverrides.push_back(v);
    } else if (a.rfind("--emit", 0) == 0) {
      if (!valueOf(i, "--emit", v))
        return usage("--emit needs a value: tokens, ast, ir, ir-train, ir-partitioned, ir-rank, comm, memory, mesh, "
                     "schedule or schedule-svg");
      o.emit = v;
    } else if (a.rfind("--diagnostics-format", 0) == 0) {
      if (!valueOf(i, "--diagnostics-format", v) || (v != "text" && v != "json"))
        return usage("--diagnostics-format must be text or json");
      o.json = v == "json";
    } else if (a.rfind("--color", 0) == 0) {
      if (!valueOf(i, "--color", v) || (v != "auto" && v != "always" && v != "never"))
        return usage("--color must be auto, always or never");
      o.color = v;
    } else if (a.rfind("--error-limit", 0) == 0) {
      if (!valueOf(i, "--error-limit", v) || v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 9)
        return usage("--error-limit needs a non-negative integer");
      o.frontend.errorLimit = unsigned(std::stoul(v));
    } else if (a.rfind("--stdlib", 0) == 0) {
      if (!valueOf(i, "--stdlib", v)) return usage("--stdlib needs a directory");
      o.frontend.stdlibDir = v;
    } else if (a == "--time-passes" && (o.command == "emit" || o.command == "verify")) {
      o.passes.timePasses = true;
    } else if (a == "--print-after-all" && (o.command == "emit" || o.command == "verify")) {
      o.passes.printAfterAll = true;
    } else if (o.command == "verify" && a.rfind("--dtype", 0) == 0) {
      if (!valueOf(i, "--dtype", v) || (v != "f64" && v != "f32")) return usage("--dtype must be f64 or f32");
      o.verifyPlan.floatType = v == "f64" ? ir::DType::F64 : ir::DType::F32;
    } else if (o.command == "verify" && a.rfind("--seed", 0) == 0) {
      int64_t seed;
      if (!valueOf(i, "--seed", v) || !parseCount(v, 0, seed)) return usage("--seed needs a non-negative integer");
      o.verifyPlan.seed = uint64_t(seed);
    } else if (o.command == "verify" && a.rfind("--tolerance", 0) == 0) {
      char *end = nullptr;
      if (!valueOf(i, "--tolerance", v) || v.empty()) return usage("--tolerance needs a positive number");
      double t = std::strtod(v.c_str(), &end);
      if (*end || !(t > 0) || t > 1e300) return usage("--tolerance needs a positive number");
      o.verifyPlan.tolerance = t;
    } else if ((o.command == "emit" || o.command == "check") && a == "--json") {
      o.memoryJson = true;
    } else if (o.command == "check" && a.rfind("--budget", 0) == 0) {
      if (!valueOf(i, "--budget", v)) return usage("--budget needs a size such as 70GiB");
      auto bytes = parseBudget(v);
      if (!bytes) return usage(llvm::toString(bytes.takeError()));
      o.budget = *bytes;
    } else if (o.command == "verify" && a == "--testing-swap-sends") {
      o.verifyPlan.swapSends = true;
    } else if (o.command == "verify" && a == "--structure-only") {
      o.verifyPlan.structureOnly = true;
    } else if (o.command == "verify" && a == "--testing-misplace-op") {
      o.verifyPlan.misplaceOp = true;
    } else if (o.command == "verify" && a.rfind("--testing-drop-collective", 0) == 0) {
      int64_t n;
      if (!valueOf(i, "--testing-drop-collective", v) || !parseCount(v, 0, n) || n > 1000000)
        return usage("--testing-drop-collective needs a non-negative integer");
      o.verifyPlan.dropCollective = int(n);
    } else if (o.command == "emit" && a.rfind("--rank", 0) == 0) {
      if (!valueOf(i, "--rank", v) || !parseCount(v, 0, o.rank)) return usage("--rank needs a non-negative integer");
    } else if (a == "-Werror") {
      o.frontend.warningsAsErrors = true;
    } else if (a == "-w") {
      o.frontend.suppressWarnings = true;
    } else if (a == "--verify" && o.command == "check") {
      o.verify = true;
    } else if (a == "--quiet" && o.command == "check") {
      o.quiet = true;
    } else if (a == "--no-memory" && o.command == "check") {
      o.noMemory = true;
    } else if (o.command == "run" && a.rfind("--target", 0) == 0) {
      if (!valueOf(i, "--target", v)) return usage("--target needs a value: interp");
      if (v != "interp") return usage("--target=" + v + " is not available; this version runs --target=interp");
      o.target = v;
    } else if (o.command == "run" && a.rfind("--steps", 0) == 0) {
      if (!valueOf(i, "--steps", v) || !parseCount(v, 1, o.run.steps)) return usage("--steps needs a positive integer");
    } else if (o.command == "run" && a.rfind("--seed", 0) == 0) {
      int64_t seed;
      if (!valueOf(i, "--seed", v) || !parseCount(v, 0, seed)) return usage("--seed needs a non-negative integer");
      o.run.seed = uint64_t(seed);
    } else if (o.command == "run" && a.rfind("--dtype", 0) == 0) {
      if (!valueOf(i, "--dtype", v) || (v != "f64" && v != "f32")) return usage("--dtype must be f64 or f32");
      o.run.floatType = v == "f64" ? ir::DType::F64 : ir::DType::F32;
    } else if (o.command == "run" && a.rfind("--dump", 0) == 0) {
      if (!valueOf(i, "--dump", v) || v.empty()) return usage("--dump needs a folder");
      o.run.dumpDir = v;
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      return usage("unknown option '" + a + "'" + (o.command.empty() ? "" : " for '" + o.command + "'"));
    } else {
      if (!o.file.empty()) return usage("more than one input file ('" + o.file + "' and '" + a + "')");
      o.file = a;
    }
  }
  if (o.command.empty()) return usage("no command; the commands are check, emit, run and verify");
  if (o.file.empty()) return usage("no input file");
  if (o.command == "emit") {
    const char *forms = "tokens, ast, ir, ir-train, ir-partitioned, ir-rank, comm, memory, mesh, schedule and schedule-svg";
    if (o.emit.empty()) return usage(std::string("emit needs --emit=<form>; the forms are ") + forms);
    if (o.emit != "tokens" && o.emit != "ast" && o.emit != "ir" && o.emit != "ir-train" && o.emit != "ir-rank" &&
        o.emit != "ir-partitioned" && o.emit != "comm" && o.emit != "memory" && o.emit != "mesh" &&
        o.emit != "schedule" &&
        o.emit != "schedule-svg")
      return usage("--emit=" + o.emit + " is not available; this version emits " + forms);
    if ((o.passes.timePasses || o.passes.printAfterAll) && o.emit != "ir-train" && o.emit != "ir-rank" &&
        o.emit != "comm" && o.emit != "ir-partitioned")
      return usage("--time-passes and --print-after-all go with --emit=ir-train, ir-partitioned, ir-rank or comm");
    if (o.emit == "ir-rank" && o.rank < 0) return usage("--emit=ir-rank needs --rank <r>");
    if (o.memoryJson && o.emit != "memory") return usage("--json goes with --emit=memory (or with check)");
    if (o.emit != "ir-rank" && o.rank >= 0) return usage("--rank goes with --emit=ir-rank");
  } else if (!o.emit.empty()) {
    return usage("--emit belongs to the emit command");
  }
  if (o.noMemory && (o.memoryJson || o.budget))
    return usage("--no-memory skips the memory check that --json and --budget are about");
  return -1;
}

/// The pipeline of the checked parallel block; with no pipeline axis, the
/// one-stage schedule.
llvm::Expected<pipeline::PipelineSchedule> scheduleOf(const ParallelConfig &par) {
  return pipeline::buildSchedule(scheduleOfPlan(par));
}

int emitMeshOrSchedule(const Options &o, const PlanConfig &config) {
  if (o.emit == "mesh") {
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
  if (o.emit == "schedule") pipeline::printSchedule(*schedule, *sim, llvm::outs());
  else pipeline::printScheduleSVG(*schedule, *sim, llvm::outs());
  return 0;
}

/// --emit=memory: the memory planner's result for every pipeline stage.
int emitMemory(Compilation &c, bool json, bool verifyEach) {
  auto plan = planMemoryOf(c, verifyEach);
  if (!plan) {
    llvm::errs() << "planc: error: " << llvm::toString(plan.takeError()) << "\n";
    return 1;
  }
  if (json) printLedgerJson(*plan, c.getConfig().cluster.device.memoryBytes, llvm::outs());
  else printLedger(*plan, c.getConfig().cluster.device.memoryBytes, llvm::outs());
  return 0;
}

/// --emit=ir-partitioned, comm and ir-rank: views of the partitioned step.
int emitPartitioned(const Options &o, Compilation &c) {
  auto fail = [](llvm::Error e) {
    llvm::errs() << "planc: error: " << llvm::toString(std::move(e)) << "\n";
    return 1;
  };
  MeshLayout mesh(c.getConfig().parallel.axisSize);
  if (o.emit == "ir-rank" && o.rank >= mesh.numRanks()) {
    llvm::errs() << "planc: error: --rank " << o.rank << " is out of range: the mesh has " << mesh.numRanks()
                 << (mesh.numRanks() == 1 ? " rank (0)" : " ranks (0-" + std::to_string(mesh.numRanks() - 1) + ")")
                 << "\n";
    return 1;
  }
  PartitionedStepOptions options;
  options.passes = o.passes;
  options.unroll = o.emit != "ir-partitioned";
  auto step = buildPartitionedStep(c, options);
  if (!step) return fail(step.takeError());
  const ir::Module &part = *step->partitioned;
  if (o.emit == "ir-partitioned") {
    ir::print(part, llvm::outs());
    return 0;
  }
  MeshLayout layout(part.mesh);
  if (o.emit == "comm") {
    printCommSummary(summarizeComm(part, layout), llvm::outs());
    return 0;
  }
  MeshCoords coords = layout.coordinates(o.rank);
  llvm::outs() << "// rank " << o.rank << " of " << layout.numRanks() << ":";
  for (MeshAxis a : {MeshAxis::DP, MeshAxis::PP, MeshAxis::EP, MeshAxis::CP, MeshAxis::TP})
    if (layout.size(a) > 1) llvm::outs() << " " << spelling(a) << "=" << coords[unsigned(a)];
  llvm::outs() << "; local blocks, for reading (collectives keep their global-shape rules: this module\n"
               << "// does not verify)\n";
  ir::print(*ir::rankProgram(part, layout, o.rank), llvm::outs());
  return 0;
}

int run(Options &o) {
  Compilation c(o.frontend);
  // SourceMgr colours through llvm::WithColor, which colours a file or pipe
  // only when LLVM's own `-color` option is set: --color=always sets it.
  if (o.color == "always") {
    auto &registered = llvm::cl::getRegisteredOptions();
    auto it = registered.find("color");
    if (it != registered.end()) it->second->addOccurrence(0, "color", "true");
  }
  bool colors = o.color == "always" || (o.color == "auto" && llvm::errs().has_colors());
  CollectingConsumer *collected = nullptr;
  if (o.verify) {
    auto consumer = std::make_unique<CollectingConsumer>();
    collected = consumer.get();
    c.setDiagnosticConsumer(std::move(consumer));
  } else {
    c.setDiagnosticOutput(llvm::errs(), o.json, colors);
  }

  if (o.command == "emit" && o.emit == "tokens") {
    unsigned id = c.addFile(o.file, {});
    if (!id) return 1;
    bool ok = dumpTokens(c.getSourceMgr(), id, c.getDiagnostics(), llvm::outs());
    return ok ? 0 : 1;
  }

  bool ok = c.loadFile(o.file);
  if (o.command == "emit" && (o.emit == "ir" || o.emit == "ir-train")) {
    if (!ok || !c.check()) return 1;
    std::unique_ptr<ir::Module> m = lowerToIR(c);
    if (!m) return 1;
    if (o.emit == "ir-train")
      if (llvm::Error e = makeTrainingStep(c, *m, std::nullopt, o.passes)) {
        llvm::errs() << "planc: error: " << llvm::toString(std::move(e)) << "\n";
        return 1;
      }
    // The frontend checked the plan, so IR that does not verify is planc's bug.
    if (llvm::Error e = ir::verify(*m)) {
      llvm::errs() << "planc: internal error: the lowered IR does not verify:\n" << llvm::toString(std::move(e)) << "\n";
      return 70;
    }
    ir::print(*m, llvm::outs());
    return 0;
  }
  if (o.command == "emit" && o.emit == "memory") {
    if (!ok || !c.check()) return 1;
    c.getDiagnostics().finish();
    return emitMemory(c, o.memoryJson, o.passes.verifyEach);
  }
  if (o.command == "emit" && (o.emit == "comm" || o.emit == "ir-rank" || o.emit == "ir-partitioned")) {
    if (!ok || !c.check()) return 1;
    c.getDiagnostics().finish();
    return emitPartitioned(o, c);
  }
  if (o.command == "emit" && (o.emit == "mesh" || o.emit == "schedule" || o.emit == "schedule-svg")) {
    if (!ok || !c.check()) return 1;
    c.getDiagnostics().finish();
    return emitMeshOrSchedule(o, c.getConfig());
  }
  if (o.command == "emit") {
    for (const auto &f : c.getProgram().files) dumpAST(*f, c.getSourceMgr(), llvm::outs());
    return ok ? 0 : 1;
  }
  if (o.command == "verify") {
    if (!ok || !c.check()) return 1;
    c.getDiagnostics().finish();
    o.verifyPlan.passes = o.passes;
    auto report = verifyPlan(c, o.verifyPlan);
    if (!report) {
      llvm::errs() << "planc: error: " << llvm::toString(report.takeError()) << "\n";
      return 1;
    }
    printPlanVerifyReport(*report, llvm::outs());
    return report->passed() ? 0 : 1;
  }
  if (o.command == "run") {
    if (!ok || !c.check()) return 1;
    c.getDiagnostics().finish();
    if (llvm::Error e = runOnInterpreter(c, o.run, llvm::outs())) {
      llvm::outs().flush();
      llvm::errs() << "planc: error: " << llvm::toString(std::move(e)) << "\n";
      return 1;
    }
    return 0;
  }
  if (ok) ok = c.check();
  // The memory ledger needs a checked model; its diagnostics join the plan's.
  // A plan the partitioner cannot cut (pp > 1 without repeated layers) has
  // no ledger: the summary says why, and the plan's checks stand.
  std::optional<MemoryCheckResult> memory;
  std::string notPlanned;
  if (ok && c.getProgram().model && !o.noMemory) {
    MemoryCheckOptions mo;
    mo.budgetBytes = o.budget;
    mo.progress = &llvm::errs();
    mo.progressAlways = llvm::errs().is_displayed();
    mo.verifyEach = o.passes.verifyEach;
    auto checked = checkMemory(c, mo);
    if (checked) memory = std::move(*checked);
    else notPlanned = llvm::toString(checked.takeError());
    ok = !c.getDiagnostics().hasErrors();
  }
  c.getDiagnostics().finish();
  if (o.verify) return verifyDiagnostics(collected->diagnostics, c.getSourceMgr(), llvm::errs()) ? 0 : 1;
  if (!ok && !memory) return 1;
  if (o.memoryJson) {
    if (memory) printMemoryCheckJson(*memory, llvm::outs());
    else printMemoryNotPlannedJson(notPlanned.empty() ? "the plan has no model" : notPlanned, llvm::outs());
  } else if (!o.quiet) {
    printSummary(c, llvm::outs());
    if (memory) printMemoryCheck(*memory, llvm::outs());
    else if (!notPlanned.empty()) llvm::outs() << "memory: not planned: " << notPlanned << "\n";
  }
  return ok ? 0 : 1;
}

/// The frontend recurses over expressions and layer calls (both bounded); a
/// large stack keeps hostile but legal nesting from overflowing it.
int runOnBigStack(const std::function<int()> &body) {
  struct Job {
    const std::function<int()> *body;
    int result = 1;
  } job{&body};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t(512) << 20);
  pthread_t thread;
  auto entry = [](void *p) -> void * {
    auto *j = static_cast<Job *>(p);
    j->result = (*j->body)();
    return nullptr;
  };
  if (pthread_create(&thread, &attr, entry, &job) != 0) return body();
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  return job.result;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  int early = parseArgs(argc, argv, o);
  if (early >= 0) return early;
  // Pipelines verify their result; after every pass only when asked (tests):
  // verifying a large model after each of a dozen passes costs more than the
  // passes.
  const char *verifyEach = std::getenv("PLANC_VERIFY_EACH");
  o.passes.verifyEach = verifyEach && llvm::StringRef(verifyEach) == "1";
  o.run.verifyEach = o.passes.verifyEach;
  int code = runOnBigStack([&] { return run(o); });
  llvm::outs().flush();
  llvm::errs().flush();
  return code;
}
