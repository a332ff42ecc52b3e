//===- exec/ExecutionPlan.h - what every rank runs, step by step, in which bytes -*- C++ -*-===//
//
// The execution plan is the one input of every backend: for each rank class
// (the ranks of one pipeline stage run the same program on blocks of the
// same shape) the straight-line list of steps in schedule order, and the
// buffers they read and write at fixed offsets of one arena per rank. It is
// built once (exec/BuildPlan.h) from the placed step of one micro-batch, its
// pipeline schedule and the memory planner's placements (analysis/
// MemoryPlan.h), so the memory `planc check` reports is this allocation.
//
// Buffers. One per value of the placed step and micro-batch slot it lives in:
// slot j for values made in micro-batch j (activations, temporaries, messages,
// and the rows of the batch micro-batch j reads), slot -1 for values of the
// whole step (parameters and optimizer state, values of parameters alone made
// once, gradients and the loss summed over the micro-batches, the
// optimizer's values). A buffer that reuses another's bytes in place (an
// update's new parameter, an all-reduce of a buffer read by nothing after it)
// names it in `aliasOf` and has its offset. Every buffer lives from the step
// that writes it first to the last step that reads it (kBeforeSteps for
// what is there when the step starts: parameters, states, the batch;
// kAfterSteps for what is kept after it: parameters, states, the outputs).
// Two buffers whose lives overlap never share a byte, unless one aliases
// the other (exec/PlanVerifier.h checks it).
//
// Steps. A step is one op's kernel (later: one fused kernel) on one
// micro-batch: its inputs and outputs are buffer indices, its attributes the
// op's with shapes made local (ir/LocalAttrs.h) and the micro-batch's own
// changes (a message's tag, dropout's rows of the whole batch, the 1/m seed
// of backward). An output a step `accumulate`s gets the result added to what
// its buffer holds (micro-batches after the first of a value summed over them).
// Communication steps (ir::isCommunication, but shard_slice which is local)
// run on the communication stream; each records an event, and a later step
// that reads its outputs, or writes bytes it reads or writes, waits for it
// first; what no step waits for is waited for at the end of the step.
// Peers and groups are rules, the same for every rank of the class: a
// collective's group is the ranks that differ from this one only along its
// `axis` attribute, in coordinate order (MeshLayout::groups); a send goes to,
// and a recv takes from, the rank at coordinate (c + peer_offset) mod n of
// that axis; messages between two ranks match by tag, in order.
//
// The batch. Each data input of the step (tokens, targets) is one buffer per
// micro-batch slot. Step `s` of training reads the rows of the whole global
// batch [m * b * dp, ...] (b the micro-batch rows of one dp rank): dp rank d
// holds rows [d * m * b, (d + 1) * m * b), and its micro-batch j the j-th
// block of b of those, as `batchRowsOf` says.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_EXEC_EXECUTIONPLAN_H
#define PLANC_EXEC_EXECUTIONPLAN_H

#include "analysis/MemoryPlan.h"
#include "ir/IR.h"
#include "ir/Mesh.h"
#include "ir/Placement.h"
#include "ir/TrainingKinds.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace planc::exec {

/// What a buffer is to the run around the step.
enum class BufferRole {
  Param,    // a parameter or optimizer state: initialised (or loaded) once, kept between steps
  Input,    // fed before each step: a micro-batch's rows of the batch, or a scalar (the step count)
  Internal, // made and read within the step
};
const char *spelling(BufferRole r);

enum class Stream { Compute, Communication };
const char *spelling(Stream s);

constexpr int64_t kBeforeSteps = -1;     // Buffer::firstStep of what is there when the step starts
constexpr int64_t kAfterSteps = INT64_MAX; // Buffer::lastStep of what is kept after it

/// What the buffers of one value in every micro-batch slot hold alike. A
/// large plan has hundreds of thousands of buffers of a few thousand values;
/// they share one of these.
struct BufferValue {
  std::string name;    // the value of the placed step
  ir::TensorType type; // its global type with its sharding (where the block sits)
  Shape local;         // the rank's block (ir/LocalBlocks.h localShape)
  bool operator==(const BufferValue &o) const { return name == o.name && type == o.type && local == o.local; }
};

/// How a run that loads no checkpoint fills a Param buffer: facts of the
/// parameter it holds, recorded by exec/BuildPlan.h so that no backend reads
/// the module. Not in the text form (exec/PlanPrinter.h) nor compared by
/// Buffer::operator==: a parsed plan's parameters have these defaults.
struct ParamInit {
  ir::InitKind kind = ir::InitKind::Normal;
  double stddev = 0.02;   // of Normal and ScaledNormal (the effective one)
  bool modelParam = true; // a parameter of the model, frozen or not; false: an optimizer state
};

struct Buffer {
  std::string name;        // unique in its program: the value's name, ".mb<j>" for slot j
  int slot = -1;           // micro-batch; -1: one buffer for the whole step
  uint64_t offset = 0;     // in the arena, bytes, a multiple of ExecutionPlan::alignment
  uint64_t size = 0;       // bytes it takes: the block's bytes padded to the alignment
  memory::Category category = memory::Category::Temporaries;
  BufferRole role = BufferRole::Internal;
  std::string path;        // Param: the parameter's path (its checkpoint name); Input: the input's name
  int64_t aliasOf = -1;    // the buffer whose bytes it reuses in place, or -1
  int64_t firstStep = kBeforeSteps, lastStep = kAfterSteps;
  ParamInit init;          // Param: how it starts

