//===- runtime/Executable.cpp - the main() of a compiled plan -------------===//

#include "runtime/Executable.h"
#include "runtime/Arena.h"
#include "runtime/Checkpoint.h"
#include "runtime/CpuKernels.h"
#include "runtime/ElementBits.h"
#include "runtime/ParamInit.h"
#include "runtime/StepLog.h"

#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <unistd.h>

using namespace planc::runtime;

namespace {

struct Options {
  std::optional<int64_t> steps, seed, threads, checkpointEvery, checkpointKeep;
  std::optional<std::string> data, checkpointDir, resume, initFrom, metrics;
  int64_t logEvery = 1;
  bool profile = false;
  int64_t sample = 0;
  bool help = false;
};

void printHelp(const ExecutableModel &m, const char *argv0) {
  std::printf("usage: %s [options]\n\n", argv0);
  std::printf("Trains plan '%s' (built by planc from %s; %s): %lld steps of %lld x %lld tokens by default.\n\n",
              m.plan.c_str(), m.source.c_str(), m.rankClass.c_str(), (long long)m.steps, (long long)m.batch.batch,
              (long long)m.batch.seq);
  std::printf("options:\n"
              "  --steps N             train until N steps are done (default: the plan's, %lld); a resumed\n"
              "                        run continues to N\n"
              "  --data SOURCE         synthetic | text:FILE (bytes are the tokens) | u16:FILE | u32:FILE\n"
              "                        (nanoGPT's .bin token arrays); default: the plan's data\n"
              "  --seed N              initialisation, data and dropout seed (default: the plan's, %llu)\n"
              "  --threads N           threads of the kernels (default: OpenMP's, OMP_NUM_THREADS)\n"
              "  --resume DIR          continue from a checkpoint: a step-<N> folder, or a checkpoint folder\n"
              "                        whose newest complete step is taken\n"
              "  --init-from FILE      initial weights from a safetensors file, by parameter path\n"
              "  --checkpoint-every N  write a checkpoint every N steps (default: the plan's, %lld; 0: none)\n"
              "  --checkpoint-dir DIR  where (default: the plan's, '%s')\n"
              "  --checkpoint-keep K   keep the newest K checkpoints (default: the plan's, %lld; 0: all)\n"
              "  --log-every N         print every Nth step's line (default 1); the last step always\n"
              "  --metrics FILE        also append every step as a JSON line: step, loss, lr, grad_norm (all\n"
              "                        digits), seconds\n"
              "  --profile             print the time spent per kernel class at the end\n"
              "  --sample N            print N generated tokens (not supported yet: needs an inference step)\n"
              "  --help                this text\n\n",
              (long long)m.steps, (unsigned long long)m.seed, (long long)m.checkpointEvery,
              m.checkpointDir.c_str(), (long long)m.checkpointKeep);
  std::printf("Each step prints: step, loss, lr, gradient norm, time, tokens/s%s, arena memory.\n"
              "Exit status: 0 when every step ran; 1 on an error (its message on stderr); 2 on bad options.\n",
              m.peakFlops > 0 ? ", MFU" : "");
}

bool parseInt(const char *text, int64_t &out) {
  if (!text || !*text) return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (errno || *end || v < 0) return false;
  out = v;
  return true;
}

/// Parses argv; an error message, or "".
std::string parseOptions(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    bool hasValue = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      hasValue = true;
    }
    auto take = [&]() -> std::optional<std::string> {
      if (hasValue) return value;
      if (i + 1 < argc) return std::string(argv[++i]);
      return std::nullopt;
    };
    auto number = [&](std::optional<int64_t> &slot) -> std::string {
      auto v = take();
      int64_t n;
      if (!v || !parseInt(v->c_str(), n)) return "option " + arg + " takes a non-negative integer";
      slot = n;
      return "";
    };
    auto text = [&](std::optional<std::string> &slot) -> std::string {
      auto v = take();
      if (!v || v->empty()) return "option " + arg + " takes a value";
      slot = *v;
      return "";
    };
    std::string err;
    std::optional<int64_t> n;
    if (arg == "--help" || arg == "-h") o.help = true;
    else if (arg == "--steps") err = number(o.steps);
    else if (arg == "--seed") err = number(o.seed);
    else if (arg == "--threads") {
      err = number(o.threads);
      if (err.empty() && *o.threads == 0) err = "option --threads takes a positive integer";
    } else if (arg == "--checkpoint-every") err = number(o.checkpointEvery);
    else if (arg == "--checkpoint-keep") err = number(o.checkpointKeep);
    else if (arg == "--log-every") {
      err = number(n);
      if (err.empty() && *n == 0) err = "option --log-every takes a positive integer";
      if (err.empty()) o.logEvery = *n;
    } else if (arg == "--sample") {
      err = number(n);
      if (err.empty()) o.sample = *n;
    } else if (arg == "--profile") o.profile = true;
    else if (arg == "--data") err = text(o.data);
    else if (arg == "--checkpoint-dir") err = text(o.checkpointDir);
    else if (arg == "--resume") err = text(o.resume);
    else if (arg == "--init-from") err = text(o.initFrom);
    else if (arg == "--metrics") err = text(o.metrics);
    else err = "unknown option '" + arg + "' (see --help)";
    if (!err.empty()) return err;
  }
  return "";
}

