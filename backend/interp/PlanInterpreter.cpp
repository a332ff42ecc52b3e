//===- backend/interp/PlanInterpreter.cpp - every rank of an execution plan in one process -===//

#include "backend/interp/PlanInterpreter.h"
#include "backend/interp/TensorAdapters.h"

#include "exec/CommCall.h"
#include "exec/Groups.h"
#include "ir/LocalBlocks.h"
#include "ir/MeshLayout.h"
#include "ir/OpDef.h"
#include "ir/ShapeMath.h"
#include "runtime/Arena.h"
#include "runtime/ElementBits.h"
#include "runtime/InProcessCommunicator.h"
#include "support/Error.h"
#include "support/Plural.h"

#include <algorithm>
#include <cstring>
#include <map>

using namespace planc;
using namespace planc::interp;
using namespace planc::ir;
using planc::exec::Buffer;
using planc::exec::RankProgram;
using planc::exec::Step;

namespace {

/// What the kernels of one program see: a value per buffer (with its
/// global type, so a kernel finds where its block sits) and an op per step.
struct ScratchProgram {
  Module module;
  std::vector<Value *> values; // by buffer
  std::vector<Op *> ops;       // by step; null for communication steps
};

/// One rank's run through its program.
struct RankRun {
  int64_t rank = 0;
  const RankProgram *program = nullptr;
  const ScratchProgram *scratch = nullptr;
  std::unique_ptr<runtime::Arena> arena;
  size_t next = 0;                          // the step to run
  std::vector<runtime::Request> requests;   // by event; 0: complete (or not started)
  /// By event: what an accumulating communication step's output held before
  /// it started, added back when it completes (output += result).
  std::map<int64_t, std::pair<int64_t, Tensor>> heldSums;
  bool done = false;
};

runtime::CollectiveKind collectiveKindOf(exec::CommCall::Collective c) {
  switch (c) {
  case exec::CommCall::Collective::AllReduce: return runtime::CollectiveKind::AllReduce;
  case exec::CommCall::Collective::ReduceScatter: return runtime::CollectiveKind::ReduceScatter;
  case exec::CommCall::Collective::AllGather: return runtime::CollectiveKind::AllGather;
  case exec::CommCall::Collective::AllToAll: return runtime::CollectiveKind::AllToAll;
  case exec::CommCall::Collective::Broadcast: return runtime::CollectiveKind::Broadcast;
  }
  return runtime::CollectiveKind::AllReduce;
}

std::string stepText(const RankProgram &p, size_t i) {
  const Step &s = p.steps[i];
  std::string text = "step " + std::to_string(i) + " (" + std::string(spelling(s.kind));
  if (!s.outputs.empty() && s.outputs[0] >= 0) text += " %" + p.buffers[size_t(s.outputs[0])].name;
  if (s.microBatch >= 0) text += ", mb " + std::to_string(s.microBatch);
  return text + ")";
}

} // namespace

struct PlanInterpreter::State {
  const exec::ExecutionPlan &plan;
  MeshLayout mesh;
  std::vector<std::unique_ptr<ScratchProgram>> scratch; // by program
  std::vector<RankRun> ranks;
  runtime::InProcessWorld world;

  explicit State(const exec::ExecutionPlan &plan)
      : plan(plan), mesh(plan.mesh), world(MeshLayout(plan.mesh).numRanks()) {
    for (const RankProgram &p : plan.programs) scratch.push_back(makeScratch(p));
    for (int64_t r = 0; r < mesh.numRanks(); ++r) {
      RankRun run;
      run.rank = r;
      int64_t index = exec::programIndexOf(plan, r);
      if (index >= 0) {
        run.program = &plan.programs[size_t(index)];
        run.scratch = scratch[size_t(index)].get();
        run.arena = std::make_unique<runtime::Arena>(run.program->arenaSize);
      }
      ranks.push_back(std::move(run));
    }
  }

  static std::unique_ptr<ScratchProgram> makeScratch(const RankProgram &p) {
    auto s = std::make_unique<ScratchProgram>();
    for (const Buffer &b : p.buffers) s->values.push_back(s->module.addInput(b.name, b.type()));
    for (const Step &step : p.steps) {
      if (step.kind >= OpKind::NumOps || exec::isCommunicationStep(step.kind)) {
        s->ops.push_back(nullptr);
        continue;
      }
      std::vector<Value *> operands;
      Value *any = nullptr;
      for (int64_t in : step.inputs)
        if (in >= 0 && size_t(in) < s->values.size()) any = s->values[size_t(in)];
      for (int64_t in : step.inputs)
        operands.push_back(in >= 0 && size_t(in) < s->values.size() ? s->values[size_t(in)] : any);
      std::vector<TensorType> types;
      for (int64_t out : step.outputs) types.push_back(p.buffers[size_t(out)].type());
      s->ops.push_back(s->module.append(step.kind, std::move(operands), std::move(types), step.attrs));
    }
    return s;
  }