  const std::string &value() const { return held().name; }
  const ir::TensorType &type() const { return held().type; }
  const Shape &local() const { return held().local; }
  /// What it holds, as shared with the other buffers of its value (read
  /// only: editValue() changes it for this buffer alone).
  std::shared_ptr<const BufferValue> sharedValue() const { return value_; }
  /// Holds `v`, shared with the other buffers of its value.
  void setValue(std::shared_ptr<BufferValue> v) { value_ = std::move(v); }
  /// Holds what `other` holds, shared.
  void shareValueOf(const Buffer &other) { value_ = other.value_; }
  void setValue(BufferValue v) { value_ = std::make_shared<BufferValue>(std::move(v)); }
  /// The value this buffer holds, to change for it alone (a copy first
  /// where other buffers share it).
  BufferValue &editValue();
  bool operator==(const Buffer &o) const;

private:
  const BufferValue &held() const;
  std::shared_ptr<BufferValue> value_;
};

/// A step's attributes. The steps of one op in every micro-batch share one
/// map (a large plan has hundreds of thousands of steps of a few thousand
/// ops); a step that changes an attribute gets its own copy first.
class StepAttrs {
public:
  StepAttrs() = default;
  StepAttrs(ir::AttrMap attrs) : map_(std::make_shared<ir::AttrMap>(std::move(attrs))) {}

  const ir::AttrMap &map() const;
  operator const ir::AttrMap &() const { return map(); }
  ir::AttrMap::const_iterator find(const std::string &name) const { return map().find(name); }
  ir::AttrMap::const_iterator begin() const { return map().begin(); }
  ir::AttrMap::const_iterator end() const { return map().end(); }
  size_t count(const std::string &name) const { return map().count(name); }
  const ir::Attr &at(const std::string &name) const { return map().at(name); }
  bool empty() const { return map().empty(); }
  /// The attribute `name`, made if missing, in a map of this step's own.
  ir::Attr &operator[](const std::string &name);
  bool operator==(const StepAttrs &o) const { return map_ == o.map_ || map() == o.map(); }
  bool operator!=(const StepAttrs &o) const { return !(*this == o); }
  /// Whether another step shares this map (a printer may then reuse its text).
  bool isShared() const { return map_ && map_.use_count() > 1; }
  const void *identity() const { return map_.get(); }

private:
  std::shared_ptr<ir::AttrMap> map_;
};

struct Step {
  ir::OpKind kind = ir::OpKind::NumOps;
  StepAttrs attrs;              // local, with the micro-batch's changes
  int microBatch = -1;          // -1: once per step (the optimizer, values of parameters alone)
  ir::Work work = ir::Work::Forward;
  int chunk = 0;                // the model chunk (interleaved schedules), 0 otherwise
  Stream stream = Stream::Compute;
  std::vector<int64_t> inputs;  // buffer indices; -1: a stage_merge operand made on another stage
  std::vector<int64_t> outputs; // buffer indices (an update's are its parameter's and states')
  std::vector<bool> accumulate; // per output: += the result (empty: none accumulates)
  int64_t event = -1;           // communication steps: the event it records
  std::vector<int64_t> waits;   // events to complete before it starts
  ir::Location loc;             // the .plan place of the op
  std::string path;             // its layer path
  bool operator==(const Step &o) const;
  /// Whether output `k` accumulates.
  bool accumulates(size_t k) const { return k < accumulate.size() && accumulate[k]; }
};

/// An output of the training step (ir::Output) as this program holds it.
struct OutputBinding {
  std::string name;             // "loss", "grad.<path>", "new.<path>", ...
  ir::OutputRole role = ir::OutputRole::Other;
  std::string path, owner;      // as ir::Output's
  int64_t buffer = -1;
  bool operator==(const OutputBinding &o) const;
  bool isUpdate() const { return role == ir::OutputRole::ParamUpdate || role == ir::OutputRole::StateUpdate; }
};

/// The program of the ranks of one pipeline stage.
struct RankProgram {
  int stage = 0;                // pipeline rank (pp coordinate)
  std::vector<int64_t> ranks;   // every rank that runs it
  uint64_t arenaSize = 0;       // bytes
  std::vector<Buffer> buffers;
  std::vector<Step> steps;      // in issue order
  int64_t events = 0;           // events are 0 ..< events
  std::vector<OutputBinding> outputs;
  bool operator==(const RankProgram &o) const;
};

struct ExecutionPlan {
  std::string name;                                  // the module's
  std::array<int64_t, kNumMeshAxes> mesh{1, 1, 1, 1, 1};
  ScheduleOptions schedule;                          // style, stages, micro-batches, chunks
  uint64_t alignment = 64;                           // of every buffer's offset and size
  std::vector<RankProgram> programs;                 // by pipeline stage
  /// The plan's fusion policy lets a backend compute an elementwise step
  /// inside the next step's kernel (backend/c/ProgramKernels.h
  /// RenderOptions::foldProducers). Recorded by exec/BuildPlan.h; not in the
  /// text form nor compared by operator== (a parsed plan folds nothing).
  bool foldProducers = false;
  bool operator==(const ExecutionPlan &o) const;

  /// The program rank `rank` runs (its pp coordinate's).
  const RankProgram &programOf(int64_t rank) const;
};

/// The global rows dp rank `dpRank` feeds micro-batch `microBatch` of a data
/// input whose micro-batch block has `rows` rows on one rank: [first, first + rows).
inline int64_t batchRowsOf(int64_t dpRank, int microBatch, int microBatches, int64_t rows) {
  return (dpRank * microBatches + microBatch) * rows;
}

} // namespace planc::exec

#endif
