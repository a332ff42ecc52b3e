//===- runtime/Executable.cpp - the main() of a compiled plan -------------===//

#include "runtime/Executable.h"
#include "runtime/ExecutableOptions.h"
#include "runtime/Arena.h"
#include "runtime/Checkpoint.h"
#include "runtime/kernels/cpu/Common.h"
#include "runtime/ElementBits.h"
#include "runtime/MeshRanks.h"
#include "runtime/MpiCommunicator.h"
#include "runtime/NameMap.h"
#include "runtime/ParamInit.h"
#include "runtime/Sample.h"
#include "runtime/SlowStep.h"
#include "runtime/StepComms.h"
#include "runtime/StepLog.h"
#include "runtime/StepTrace.h"
#include "runtime/ThreadPools.h"
#include "runtime/Plural.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <unistd.h>

using namespace planc::runtime;

namespace {

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", double(bytes) / (1024.0 * 1024.0));
  return buf;
}

int fail(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

/// Every Param buffer's initial values, as the interpreter's (ParamInit.h):
/// element i of the whole tensor draws the number i of the parameter's
/// stream, so a rank's block holds exactly the one-device values at its
/// place; the padding of an uneven split is 0.
void initialiseParams(const ExecutableModel &m, uint8_t *arena, uint64_t seed) {
  for (const ExecParam &p : m.params) {
    const std::vector<int64_t> &global = p.globalShape.size() == p.shape.size() ? p.globalShape : p.shape;
    const size_t rank = p.shape.size();
    std::vector<int64_t> offset = p.blockOffset.size() == rank ? p.blockOffset : std::vector<int64_t>(rank, 0);
    int64_t n = 1;
    for (int64_t d : p.shape) n *= d;
    std::vector<double> values(size_t(n), 0.0);
    const uint64_t key = p.init == ParamInit::Normal ? initKey(p.initKey, seed) : 0;
    std::vector<int64_t> index(rank, 0); // the local index of element i
    for (int64_t i = 0; i < n; ++i) {
      int64_t g = 0;
      bool inside = true;
      for (size_t d = 0; d < rank; ++d) {
        const int64_t at = offset[d] + index[d];
        inside &= at < global[d];
        g = g * global[d] + at;
      }
      if (inside)
        values[size_t(i)] = p.init == ParamInit::Ones     ? 1.0
                            : p.init == ParamInit::Normal ? p.stddev * initialNormal(key, uint64_t(g))
                                                          : 0.0;
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < p.shape[d]) break;
        index[d] = 0;
      }
    }
    encodeBuffer(p.type, values.data(), values.size(), arena + p.offset);
  }
}

double readScalar(const uint8_t *arena, const ExecOutput &o) {
  uint64_t bits = 0;
  std::memcpy(&bits, arena + o.offset, byteSize(o.type));
  return decodeElement(o.type, bits);
}

