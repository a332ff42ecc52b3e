//===- runtime/ExecutableModel.h - what a compiled plan describes -*- C++ -*-===//
//
// The description of a compiled plan that runExecutable() runs
// (runtime/Executable.h): its rank classes' arenas, the Param, input and
// output buffers in them, their steps, the batch, the data, checkpoints and
// the inference step. The generated program writes it as constant tables
// (runtime/ModelTables.h) that makeModel() reads into these structs.
//
// Everything the description holds is plain data; strings are the plan's
// names, escaped by the emitter.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_EXECUTABLEMODEL_H
#define PLANC_RUNTIME_EXECUTABLEMODEL_H

#include "runtime/Data.h"
#include "runtime/ElementType.h"
#include "runtime/StepProfile.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace planc::runtime {

enum class ParamInit { Zeros, Ones, Normal };

/// A Param buffer: a parameter or an optimizer state, kept between steps.
struct ExecParam {
  std::string name;            // its checkpoint name (the parameter's path, "<path>.adam_m", ...)
  std::string initKey;         // the string its initial values are keyed by
  uint64_t offset = 0;         // in the arena
  ElementType type = ElementType::F32;
  std::vector<int64_t> shape;  // this rank's block
  std::vector<int64_t> globalShape;
  std::string sharding;        // as the plan prints it ("" when whole)
  ParamInit init = ParamInit::Zeros;
  double stddev = 0;
  bool modelParam = true;      // a parameter of the model, frozen or not (false: optimizer state)
  /// Where each rank of the program holds its block in the global tensor
  /// (per dim, the first global index), in the order of ExecProgram::ranks;
  /// a block may reach past the global shape (the zero padding of an uneven
  /// split).
  std::vector<std::vector<int64_t>> blockOffsets;
  /// This process's entry of blockOffsets (selectProgram sets it).
  std::vector<int64_t> blockOffset;
};

/// An input buffer the loop writes before each step.
struct ExecInput {
  enum class Kind { Tokens, Targets, Step };
  Kind kind = Kind::Tokens;
  int slot = 0;                // micro-batch (its rows of the batch)
  uint64_t offset = 0;
  ElementType type = ElementType::I32;
  std::vector<int64_t> shape;  // [rows, seq] of one micro-batch; [] for the step
};

/// An output the loop reads after the step (the loss, lr, gradient norm) or
/// copies into a parameter (an update that is not in place).
struct ExecOutput {
  std::string name;            // "loss", "lr", "grad_norm", "new.<path>", ...
  uint64_t offset = 0;
  ElementType type = ElementType::F32;
  uint64_t bytes = 0;
  int64_t copyToParam = -1;    // index into params: copied there after the step
};

/// The inference step (--sample): the forward program up to the logits, in
/// an arena of its own, fed the trained parameters by name.
struct ExecInference {
  uint64_t arenaBytes = 0;
  struct Param {
    std::string name;          // the training step's checkpoint name
    uint64_t offset = 0;       // in the inference arena
    ElementType type = ElementType::F32;
    int64_t elements = 0;
  };
  std::vector<Param> params;
  uint64_t tokensOffset = 0;   // [rows, seq] tokens
  ElementType tokensType = ElementType::I32;
  int64_t rows = 1, seq = 1;
  uint64_t logitsOffset = 0;   // [rows, seq, vocab] logits
  ElementType logitsType = ElementType::F32;
  int64_t vocab = 1;
  void (*run)(uint8_t *arena) = nullptr; // null: no inference step
};

/// The program of one rank class: the ranks of one pipeline stage run it,
/// each on its own blocks.
struct ExecProgram {
  int stage = 0;               // the pp coordinate of its ranks
  std::string rankClass;       // "pipeline stage 0 (ranks 0, 1)"
  std::vector<int64_t> ranks;
  uint64_t arenaBytes = 0;     // its arena
  uint64_t ledgerBytes = 0;    // what `planc check` reports for the stage (the same figure)
  std::vector<ExecParam> params;
  std::vector<ExecInput> inputs;
  std::vector<ExecOutput> outputs;
  StepFunction step = nullptr;
};

struct ExecutableModel {
  std::string plan;            // the model's name
  std::string source;          // the .plan file it was built from
  std::string buildId;         // a hash of the generated source: checkpoints name it
  int64_t ranks = 1;           // of the mesh
  std::array<int64_t, 5> mesh{1, 1, 1, 1, 1}; // axis sizes, runtime/MeshRanks.h's order (dp, pp, tp, cp, ep)
  std::vector<ExecProgram> programs; // one per pipeline stage
  /// Sets the rank's mesh coordinates for the kernels that depend on them
  /// (runtime/MeshRanks.h's order); null: none do.
  void (*setCoordinates)(const int64_t *coordinates) = nullptr;

  // The program this process runs (selectProgram copies it here).
  std::string rankClass;       // "pipeline stage 0 (rank 0)"
  int64_t rank = 0;            // this process's rank
  uint64_t arenaBytes = 0;
  uint64_t ledgerBytes = 0;
  std::vector<ExecParam> params;
  std::vector<ExecInput> inputs;
  std::vector<ExecOutput> outputs;
  BatchShape batch;            // the whole global batch of a step
  int microBatches = 1;
  int64_t steps = 1;           // the plan's train.steps
  uint64_t seed = 0;           // the plan's train.seed
  DataSpec data;               // the plan's data
  int64_t checkpointEvery = 0; // 0: none
  std::string checkpointDir = "ckpt";
  int64_t checkpointKeep = 0;  // 0: all
  /// The name map the plan follows (runtime/NameMap.h) as JSON; "" when it
  /// follows none. --init-from reads files of its names, checkpoints record it.
  std::string nameMap;
  double flopsPerStep = 0;     // the model's FLOPs of one step (forward, backward, update)
  double peakFlops = 0;        // the device's, for MFU; 0: not known
  /// The cost model's step at build time (docs/cost.md) and what it assumed
  /// ("defaults for CPUs"); 0: none (a plan for another device). A run far
  /// slower says so and why (SlowStep.h).
  double predictedStepSeconds = 0;
  std::string predictionBasis;
  /// Runs the training step on the arena; `drawSeed` keys dropout's masks.
  StepFunction step = nullptr;
  /// Sets the threads of the kernels (OpenMP, BLAS); null: not settable.
  void (*setThreads)(int threads) = nullptr;
  ExecInference inference;
};

} // namespace planc::runtime

#endif