  uint8_t *bytesOf(RankRun &r, int64_t buffer) { return r.arena->data() + r.program->buffers[size_t(buffer)].offset; }

  Tensor decode(RankRun &r, int64_t buffer) {
    const Buffer &b = r.program->buffers[size_t(buffer)];
    Tensor t(b.local(), b.type().dtype);
    runtime::decodeBuffer(toElementType(b.type().dtype), bytesOf(r, buffer), t.data.size(), t.data.data());
    return t;
  }

  void encode(RankRun &r, int64_t buffer, const Tensor &t) {
    const Buffer &b = r.program->buffers[size_t(buffer)];
    runtime::encodeBuffer(toElementType(b.type().dtype), t.data.data(), t.data.size(), bytesOf(r, buffer));
  }

  llvm::Error failAt(const RankRun &r, size_t i, const std::string &message) const {
    return makeError(stepText(*r.program, i) + " on rank " + std::to_string(r.rank) + ": " + message);
  }

  /// A compute step: decode, kernel, round, (accumulate,) encode.
  llvm::Error compute(RankRun &r, size_t i, uint64_t seed) {
    const Step &s = r.program->steps[i];
    const Op *op = r.scratch->ops[i];
    const OpDef &def = opDef(s.kind);
    if (!def.eval) return failAt(r, i, "the op has no reference kernel");
    std::vector<Tensor> inputs(s.inputs.size());
    std::vector<const Tensor *> in;
    for (size_t k = 0; k < s.inputs.size(); ++k) {
      if (s.inputs[k] < 0) {
        in.push_back(nullptr); // a stage_merge operand of another stage
        continue;
      }
      inputs[k] = decode(r, s.inputs[k]);
      in.push_back(&inputs[k]);
    }
    std::vector<Tensor> outs;
    for (int64_t o : s.outputs) outs.emplace_back(r.program->buffers[size_t(o)].local(), r.program->buffers[size_t(o)].type().dtype);
    EvalContext ctx;
    ctx.seed = seed;
    ctx.mesh = &mesh;
    ctx.rank = r.rank;
    def.eval(ctx, *op, in, outs);
    if (!ctx.error.empty()) return failAt(r, i, ctx.error);
    for (size_t k = 0; k < outs.size(); ++k) {
      const Buffer &b = r.program->buffers[size_t(s.outputs[k])];
      roundToDType(outs[k]);
      if (s.accumulates(k)) {
        Tensor held = decode(r, s.outputs[k]);
        for (size_t e = 0; e < held.data.size(); ++e) outs[k].data[e] += held.data[e];
        roundToDType(outs[k]);
      }
      // The padding of an uneven split must stay 0 (ir/LocalBlocks.h).
      if (isPadded(b.type(), mesh))
        if (std::string e = checkPaddingIsZero(outs[k], b.type(), mesh, r.rank); !e.empty())
          return failAt(r, i, "it leaves a value in the padding: " + e);
      encode(r, s.outputs[k], outs[k]);
    }
    return llvm::Error::success();
  }

  /// A communication step: starts it on the rank's communicator.
  llvm::Error communicate(RankRun &r, size_t i) {
    const Step &s = r.program->steps[i];
    runtime::Communicator &comm = world.rank(r.rank);
    std::string error;
    // An output that accumulates gets the result added to what it holds.
    Tensor held;
    if (s.accumulates(0) && !s.outputs.empty()) held = decode(r, s.outputs[0]);
    std::string why;
    std::optional<exec::CommCall> call = exec::commCallOf(*r.program, i, why);
    if (!call) return failAt(r, i, why);
    runtime::Request request = 0;
    if (call->kind != exec::CommCall::Kind::Collective) {
      int64_t peer = exec::peerOf(plan, s, r.rank);
      if (peer < 0) return failAt(r, i, "the message names no peer");
      uint8_t *bytes = bytesOf(r, call->block);
      request = call->kind == exec::CommCall::Kind::Send
                    ? comm.send(peer, call->tag, bytes, call->outputBytes, error)
                    : comm.recv(peer, call->tag, bytes, call->outputBytes, error);
    } else {
      const Buffer &from = r.program->buffers[size_t(call->block)];
      runtime::CollectiveCall c;
      c.type = toElementType(from.type().dtype);
      c.group = exec::groupOf(plan, s, r.rank);
      c.shape.assign(from.local().begin(), from.local().end());
      c.kind = collectiveKindOf(call->collective);
      c.op = call->reduce == exec::CommCall::Reduce::Max ? runtime::ReduceOp::Max : runtime::ReduceOp::Sum;
      c.dim = call->dim;
      c.gatheredRows = call->gatheredRows;
      c.splitDim = call->splitDim;
      c.concatDim = call->concatDim;
      c.root = call->root;
      if (c.group.empty()) return failAt(r, i, "the collective names no group");
      request = comm.start(c, bytesOf(r, call->input), bytesOf(r, call->output), error);
    }
    if (!request) return failAt(r, i, error);
    if (s.accumulates(0) && s.event >= 0 && !s.outputs.empty()) r.heldSums[s.event] = {s.outputs[0], held};
    if (s.event >= 0) {
      if (size_t(s.event) >= r.requests.size()) r.requests.resize(size_t(s.event) + 1, 0);
      r.requests[size_t(s.event)] = request;
    }
    return llvm::Error::success();
  }

