//===- ir/Interpreter.h - the reference interpreter -------------*- C++ -*-===//
//
// Runs any module on the CPU, op by op through each OpDef's reference kernel,
// deterministically: the oracle every pass and backend is checked against.
// Values are computed in f64 and rounded to their dtype after each op.
// Partitioned modules run with a CollectiveSimulator that executes all ranks'
// collectives in one process.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_INTERPRETER_H
#define PLANC_IR_INTERPRETER_H

#include "ir/IR.h"
#include "ir/Tensor.h"

#include "llvm/Support/Error.h"

#include <array>
#include <map>
#include <string>
#include <vector>

namespace planc {
class MeshLayout;
}

namespace planc::ir {

class CollectiveSimulator;

/// What a kernel may ask of the run it is part of.
class EvalContext {
public:
  /// Philox4x32-10 of (key, counter): a uniform double in [0, 1). Dropout keys
  /// it by (seed, stream) and counts by element index, so every rank and every
  /// recomputation draws the same mask.
  static double philoxUniform(uint64_t key, uint64_t counter);
  /// The generator itself: the four output words of Philox4x32-10 for a
  /// 128-bit counter and the key (low word first), as Random123's.
  static std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, uint64_t key);
  /// The run's draw seed, mixed into dropout keys: a trainer passes one per
  /// step, so masks change between steps but not within one.
  uint64_t seed = 0;
  /// Performs the collective ops when the programs of all ranks run in one
  /// process; null for a module run alone, where a collective is an error.
  CollectiveSimulator *collectives = nullptr;
  /// The mesh and this rank when a rank's block of a partitioned value is
  /// computed (backend/interp/PlanInterpreter.h); null for a module run alone. Kernels of ops whose
  /// meaning depends on where a block sits in the global value (a gather
  /// from a vocab-split table, dropout's mask, shard_slice) ask for offsets.
  const MeshLayout *mesh = nullptr;
  int64_t rank = 0;
  /// Where this rank's block of a value of type `t` starts along `dim`: 0 when
  /// run alone or when the dim is not split.
  int64_t blockOffset(const TensorType &t, size_t dim) const;
  /// The global row-major index of every element of this rank's block of `t`
  /// (the identity when run alone).
  std::vector<int64_t> globalIndices(const TensorType &t) const;
  /// A kernel's run-time error (an index out of range, a collective with no
  /// simulator): the interpreter stops after the op and returns the first one.
  void fail(std::string message) {
    if (error.empty()) error = std::move(message);
  }
  std::string error;
};

/// The hook the collective ops' kernels call: an implementation holds every
/// rank's values and exchanges them as the op says.
class CollectiveSimulator {
public:
  virtual ~CollectiveSimulator() = default;
  virtual void perform(EvalContext &ctx, const Op &op, llvm::ArrayRef<const Tensor *> in,
                       llvm::MutableArrayRef<Tensor> out) = 0;
};

using TensorMap = std::map<std::string, Tensor>;

/// Runs `m` with the given parameters and inputs (by value name). Returns the
/// module's outputs by output name, or an error naming a missing feed or a
/// shape that does not match.
llvm::Expected<TensorMap> interpret(const Module &m, const TensorMap &feeds, uint64_t seed = 0);

/// `'matmul' defining %y at file:3:7`: how run-time errors name an op.
std::string describeOp(const Op &op);

/// Initial values of every parameter as its init says (normal, scaled normal,
/// zeros, ones), from `seed`: deterministic and independent of parameter order
/// (each parameter's stream is keyed by a hash of its path).
TensorMap initialParams(const Module &m, uint64_t seed);

} // namespace planc::ir

#endif
