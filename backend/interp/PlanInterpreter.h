//===- backend/interp/PlanInterpreter.h - every rank of an execution plan in one process -*- C++ -*-===//
//
// Runs an execution plan (exec/ExecutionPlan.h) the way a backend will: every
// rank of the mesh has its own arena (runtime/Arena.h, poisoned with 0xFF, so
// a read of bytes nothing wrote is NaN) of its program's arenaSize, and every
// buffer is at its planned offset in it, holding the value's elements in its
// dtype (runtime/ElementBits.h). A planning bug (two live buffers sharing
// bytes, a read before the write) therefore shows up as wrong numbers.
//
// A compute step decodes its input buffers to f64 tensors, runs the op's
// reference kernel (ir/OpDef.h) with the step's local attributes, rounds the
// results to their dtypes and writes them into the output buffers (adding to
// what they hold where the step accumulates). A communication step starts its
// collective or message on the rank's communicator of an in-process world
// (runtime/InProcessCommunicator.h), the interface the MPI and NCCL runtimes
// implement, with the group or peer the plan's rules give (exec/Groups.h) and
// records its event; a step that waits for an event tests the request, and
// while it is not complete the rank yields to the next one. The ranks take
// turns on one thread, round-robin; when none can go on the run fails naming
// what every rank waits for. At the end of the step every event is waited
// for.
//
// Between steps, the parameters and states live in their buffers; an update
// that is not in place (plain SGD's `new.<path>` in a buffer of its own) is
// copied into its parameter's buffer after the step, so the next step reads
// it.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_BACKEND_INTERP_PLANINTERPRETER_H
#define PLANC_BACKEND_INTERP_PLANINTERPRETER_H

#include "exec/ExecutionPlan.h"
#include "ir/Interpreter.h"
#include "ir/LocalBlocks.h"
#include "ir/Tensor.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace planc::interp {

class PlanInterpreter {
public:
  /// `plan` must outlive the interpreter.
  explicit PlanInterpreter(const exec::ExecutionPlan &plan);
  ~PlanInterpreter();

  /// Writes every rank's parameters and optimizer state (Param buffers) from
  /// `feeds[rank]`, by value name: the rank's local block, rounded to the
  /// buffer's dtype. Errors name a missing value or a block of the wrong shape.
  llvm::Error loadParams(const ir::RankTensorMaps &feeds);
  /// Writes every rank's step inputs (Input buffers) from `feeds[rank]`, by
  /// value name: for a data input (rank > 0) the rank's rows of every
  /// micro-batch, [m * b, ...] (micro-batch j's are rows [j * b, (j + 1) * b)
  /// and go to its slot-j buffer); a scalar input as is.
  llvm::Error loadInputs(const ir::RankTensorMaps &feeds);
  /// Runs one training step on every rank; `seed` is the step's draw seed
  /// (EvalContext::seed: dropout masks). Errors: a kernel's (naming the
  /// step, its op and rank), a communicator's, a deadlock (naming what each
  /// rank waits for).
  llvm::Error runStep(uint64_t seed);
  /// Per rank, the step's outputs by name (each the rank's local block). An
  /// output made on one pipeline stage is reported on every rank as the rank
  /// of that stage at the same other coordinates holds it, as the lock-step
  /// does. Errors name an output no program binds.
  llvm::Expected<ir::RankTensorMaps> outputs() const;
  /// The current value of a Param buffer on `rank`, by value name.
  llvm::Expected<ir::Tensor> param(int64_t rank, const std::string &value) const;

  struct State;

private:
  std::unique_ptr<State> state;
};

} // namespace planc::interp

#endif