  /// Whether event `e` of the rank has completed (an error is returned through `err`).
  bool complete(RankRun &r, int64_t e, std::string &err) {
    if (e < 0 || size_t(e) >= r.requests.size() || !r.requests[size_t(e)]) return true;
    if (!world.rank(r.rank).test(r.requests[size_t(e)], err)) return false;
    r.requests[size_t(e)] = 0;
    if (auto it = r.heldSums.find(e); it != r.heldSums.end()) {
      Tensor sum = decode(r, it->second.first);
      for (size_t k = 0; k < sum.data.size(); ++k) sum.data[k] += it->second.second.data[k];
      roundToDType(sum);
      encode(r, it->second.first, sum);
      r.heldSums.erase(it);
    }
    return true;
  }

  /// Runs the rank until it must wait or ends; whether it moved on.
  llvm::Expected<bool> advance(RankRun &r, uint64_t seed) {
    bool moved = false;
    const RankProgram &p = *r.program;
    while (r.next < p.steps.size()) {
      const Step &s = p.steps[r.next];
      for (int64_t e : s.waits) {
        std::string err;
        if (!complete(r, e, err)) return moved;
        if (!err.empty()) return failAt(r, r.next, err);
      }
      if (llvm::Error e = exec::isCommunicationStep(s.kind) ? communicate(r, r.next) : compute(r, r.next, seed))
        return e;
      ++r.next;
      moved = true;
    }
    // The end of the step waits for everything in flight.
    for (size_t e = 0; e < r.requests.size(); ++e) {
      std::string err;
      if (!complete(r, int64_t(e), err)) return moved;
      if (!err.empty()) return makeError("rank " + std::to_string(r.rank) + " at the end of the step: " + err);
    }
    r.done = true;
    return true;
  }

  llvm::Error runStep(uint64_t seed) {
    for (RankRun &r : ranks) {
      r.next = 0;
      r.done = !r.program;
      r.requests.assign(r.program ? size_t(r.program->events) : 0, 0);
      r.heldSums.clear();
    }
    for (;;) {
      bool moved = false, all = true;
      for (RankRun &r : ranks) {
        if (r.done) continue;
        auto m = advance(r, seed);
        if (!m) return m.takeError();
        moved |= *m;
        all &= r.done;
      }
      if (all) break;
      if (!moved) {
        std::string text = "deadlock: no rank can go on";
        for (const RankRun &r : ranks)
          if (!r.done)
            text += "\n  rank " + std::to_string(r.rank) + " waits at " +
                    (r.next < r.program->steps.size() ? stepText(*r.program, r.next) : std::string("the end of the step"));
        std::string pending = world.pending();
        if (!pending.empty()) text += "\n  in flight:\n" + pending;
        return makeError(text);
      }
    }
    carryUpdates();
    return llvm::Error::success();
  }

  /// An update not made in place (plain SGD's new value in a buffer of its
  /// own) becomes the parameter the next step reads.
  void carryUpdates() {
    for (RankRun &r : ranks) {
      if (!r.program) continue;
      const RankProgram &p = *r.program;
      for (const exec::OutputBinding &o : p.outputs) {
        if (!o.isUpdate() || o.buffer < 0) continue;
        for (size_t b = 0; b < p.buffers.size(); ++b) {
          const Buffer &home = p.buffers[b];
          if (home.role != exec::BufferRole::Param || home.path != o.path) continue;
          int64_t from = o.buffer;
          while (from >= 0 && size_t(from) != b) from = p.buffers[size_t(from)].aliasOf;
          if (from == int64_t(b)) break; // in place
          const Buffer &src = p.buffers[size_t(o.buffer)];
          if (src.size == home.size && src.type().dtype == home.type().dtype)
            std::memmove(bytesOf(r, int64_t(b)), bytesOf(r, o.buffer), size_t(home.size));
          break;
        }
      }
    }
  }

