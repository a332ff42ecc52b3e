//===- runtime/ModelTables.h - a rank class as constant tables ----*- C++ -*-===//
//
// How the generated program describes its rank classes: a table row per
// Param, input and output buffer and one flat array of the integers of
// their shapes, all constant data. A model of thousands of parameters costs
// its compiler nothing but the bytes of the tables, where one statement per
// parameter (a push_back of strings and vectors) cost seconds at -O3 and
// tens of seconds with the sanitizers. readProgramTables() turns the tables
// into the ExecProgram runExecutable() runs.
//
// Every row is a plain aggregate: the generated tables are initialised at
// compile time, before any code of the executable runs.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_MODELTABLES_H
#define PLANC_RUNTIME_MODELTABLES_H

#include "runtime/ExecutableModel.h"

#include <cstddef>
#include <cstdint>

namespace planc::runtime {

/// A Param buffer (ExecParam). `dims` indexes the program's integers: the
/// block's shape (`rank` of them), the global shape (`rank`), then for each
/// rank of the program, in ProgramTables::ranks' order, its block's offset in
/// the global tensor (`rank` each). The name keys the initial values too.
struct ParamRow {
  const char *name;
  uint64_t offset;
  ElementType type;
  uint32_t rank;
  uint32_t dims;
  const char *sharding;
  ParamInit init;
  double stddev;
  bool modelParam;
};

/// An input buffer (ExecInput); `dims` indexes its shape (`rank` integers).
struct InputRow {
  ExecInput::Kind kind;
  int slot;
  uint64_t offset;
  ElementType type;
  uint32_t rank;
  uint32_t dims;
};

/// An output buffer (ExecOutput).
struct OutputRow {
  const char *name;
  uint64_t offset;
  ElementType type;
  uint64_t bytes;
  int64_t copyToParam;
};

/// A rank class: its ranks, arena, buffers and step. A table with no rows is
/// a null pointer and a count of 0.
struct ProgramTables {
  int stage;
  const char *rankClass;
  const int64_t *ranks;
  size_t numRanks;
  uint64_t arenaBytes;
  uint64_t ledgerBytes;
  const ParamRow *params;
  size_t numParams;
  const InputRow *inputs;
  size_t numInputs;
  const OutputRow *outputs;
  size_t numOutputs;
  const int64_t *ints;
  size_t numInts;
  StepFunction step;
};

/// A parameter the inference step reads (ExecInference::Param).
struct InferenceParamRow {
  const char *name;
  uint64_t offset;
  ElementType type;
  int64_t elements;
};

/// The program `tables` describe. A row whose dims reach past the integers
/// is a fault of the generator: it stops the program with a message.
ExecProgram readProgramTables(const ProgramTables &tables);

/// The inference step's parameters from their rows.
std::vector<ExecInference::Param> readInferenceParams(const InferenceParamRow *rows, size_t count);

} // namespace planc::runtime

#endif