/// "synthetic", "text:FILE", "u16:FILE", "u32:FILE".
std::string parseData(const std::string &s, DataSpec &spec) {
  if (s == "synthetic") {
    spec = DataSpec{};
    return "";
  }
  size_t colon = s.find(':');
  std::string kind = s.substr(0, colon), path = colon == std::string::npos ? "" : s.substr(colon + 1);
  if (path.empty()) return "--data '" + s + "': expected synthetic, text:FILE, u16:FILE or u32:FILE";
  spec.path = path;
  if (kind == "text") spec.kind = DataSpec::Kind::Text;
  else if (kind == "u16" || kind == "u32") {
    spec.kind = DataSpec::Kind::Tokens;
    spec.tokenDType = kind == "u16" ? ElementType::U16 : ElementType::U32;
  } else return "--data '" + s + "': unknown source '" + kind + "' (synthetic, text, u16 or u32)";
  return "";
}

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

/// Every Param buffer's initial values, as the interpreter's (ParamInit.h).
void initialiseParams(const ExecutableModel &m, uint8_t *arena, uint64_t seed) {
  for (const ExecParam &p : m.params) {
    int64_t n = 1;
    for (int64_t d : p.shape) n *= d;
    std::vector<double> values(size_t(n), p.init == ParamInit::Ones ? 1.0 : 0.0);
    if (p.init == ParamInit::Normal) {
      uint64_t key = initKey(p.initKey, seed);
      for (int64_t i = 0; i < n; ++i) values[size_t(i)] = p.stddev * initialNormal(key, uint64_t(i));
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

int planc::runtime::runExecutable(const ExecutableModel &m, int argc, char **argv) {
  // OpenMP threads that spin between kernels take the cores from OpenBLAS's
  // threads (tiny-gpt's steps: a median of 17 ms but one in ten over 130 ms;
  // passive: 23 ms, every one). OpenMP reads the policy before main, so the
  // executable sets it and starts itself again, once, unless the user chose.
  if (!std::getenv("OMP_WAIT_POLICY") && argc > 0) {
    ::setenv("OMP_WAIT_POLICY", "passive", 1);
    ::execv("/proc/self/exe", argv);
    // Not re-executed (no /proc): go on with the default policy.
  }
  Options o;
  if (std::string err = parseOptions(argc, argv, o); !err.empty()) {
    std::fprintf(stderr, "error: %s\n", err.c_str());
    return 2;
  }
  if (o.help) {
    printHelp(m, argc > 0 ? argv[0] : "model");
    return 0;
  }
  if (m.ranks != 1)
    return fail("plan '" + m.plan + "' runs on a mesh of " + std::to_string(m.ranks) +
                " ranks; this executable is " + m.rankClass +
                ", and running several ranks over MPI is not supported yet");
  if (o.sample > 0)
    return fail("--sample is not supported yet: a compiled plan has only its training step, no inference step");
  if (o.threads && m.setThreads) m.setThreads(int(*o.threads));

  const int64_t steps = o.steps ? *o.steps : m.steps;
  uint64_t seed = o.seed ? uint64_t(*o.seed) : m.seed;
  DataSpec dataSpec = m.data;
  if (o.data)
    if (std::string err = parseData(*o.data, dataSpec); !err.empty()) {
      std::fprintf(stderr, "error: %s\n", err.c_str());
      return 2;
    }
  const int64_t every = o.checkpointEvery ? *o.checkpointEvery : m.checkpointEvery;
  const int64_t keep = o.checkpointKeep ? *o.checkpointKeep : m.checkpointKeep;
  const std::string ckptDir = o.checkpointDir ? *o.checkpointDir : m.checkpointDir;

  std::optional<Arena> arena;
  try {
    arena.emplace(m.arenaBytes);
  } catch (const std::bad_alloc &) {
    return fail("cannot allocate the arena of " + mib(m.arenaBytes) + " (" + std::to_string(m.arenaBytes) + " bytes)");
  }
  uint8_t *mem = arena->data();
  int64_t start = 0;
  if (o.resume) {
    Result<Resumed> r = loadCheckpoint(m, mem, *o.resume);
    if (!r.ok()) return fail(r.error());
    if (o.seed && uint64_t(*o.seed) != r->seed)
      return fail("--seed " + std::to_string(*o.seed) + " differs from the checkpoint's seed " +
                  std::to_string(r->seed) + " in '" + r->folder + "'; a resumed run keeps its seed");
    seed = r->seed;
    start = r->stepsDone;
    std::printf("resumed from %s: %lld steps done\n", r->folder.c_str(), (long long)start);
  } else {
    initialiseParams(m, mem, seed);
    if (o.initFrom)
      if (Status s = loadInitialWeights(m, mem, *o.initFrom); !s.ok()) return fail(s.message());
  }

  Result<std::unique_ptr<DataSource>> data = openDataSource(dataSpec, m.batch, seed);
  if (!data.ok()) return fail(data.error());

  int64_t parameters = 0;
  for (const ExecParam &p : m.params)
    if (p.trained) {
      int64_t n = 1;
      for (int64_t d : p.shape) n *= d;
      parameters += n;
    }
  const int64_t tokensPerStep = m.batch.batch * m.batch.seq;
  std::printf("training %s (compiled, %s): %lld parameters, %.3g FLOP a step, %s, %lld steps\n", m.plan.c_str(),
              m.rankClass.c_str(), (long long)parameters, m.flopsPerStep, (*data)->describe().c_str(),
              (long long)steps);
  std::printf("arena: %s (%llu bytes); the ledger's figure: %s (%llu bytes)\n", mib(m.arenaBytes).c_str(),
              (unsigned long long)m.arenaBytes, mib(m.ledgerBytes).c_str(), (unsigned long long)m.ledgerBytes);
  std::fflush(stdout);

  const ExecOutput *loss = nullptr, *lr = nullptr, *gradNorm = nullptr, *foundInf = nullptr, *lossScale = nullptr;
  for (const ExecOutput &out : m.outputs) {
    if (out.name == "loss") loss = &out;
    if (out.name == "lr") lr = &out;
    if (out.name == "grad_norm") gradNorm = &out;
    if (out.name == "found_inf") foundInf = &out;
    if (out.name == "loss_scale") lossScale = &out;
  }
  if (!loss) return fail("plan '" + m.plan + "' has no 'loss' output to train on");

  std::FILE *metrics = nullptr;
  if (o.metrics) {
    metrics = std::fopen(o.metrics->c_str(), "a");
    if (!metrics) return fail("cannot open '" + *o.metrics + "' for --metrics: " + std::strerror(errno));
  }
  struct CloseFile {
    std::FILE *f;
    ~CloseFile() {
      if (f) std::fclose(f);
    }
  } closeMetrics{metrics};
  const bool terminal = ::isatty(STDERR_FILENO) && ::isatty(STDOUT_FILENO);
  StepProfile profile;
  double totalSeconds = 0;
  const size_t rows = size_t(m.batch.batch / std::max(1, m.microBatches));
  for (int64_t step = start; step < steps; ++step) {
    auto begin = std::chrono::steady_clock::now();
    Result<Batch> batch = (*data)->batch(step);
    if (!batch.ok()) return fail(batch.error());
    for (const ExecInput &in : m.inputs) {
      if (in.kind == ExecInput::Kind::Step) {
        uint64_t bits = encodeElement(in.type, double(step + 1));
        std::memcpy(mem + in.offset, &bits, byteSize(in.type));
        continue;
      }
      const HostTensor &src = in.kind == ExecInput::Kind::Tokens ? batch->tokens : batch->targets;
      const size_t rowBytes = size_t(m.batch.seq) * byteSize(src.type);
      if (src.type != in.type) return fail("the data source's tokens are not the plan's input type");
      std::memcpy(mem + in.offset, src.bytes.data() + size_t(in.slot) * rows * rowBytes, rows * rowBytes);
    }
    m.step(mem, seed * 1000003ull + uint64_t(step) + 1, o.profile ? &profile : nullptr);
    if (std::string err = planc::cpu::takeKernelError(); !err.empty())
      return fail("step " + std::to_string(step) + ": " + err);
    for (const ExecOutput &out : m.outputs)
      if (out.copyToParam >= 0) std::memcpy(mem + m.params[size_t(out.copyToParam)].offset, mem + out.offset, out.bytes);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    totalSeconds += seconds;
    const double lossValue = readScalar(mem, *loss);
    if (!std::isfinite(lossValue)) {
      if (terminal) clearProgress();
      char buf[64];
      std::snprintf(buf, sizeof buf, "%f", lossValue);
      return fail("the loss is " + std::string(buf) + " at step " + std::to_string(step) + "; training stopped");
    }
    // Loss scaling (f16): a step whose scaled gradients overflowed changed
    // nothing but the scale.
    const bool skipped = foundInf && readScalar(mem, *foundInf) != 0;
    if (metrics) {
      std::fprintf(metrics, "{\"step\": %lld, \"loss\": %s", (long long)step, jsonNumber(lossValue).c_str());
      if (foundInf) std::fprintf(metrics, ", \"skipped\": %s", skipped ? "true" : "false");
      if (lossScale) std::fprintf(metrics, ", \"loss_scale\": %s", jsonNumber(readScalar(mem, *lossScale)).c_str());
      if (lr) std::fprintf(metrics, ", \"lr\": %s", jsonNumber(readScalar(mem, *lr)).c_str());
      if (gradNorm) std::fprintf(metrics, ", \"grad_norm\": %s", jsonNumber(readScalar(mem, *gradNorm)).c_str());
      std::fprintf(metrics, ", \"seconds\": %.6f}\n", seconds);
      if (std::fflush(metrics) != 0) return fail("cannot write '" + *o.metrics + "': " + std::strerror(errno));
    }
    if ((step + 1 - start) % o.logEvery == 0 || step + 1 == steps) {
      StepRecord r;
      r.step = step;
      r.loss = lossValue;
      if (lr) r.lr = readScalar(mem, *lr);
      r.seconds = seconds;
      r.tokens = tokensPerStep;
      std::string line = formatStepLine(r);
      char buf[160];
      if (gradNorm) {
        std::snprintf(buf, sizeof buf, "  grad norm %.4f", readScalar(mem, *gradNorm));
        line += buf;
      }
      std::snprintf(buf, sizeof buf, "  %.0f tokens/s", double(tokensPerStep) / seconds);
      line += buf;
      if (m.peakFlops > 0) {
        std::snprintf(buf, sizeof buf, "  MFU %.1f%%", 100.0 * m.flopsPerStep / seconds / m.peakFlops);
        line += buf;
      }
      line += "  arena " + mib(m.arenaBytes);
      if (skipped) {
        std::snprintf(buf, sizeof buf, "  skipped: gradients overflowed at loss scale %g",
                      lossScale ? readScalar(mem, *lossScale) : 0.0);
        line += buf;
      }
      if (terminal) clearProgress();
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    }
    if (every > 0 && (step + 1) % every == 0) {
      if (Status s = saveCheckpoint(m, mem, ckptDir, step + 1, seed, keep); !s.ok()) {
        if (terminal) clearProgress();
        return fail("step " + std::to_string(step) + ": " + s.message());
      }
    }
    if (terminal) drawProgress(step + 1, steps, totalSeconds / double(step + 1 - start));
  }
  if (terminal) clearProgress();
  if (o.profile) {
    double all = 0;
    for (double s : profile.seconds) all += s;
    std::printf("profile: %.3f s in kernels over %lld steps\n", all, (long long)(steps - start));
    for (int c = 0; c < kNumKernelClasses; ++c)
      if (profile.calls[c])
        std::printf("  %-14s %9.3f s  %5.1f%%  %lld calls\n", kKernelClasses[c], profile.seconds[c],
                    all > 0 ? 100.0 * profile.seconds[c] / all : 0.0, (long long)profile.calls[c]);
  }
  return 0;
}