  llvm::Error load(const RankTensorMaps &feeds, exec::BufferRole role) {
    if (int64_t(feeds.size()) != mesh.numRanks())
      return makeError("feeds for " + counted(int64_t(feeds.size()), "rank") + ", but the mesh has " +
                       std::to_string(mesh.numRanks()));
    for (RankRun &r : ranks) {
      if (!r.program) continue;
      for (size_t b = 0; b < r.program->buffers.size(); ++b) {
        const Buffer &buf = r.program->buffers[b];
        if (buf.role != role || buf.aliasOf >= 0) continue;
        const char *what = role == exec::BufferRole::Param ? "parameter" : "input";
        auto it = feeds[size_t(r.rank)].find(buf.value());
        if (it == feeds[size_t(r.rank)].end())
          return makeError(std::string("no value fed for ") + what + " '%" + buf.value() + "' on rank " +
                           std::to_string(r.rank));
        Tensor t = it->second;
        if (buf.slot >= 0) {
          // Micro-batch j's rows of the rank's whole batch.
          int64_t rows = buf.local().empty() ? 1 : buf.local()[0];
          if (t.shape.empty() || t.shape[0] < (buf.slot + 1) * rows)
            return makeError(std::string(what) + " '%" + buf.value() + "' on rank " + std::to_string(r.rank) + " has shape " +
                             toString(t.shape) + ", too few rows for micro-batch " + std::to_string(buf.slot) + " of " +
                             std::to_string(rows));
          const int64_t row = product(t.shape, 1);
          Tensor slot(buf.local(), buf.type().dtype);
          std::copy_n(t.data.begin() + long(buf.slot * rows * row), slot.data.size(), slot.data.begin());
          t = std::move(slot);
        }
        if (t.shape != buf.local())
          return makeError(std::string(what) + " '%" + buf.value() + "' is " + toString(buf.type()) + ", local shape " +
                           toString(buf.local()) + ", but rank " + std::to_string(r.rank) + " is fed shape " +
                           toString(t.shape));
        t.dtype = buf.type().dtype;
        roundToDType(t);
        encode(r, int64_t(b), t);
      }
    }
    return llvm::Error::success();
  }

  llvm::Expected<RankTensorMaps> outputs() {
    RankTensorMaps out(size_t(mesh.numRanks()));
    // Which stages bind each output.
    std::map<std::string, std::vector<int64_t>> holders; // name -> program indices
    for (size_t p = 0; p < plan.programs.size(); ++p)
      for (const exec::OutputBinding &o : plan.programs[p].outputs) holders[o.name].push_back(int64_t(p));
    for (RankRun &r : ranks) {
      for (const auto &holder : holders) {
        // Named, not a structured binding: lambdas cannot capture those in C++17.
        const std::string &name = holder.first;
        const std::vector<int64_t> &programs = holder.second;
        RankRun *from = &r;
        if (!r.program || std::find_if(r.program->outputs.begin(), r.program->outputs.end(), [&](const exec::OutputBinding &o) {
                            return o.name == name;
                          }) == r.program->outputs.end()) {
          MeshCoords c = mesh.coordinates(r.rank);
          c[unsigned(MeshAxis::PP)] = plan.programs[size_t(programs.front())].stage;
          from = &ranks[size_t(mesh.rankOf(c))];
        }
        for (const exec::OutputBinding &o : from->program->outputs)
          if (o.name == name) out[size_t(r.rank)][name] = decode(*from, o.buffer);
      }
    }
    return out;
  }
};

PlanInterpreter::PlanInterpreter(const exec::ExecutionPlan &plan) : state(std::make_unique<State>(plan)) {}
PlanInterpreter::~PlanInterpreter() = default;

llvm::Error PlanInterpreter::loadParams(const RankTensorMaps &feeds) { return state->load(feeds, exec::BufferRole::Param); }
llvm::Error PlanInterpreter::loadInputs(const RankTensorMaps &feeds) { return state->load(feeds, exec::BufferRole::Input); }
llvm::Error PlanInterpreter::runStep(uint64_t seed) { return state->runStep(seed); }
llvm::Expected<RankTensorMaps> PlanInterpreter::outputs() const { return state->outputs(); }

llvm::Expected<Tensor> PlanInterpreter::param(int64_t rank, const std::string &value) const {
  if (rank < 0 || rank >= state->mesh.numRanks()) return makeError("rank " + std::to_string(rank) + " is not in the mesh");
  RankRun &r = state->ranks[size_t(rank)];
  if (r.program)
    for (size_t b = 0; b < r.program->buffers.size(); ++b)
      if (r.program->buffers[b].role == exec::BufferRole::Param && r.program->buffers[b].value() == value)
        return state->decode(r, int64_t(b));
  return makeError("rank " + std::to_string(rank) + " holds no parameter '%" + value + "'");
}