/// A number for a JSON line: every digit, or null where it is not finite
/// (the gradient norm of a step whose scaled gradients overflowed).
std::string jsonNumber(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

/// The progress bar on a terminal: "[=====>     ] 120/200  ETA 0:14".
void drawProgress(int64_t done, int64_t total, double secondsPerStep) {
  const int width = 30;
  int filled = total > 0 ? int(double(width) * double(done) / double(total)) : width;
  std::string bar(size_t(filled), '=');
  if (filled < width) bar += '>';
  bar.resize(size_t(width), ' ');
  long eta = long(std::lround(secondsPerStep * double(total - done)));
  std::fprintf(stderr, "\r[%s] %lld/%lld  ETA %ld:%02ld ", bar.c_str(), (long long)done, (long long)total, eta / 60,
               eta % 60);
  std::fflush(stderr);
}

void clearProgress() {
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

} // namespace

void planc::runtime::selectProgram(ExecutableModel &m, size_t index, int64_t rank) {
  const ExecProgram &p = m.programs.at(index);
  size_t place = 0;
  for (size_t r = 0; r < p.ranks.size(); ++r)
    if (p.ranks[r] == rank) place = r;
  m.rank = rank;
  m.rankClass = p.rankClass;
  m.arenaBytes = p.arenaBytes;
  m.ledgerBytes = p.ledgerBytes;
  m.params = p.params;
  for (ExecParam &param : m.params)
    param.blockOffset = place < param.blockOffsets.size() ? param.blockOffsets[place] : std::vector<int64_t>();
  m.inputs = p.inputs;
  m.outputs = p.outputs;
  m.step = p.step;
}

namespace {

/// The processes of a mesh: MPI, the communicator, and how an error ends
/// the job. With one rank and no launcher there is none of it.
struct Job {
  std::unique_ptr<MpiCommunicator> comm;
  bool mpi = false;
  int64_t rank = 0;
  double commTimeout = 0; // every wait on another rank ends within it
  int64_t stepReached = -1; // the last training step begun, for the errors of shutdown

  ~Job() {
    setStepComms(nullptr, nullptr, 0);
    std::string phase = "shutdown";
    if (comm) {
      comm->setPhase(JobPhase::Shutdown, stepReached);
      phase = comm->phaseText();
      (void)comm->flushSends();
    }
    comm.reset();
    if (mpi) finalizeMpi(commTimeout, phase);
  }
  bool lead() const { return rank == 0; }
  /// Where the job is, for the errors of a wait (runtime/MpiCommunicator.h).
  void at(JobPhase phase, int64_t step) {
    if (phase == JobPhase::Step) stepReached = step;
    if (comm) comm->setPhase(phase, step);
  }
  /// Collective: "" when no rank has an error; else the error of the lowest
  /// rank that has one -- that rank prints it and every rank returns 1.
  /// Without MPI: `mine`.
  bool failed(const std::string &mine, int &status) {
    int64_t lowest = comm ? comm->lowestRank(!mine.empty(), "the agreement on whether a rank failed")
                          : (mine.empty() ? -1 : 0);
    if (lowest < 0) return false;
    if (lowest == rank) report(mine);
    status = 1;
    return true;
  }
  void report(const std::string &message) const {
    std::fflush(stdout);
    if (comm) std::fprintf(stderr, "error: rank %lld: %s\n", (long long)rank, message.c_str());
    else std::fprintf(stderr, "error: %s\n", message.c_str());
  }
};

/// Rank 0 writes every rank's trace events into `path` (atomically); ""
/// or the error (on the rank that met it).
std::string writeTrace(const std::string &path, MpiCommunicator *comm, int64_t rank) {
  TraceWriter writer;
  writer.nameStream(0, "compute");
  writer.nameStream(1, "communication");
  size_t ranks = 1;
  if (comm) {
    Result<std::vector<std::string>> all =
        comm->gatherToRankZero(encodeTraceEvents(tracedEvents()), "gathering the trace on rank 0");
    if (!all.ok()) return all.error();
    if (rank != 0) return "";
    ranks = all->size();
    for (const std::string &text : *all) {
      Result<std::vector<TraceEvent>> events = decodeTraceEvents(text);
      if (!events.ok()) return events.error();
      for (TraceEvent &e : *events) writer.add(std::move(e));
    }
  } else {
    for (const TraceEvent &e : tracedEvents()) writer.add(e);
  }
  if (Status s = writer.write(path); !s.ok()) return "--trace: " + s.message();
  std::printf("trace: %zu events of %s written to %s\n", writer.all().size(), counted(int64_t(ranks), "rank").c_str(),
              path.c_str());
  std::fflush(stdout);
  return "";
}

/// The step's numbers every rank needs (the loss holder broadcasts them).
enum Number { kLoss, kLr, kGradNorm, kFoundInf, kLossScale, kNumbers };

} // namespace

int planc::runtime::runExecutable(const ExecutableModel &model, int argc, char **argv) {
  ExecutableOptions o;
  if (std::string err = parseExecutableOptions(argc, argv, o); !err.empty()) {
    std::fprintf(stderr, "error: %s\n", err.c_str());
    return 2;
  }
  // The kernels' and the GEMMs' threads share the cores: how they wait is
  // set before anything runs (runtime/ThreadPools.h; may start us again).
  if (argc > 0) settleThreadPools(argv, o.threads ? long(*o.threads) : 0);
  if (o.help) {
    printExecutableHelp(model, argc > 0 ? argv[0] : "model");
    return 0;
  }
  if (model.programs.empty()) return fail("plan '" + model.plan + "' was built without a program");
  const MeshRanks mesh(model.mesh);
  if (mesh.ranks() != model.ranks) return fail("internal error: the mesh and the rank count disagree");
  if (model.ranks > 1 && !launchedByMpi())
    return fail("plan '" + model.plan + "' runs on a mesh of " + counted(model.ranks, "rank") + " (" +
                mesh.describe() + "): start it with `mpirun -np " + std::to_string(model.ranks) + " " +
                (argc > 0 ? argv[0] : "model") + "`, or with `planc run --target=cpu --ranks " +
                std::to_string(model.ranks) + "`");

  // The processes: every rank runs this executable and picks its program.
  Job job;
  int status = 0;
  if (launchedByMpi()) {
    int64_t worldRank = 0, worldSize = 1;
    if (Status s = initMpi(argc, argv, worldRank, worldSize, o.commTimeout); !s.ok()) return fail(s.message());
    job.mpi = true;
    job.rank = worldRank;
    job.commTimeout = o.commTimeout;
    if (worldSize != model.ranks) {
      if (worldRank == 0)
        fail("plan '" + model.plan + "' runs on a mesh of " + counted(model.ranks, "rank") + " (" +
             mesh.describe() + "), but it was started on " + std::to_string(worldSize) + ": use mpirun -np " +
             std::to_string(model.ranks));
      return 1;
    }
    Result<std::unique_ptr<MpiCommunicator>> c = MpiCommunicator::create(mesh, o.commTimeout);
    if (!c.ok()) return fail(c.error());
    job.comm = std::move(*c);
    // Every rank must run the same build of the same plan.
    if (job.failed(job.comm->compareAcrossRanks("build", model.buildId), status)) return status;
  }
  ExecutableModel m = model;
  int64_t programIndex = -1;
  for (size_t p = 0; p < m.programs.size(); ++p)
    for (int64_t r : m.programs[p].ranks)
      if (r == job.rank) programIndex = int64_t(p);
  if (programIndex < 0) return fail("internal error: no program for rank " + std::to_string(job.rank));
  selectProgram(m, size_t(programIndex), job.rank);
  const std::array<int64_t, kMeshAxes> coords = mesh.coordinates(job.rank);
  if (m.setCoordinates) m.setCoordinates(coords.data());
  setStepComms(job.comm.get(), &mesh, job.rank);

  // A byte-level model's sample is text: it ends every run unless asked not to.
  if (o.sample < 0) o.sample = m.inference.run && m.inference.vocab == 256 ? 200 : 0;
  if (o.sample > 0 && !m.inference.run)
    return fail("--sample: plan '" + m.plan + "' was built without an inference step (" +
                (m.ranks > 1 ? std::string("a plan of several ranks has none yet") : "its loss is not a cross-entropy of logits") +
                ")");
  if (o.threads && m.setThreads) m.setThreads(int(*o.threads));

  const int64_t steps = o.steps ? *o.steps : m.steps;
  uint64_t seed = o.seed ? uint64_t(*o.seed) : m.seed;
  DataSpec dataSpec = m.data;
  if (o.data)
    if (std::string err = parseDataSource(*o.data, dataSpec); !err.empty()) {
      if (job.lead()) std::fprintf(stderr, "error: %s\n", err.c_str());
      return 2;
    }
  const int64_t every = o.checkpointEvery ? *o.checkpointEvery : m.checkpointEvery;
  const int64_t keep = o.checkpointKeep ? *o.checkpointKeep : m.checkpointKeep;
  const std::string ckptDir = o.checkpointDir ? *o.checkpointDir : m.checkpointDir;

  // The setup every rank does; an error on any rank ends every one.
  std::string setupError;
  std::optional<Arena> arena;
  try {
    arena.emplace(m.arenaBytes);
  } catch (const std::bad_alloc &) {
    setupError = "cannot allocate the arena of " + mib(m.arenaBytes) + " (" + std::to_string(m.arenaBytes) + " bytes)";
  }
  if (job.failed(setupError, status)) return status;
  uint8_t *mem = arena->data();
  int64_t start = 0;
  std::string setupNote;
  std::optional<Resumed> resumed;
  if (o.resume) {
    Result<Resumed> r = loadCheckpoint(m, mem, *o.resume, o.dropUnusedTensors);
    if (r.ok()) resumed = *r;
    if (!r.ok()) {
      setupError = r.error();
    } else if (o.seed && uint64_t(*o.seed) != r->seed) {
      setupError = "--seed " + std::to_string(*o.seed) + " differs from the checkpoint's seed " +
                   std::to_string(r->seed) + " in '" + r->folder + "'; a resumed run keeps its seed";
    } else {
      seed = r->seed;
      start = r->stepsDone;
      for (const std::string &w : r->warnings)
        if (job.lead()) std::fprintf(stderr, "warning: %s\n", w.c_str());
      setupNote = "resumed from " + r->folder + ": " + counted(start, "step") + " done";
      if (!r->dropped.empty())
        setupNote += " (" + droppedNote(r->dropped) + ")";
      if (start >= steps) // said, and the load (and a --sample) still done
        setupNote += "; nothing to train: " + std::string(o.steps ? "--steps is " : "the plan's steps are ") +
                     std::to_string(steps) + " (a larger --steps trains on)";
    }
  } else {
    initialiseParams(m, mem, seed);
    if (o.initFrom)
      if (Status s = loadInitialWeights(m, mem, *o.initFrom, setupNote, o.dropUnusedTensors); !s.ok()) setupError = s.message();
  }
  if (job.failed(setupError, status)) return status;
  if (!setupNote.empty() && job.lead()) std::printf("%s\n", setupNote.c_str());

  // Where checkpoints go is checked before training: writable on every
  // rank, and holding no other run's checkpoints this run would overwrite.
  const bool writesInitial = steps == 0 && !o.resume && o.checkpointDir;
  const int64_t firstWrite = writesInitial ? 0
                             : every > 0 && (start / every + 1) * every <= steps ? (start / every + 1) * every
                                                                                 : -1;
  CheckpointSeries series;
  if (writesInitial || (every > 0 && start < steps)) {
    std::vector<std::string> warnings;
    Result<CheckpointSeries> s = startCheckpointSeries(ckptDir, keep, start, resumed ? &*resumed : nullptr,
                                                       firstWrite, job.rank, warnings);
    for (const std::string &w : warnings)
      if (job.lead()) std::fprintf(stderr, "warning: %s\n", w.c_str());
    if (job.failed(s.ok() ? "" : s.error(), status)) return status;
    series = *s;
  }

  Result<std::unique_ptr<DataSource>> data = openDataSource(dataSpec, m.batch, seed);
  if (job.failed(data.ok() ? "" : data.error(), status)) return status;

  // The rank that holds the loss (the loss's stage, every other coordinate
  // 0) tells the others the step's numbers.
  int64_t holder = -1;
  for (const ExecProgram &p : m.programs)
    for (const ExecOutput &out : p.outputs)
      if (out.name == "loss" && holder < 0) {
        std::array<int64_t, kMeshAxes> c{};
        c[kPP] = p.stage;
        holder = mesh.rankOf(c);
      }
  if (holder < 0) return fail("plan '" + m.plan + "' has no 'loss' output to train on");
  const std::string lossBroadcast = "the broadcast of the step's loss from rank " + std::to_string(holder);
  const ExecOutput *outputOf[kNumbers] = {};
  const char *numberNames[kNumbers] = {"loss", "lr", "grad_norm", "found_inf", "loss_scale"};
  for (const ExecOutput &out : m.outputs)
    for (int k = 0; k < kNumbers; ++k)
      if (out.name == numberNames[k]) outputOf[k] = &out;
  // Which numbers the plan has at all (the holder's program decides).
  bool has[kNumbers] = {};
  for (const ExecProgram &p : m.programs)
    if (std::find(p.ranks.begin(), p.ranks.end(), holder) != p.ranks.end())
      for (const ExecOutput &out : p.outputs)
        for (int k = 0; k < kNumbers; ++k) has[k] |= out.name == numberNames[k];

  int64_t parameters = 0; // the model's, whole, each once (a tied weight lives on two stages)
  std::set<std::string> seenParams;
  for (const ExecProgram &p : m.programs)
    for (const ExecParam &param : p.params)
      if (param.modelParam && seenParams.insert(param.name).second) {
        int64_t n = 1;
        for (int64_t d : param.globalShape.empty() ? param.shape : param.globalShape) n *= d;
        parameters += n;
      }
  const int64_t tokensPerStep = m.batch.batch * m.batch.seq;
  if (job.lead()) {
    if (m.ranks > 1)
      std::printf("training %s (compiled, %lld ranks: %s): %lld parameters, %.3g FLOP a step, %s, %s\n",
                  m.plan.c_str(), (long long)m.ranks, mesh.describe().c_str(), (long long)parameters, m.flopsPerStep,
                  (*data)->describe().c_str(), counted(steps, "step").c_str());
    else
      std::printf("training %s (compiled, %s): %lld parameters, %.3g FLOP a step, %s, %s\n", m.plan.c_str(),
                  m.rankClass.c_str(), (long long)parameters, m.flopsPerStep, (*data)->describe().c_str(),
                  counted(steps, "step").c_str());
    std::printf("arena%s: %s (%llu bytes); the ledger's figure: %s (%llu bytes)\n",
                m.ranks > 1 ? (" of rank 0 (" + m.rankClass + ")").c_str() : "", mib(m.arenaBytes).c_str(),
                (unsigned long long)m.arenaBytes, mib(m.ledgerBytes).c_str(), (unsigned long long)m.ledgerBytes);
    std::fflush(stdout);
  }

  std::FILE *metrics = nullptr;
  if (o.metrics && job.lead()) {
    metrics = std::fopen(o.metrics->c_str(), "a");
    if (!metrics) setupError = "cannot open '" + *o.metrics + "' for --metrics: " + std::strerror(errno);
  }
  if (job.failed(setupError, status)) return status;
  struct CloseFile {
    std::FILE *f;
    ~CloseFile() {
      if (f) std::fclose(f);
    }
  } closeMetrics{metrics};
  const bool terminal = job.lead() && ::isatty(STDERR_FILENO) && ::isatty(STDOUT_FILENO);
  StepProfile profile;
  double totalSeconds = 0;
  const int64_t dpRank = coords[kDP];
  SlowStepMonitor slow(thisMachine(m.predictedStepSeconds, m.predictionBasis));
  RankSync sync;
  sync.anyFailed = [&](bool failed) {
    return job.comm ? job.comm->lowestRank(failed, "the agreement on whether every rank wrote its part") >= 0 : failed;
  };
  sync.gather = [&](const std::string &mine) {
    return job.comm->gatherToRankZero(mine, "gathering the checkpoint files' checksums on rank 0");
  };
  if (o.trace) {
    // One origin for every rank: right after they all arrive.
    if (job.comm)
      if (Status s = job.comm->barrier("the barrier that starts the trace's clock"); !s.ok()) return fail(s.message());
    startStepTrace(job.rank);
  }
  // A run that trains nothing from fresh weights, told where checkpoints go,
  // writes them as step 0: weights imported with --init-from, to resume or
  // to convert.
  if (steps == 0 && !o.resume && o.checkpointDir) {
    if (Status s = saveCheckpoint(m, mem, series, 0, seed, job.comm ? &sync : nullptr); !s.ok()) {
      job.report(s.message());
      return 1;
    }
    if (job.lead()) std::printf("wrote the initial weights as %s\n", checkpointFolder(ckptDir, 0).c_str());
  }
  for (int64_t step = start; step < steps; ++step) {
    job.at(JobPhase::Step, step);
    if (o.trace) {
      if (step - start < o.traceSteps) setTraceStep(step);
      else stopStepTrace();
    }
    slow.beforeStep(step);
    auto begin = std::chrono::steady_clock::now();
    std::string stepError;
    Result<Batch> batch = (*data)->batch(step);
    if (!batch.ok()) stepError = batch.error();
    // The rank's rows: dp rank d's micro-batch j is block d * m + j of the
    // global batch (exec/ExecutionPlan.h batchRowsOf).
    for (const ExecInput &in : m.inputs) {
      if (!stepError.empty()) break;
      if (in.kind == ExecInput::Kind::Step) {
        uint64_t bits = encodeElement(in.type, double(step + 1));
        std::memcpy(mem + in.offset, &bits, byteSize(in.type));
        continue;
      }
      const HostTensor &src = in.kind == ExecInput::Kind::Tokens ? batch->tokens : batch->targets;
      if (src.type != in.type) {
        stepError = "the data source's tokens are not the plan's input type";
        break;
      }
      const int64_t rows = in.shape.empty() ? 0 : in.shape[0];
      const int64_t first = (dpRank * m.microBatches + in.slot) * rows;
      const size_t rowBytes = size_t(m.batch.seq) * byteSize(src.type);
      if (first + rows > m.batch.batch || (in.shape.size() == 2 && in.shape[1] != m.batch.seq)) {
        stepError = "internal error: input rows [" + std::to_string(first) + ", " + std::to_string(first + rows) +
                    ") are outside the batch of " + std::to_string(m.batch.batch);
        break;
      }
      std::memcpy(mem + in.offset, src.bytes.data() + size_t(first) * rowBytes, size_t(rows) * rowBytes);
    }
    if (job.failed(stepError.empty() ? stepError : "step " + std::to_string(step) + ": " + stepError, status))
      return status;
    m.step(mem, seed * 1000003ull + uint64_t(step) + 1, o.profile || tracing() ? &profile : nullptr);
    if (std::string err = planc::cpu::takeKernelError(); !err.empty()) stepError = err;
    if (job.failed(stepError.empty() ? stepError : "step " + std::to_string(step) + ": " + stepError, status))
      return status;
    for (const ExecOutput &out : m.outputs)
      if (out.copyToParam >= 0) std::memcpy(mem + m.params[size_t(out.copyToParam)].offset, mem + out.offset, out.bytes);
    double numbers[kNumbers];
    for (int k = 0; k < kNumbers; ++k) numbers[k] = outputOf[k] ? readScalar(mem, *outputOf[k]) : std::nan("");
    if (job.comm)
      if (Status s = job.comm->broadcast(numbers, kNumbers, holder, lossBroadcast); !s.ok()) {
        job.report(s.message());
        abortMpi(1);
      }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    totalSeconds += seconds;
    const double lossValue = numbers[kLoss];
    if (!std::isfinite(lossValue)) {
      if (terminal) clearProgress();
      char buf[64];
      std::snprintf(buf, sizeof buf, "%f", lossValue);
      if (job.lead()) fail("the loss is " + std::string(buf) + " at step " + std::to_string(step) + "; training stopped");
      return 1;
    }
    // Loss scaling (f16): a step whose scaled gradients overflowed changed
    // nothing but the scale.
    const bool skipped = has[kFoundInf] && numbers[kFoundInf] != 0;
    if (metrics) {
      std::fprintf(metrics, "{\"step\": %lld, \"loss\": %s", (long long)step, jsonNumber(lossValue).c_str());
      if (has[kFoundInf]) std::fprintf(metrics, ", \"skipped\": %s", skipped ? "true" : "false");
      if (has[kLossScale]) std::fprintf(metrics, ", \"loss_scale\": %s", jsonNumber(numbers[kLossScale]).c_str());
      if (has[kLr]) std::fprintf(metrics, ", \"lr\": %s", jsonNumber(numbers[kLr]).c_str());
      if (has[kGradNorm]) std::fprintf(metrics, ", \"grad_norm\": %s", jsonNumber(numbers[kGradNorm]).c_str());
      std::fprintf(metrics, ", \"seconds\": %.6f}\n", seconds);
      if (std::fflush(metrics) != 0) stepError = "cannot write '" + *o.metrics + "': " + std::strerror(errno);
    }
    if (job.failed(stepError, status)) return status;
    if (job.lead() && ((step + 1 - start) % o.logEvery == 0 || step + 1 == steps)) {
      StepRecord r;
      r.step = step;
      r.loss = lossValue;
      if (has[kLr]) r.lr = numbers[kLr];
      r.seconds = seconds;
      r.tokens = tokensPerStep;
      std::string line = formatStepLine(r);
      char buf[160];
      if (has[kGradNorm]) {
        std::snprintf(buf, sizeof buf, "  grad norm %.4f", numbers[kGradNorm]);
        line += buf;
      }
      std::snprintf(buf, sizeof buf, "  %.0f tokens/s", double(tokensPerStep) / seconds);
      line += buf;
      if (m.peakFlops > 0) {
        // The device's peak is one rank's: the mesh has `ranks` of them.
        std::snprintf(buf, sizeof buf, "  MFU %.1f%%",
                      100.0 * m.flopsPerStep / seconds / (m.peakFlops * double(m.ranks)));
        line += buf;
      }
      line += "  arena " + mib(m.arenaBytes);
      if (skipped) {
        std::snprintf(buf, sizeof buf, "  skipped: gradients overflowed at loss scale %g",
                      has[kLossScale] ? numbers[kLossScale] : 0.0);
        line += buf;
      }
      if (terminal) clearProgress();
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    }
    if (std::string warning = slow.afterStep(seconds); !warning.empty() && job.lead()) {
      if (terminal) clearProgress();
      std::printf("%s\n", warning.c_str());
    }
    if (every > 0 && (step + 1) % every == 0) {
      job.at(JobPhase::Checkpoint, step);
      if (Status s = saveCheckpoint(m, mem, series, step + 1, seed, job.comm ? &sync : nullptr); !s.ok()) {
        if (terminal) clearProgress();
        job.report("step " + std::to_string(step) + ": " + s.message());
        return 1;
      } else if (job.lead()) {
        if (terminal) clearProgress();
        std::printf("checkpoint %s written\n", checkpointFolder(ckptDir, step + 1).c_str());
        std::fflush(stdout);
      }
    }
    if (terminal) drawProgress(step + 1, steps, totalSeconds / double(step + 1 - start));
  }
  if (terminal) clearProgress();
  job.at(JobPhase::Shutdown, job.stepReached);
  if (o.trace) {
    stopStepTrace();
    if (std::string err = writeTrace(*o.trace, job.comm.get(), job.rank); !err.empty()) {
      job.report(err);
      return 1;
    }
  }
  if (o.sample > 0) {
    SampleOptions so;
    so.count = o.sample;
    so.prompt = o.prompt;
    so.temperature = o.temperature;
    so.topK = o.topK;
    so.seed = seed;
    std::printf("sample (%s, temperature %g, top-k %lld):\n", counted(o.sample, "token").c_str(), o.temperature,
                (long long)o.topK);
    std::fflush(stdout);
    if (Status s = sampleTokens(m, mem, so, stdout); !s.ok()) return fail(s.message());
  }
  if (o.profile && job.lead()) {
    double all = 0;
    for (double s : profile.seconds) all += s;
    std::printf("profile%s: %.3f s in kernels over %s\n", m.ranks > 1 ? " of rank 0" : "", all,
                counted(steps - start, "step").c_str());
    for (int c = 0; c < kNumKernelClasses; ++c)
      if (profile.calls[c])
        std::printf("  %-14s %9.3f s  %5.1f%%  %s\n", kKernelClasses[c], profile.seconds[c],
                    all > 0 ? 100.0 * profile.seconds[c] / all : 0.0, counted(profile.calls[c], "call").c_str());
  }
  return 0;
}
