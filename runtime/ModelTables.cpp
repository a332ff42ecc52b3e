//===- runtime/ModelTables.cpp - a rank class as constant tables ----------===//

#include "runtime/ModelTables.h"

#include <cstdio>
#include <cstdlib>

using namespace planc::runtime;

namespace {

/// `count` integers from index `first` of the program's integers. Past the
/// end is a fault of the generator, not of the user's input: it stops the
/// program rather than read memory that is not the table's.
std::vector<int64_t> intsAt(const ProgramTables &t, size_t first, size_t count, const char *what) {
  if (first > t.numInts || count > t.numInts - first) {
    std::fprintf(stderr,
                 "internal error: the tables of %s give %s %zu integers from index %zu of %zu; rebuild it with "
                 "planc build\n",
                 t.rankClass, what, count, first, t.numInts);
    std::exit(70);
  }
  return std::vector<int64_t>(t.ints + first, t.ints + first + count);
}

} // namespace

ExecProgram planc::runtime::readProgramTables(const ProgramTables &t) {
  ExecProgram p;
  p.stage = t.stage;
  p.rankClass = t.rankClass;
  p.ranks.assign(t.ranks, t.ranks + t.numRanks);
  p.arenaBytes = t.arenaBytes;
  p.ledgerBytes = t.ledgerBytes;
  p.params.reserve(t.numParams);
  for (size_t i = 0; i < t.numParams; ++i) {
    const ParamRow &r = t.params[i];
    ExecParam e;
    e.name = r.name;
    e.initKey = r.name;
    e.offset = r.offset;
    e.type = r.type;
    e.shape = intsAt(t, r.dims, r.rank, r.name);
    e.globalShape = intsAt(t, size_t(r.dims) + r.rank, r.rank, r.name);
    for (size_t k = 0; k < t.numRanks; ++k)
      e.blockOffsets.push_back(intsAt(t, size_t(r.dims) + (2 + k) * r.rank, r.rank, r.name));
    e.sharding = r.sharding;
    e.init = r.init;
    e.stddev = r.stddev;
    e.modelParam = r.modelParam;
    p.params.push_back(std::move(e));
  }
  for (size_t i = 0; i < t.numInputs; ++i) {
    const InputRow &r = t.inputs[i];
    p.inputs.push_back({r.kind, r.slot, r.offset, r.type, intsAt(t, r.dims, r.rank, "an input")});
  }
  for (size_t i = 0; i < t.numOutputs; ++i) {
    const OutputRow &r = t.outputs[i];
    p.outputs.push_back({r.name, r.offset, r.type, r.bytes, r.copyToParam});
  }
  p.step = t.step;
  return p;
}

std::vector<ExecInference::Param> planc::runtime::readInferenceParams(const InferenceParamRow *rows, size_t count) {
  std::vector<ExecInference::Param> params;
  params.reserve(count);
  for (size_t i = 0; i < count; ++i) params.push_back({rows[i].name, rows[i].offset, rows[i].type, rows[i].elements});
  return params;
}
