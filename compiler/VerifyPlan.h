//===- compiler/VerifyPlan.h - `planc verify`: partitioned == one device -*- C++ -*-===//
//
// The proof that a plan's parallelization computes the same training step as
// one device: the step is built once (autodiff, optimizer), run whole on the
// reference interpreter, then partitioned as the plan says (recompute, ZeRO
// layouts, sharding propagation and collectives), built into its execution
// plan (exec/BuildPlan.h: every rank's steps and buffers; the plan's
// verifier, exec/PlanVerifier.h, runs on it and a violation fails verify)
// and that plan run by the interpreter backend, every rank of the mesh in
// one process and each buffer at its planned offset (backend/interp/
// PlanInterpreter.h), on the same seeded parameters and batch: the whole
// global batch, every micro-batch, as an executable runs it. Every output (the loss, each gradient, each updated parameter and
// optimizer state) is compared rank by rank: a rank's block of the
// partitioned value against the same block of the reference (a gradient
// that is still a partial sum is compared after adding the ranks' addends).
// The structure is checked as well as the numbers: with pp > 1, every step
// of the execution plan on the stage that owns its layer and exactly the
// messages the schedule implies (analysis/PipelineStructure.h on
// exec/PlanStructure.h's view); the plan's text form parses back to the
// same plan; on every plan, each stage's model
// states against ZeRO's formula (compiler/ModelStatesCheck.h). A violation
// fails verify.
//
// A difference is relative to the scale of the quantity it perturbs, not to
// its own tensor (a tensor that is 0 in exact arithmetic, such as a separate
// attention key bias's gradient, is all rounding noise, and noise against
// itself is O(1)):
//   grad.<p>          the step's largest gradient element (of any parameter)
//   new.<p>           the larger of the updated parameter's largest magnitude
//                     and the step's largest update |new - old| of any
//                     parameter
//   new.<p>.<state>   the larger of its own largest magnitude and the largest
//                     change of that state (adam_m, adam_v, ...) of any
//                     parameter
//   anything else     its own largest magnitude (the loss, lr, grad_norm)
// An error in one tensor that is small against those would move the step
// less than the tolerance does; any real error (a missing collective, a
// wrong shard) is many orders above it.
//
// One exception: Adam's first step moves an element by lr * g / (|g| + eps),
// so where the reference gradient is within the gradient's measured largest
// difference d of 0, or close enough that d could move the step by more
// than the tolerance (|g| < d - eps + sqrt(d * eps / tolerance)), the
// updated parameter differs by up to a whole step whatever the scale. Those
// elements of new.<p> are counted and left out; grad.<p> itself is compared
// as above, and a gradient that fails it has its update compared whole.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_VERIFYPLAN_H
#define PLANC_COMPILER_VERIFYPLAN_H

#include "frontend/Frontend.h"
#include "ir/MeshLayout.h"
#include "ir/Type.h"
#include "passes/PassManager.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace planc {

struct PlanVerifyOptions {
  ir::DType floatType = ir::DType::F64; // every float of the model
  uint64_t seed = 1234;                 // parameters, batch and dropout masks
  double tolerance = 0;                 // relative; 0: 1e-9 for f64, 1e-5 otherwise
  /// Testing only: removes the Nth (from 0) sum all-reduce the partitioner
  /// inserted, to show that a missing collective is caught.
  int dropCollective = -1;
  /// Testing only: swaps the tags of the first two sends of one rank to the
  /// same peer in the execution plan, to see the wrong order caught by the
  /// plan's deadlock check and the wrong data by the comparison.
  bool swapSends = false;
  /// Testing only: moves one buffer of the execution plan onto the bytes of
  /// another that is live at the same time, to see the plan's verifier name
  /// the overlap and (with skipPlanCheck) the numbers go wrong.
  bool overlapBuffers = false;
  /// Testing only: runs the plan without its verifier's verdict (the
  /// problems are not reported), to show what a planning bug does to the
  /// numbers.
  bool skipPlanCheck = false;
  /// Testing only: moves one forward op of the first pipeline stage's last
  /// layer to the next stage (values still flow: its operands are sent),
  /// to see the structural check catch work on the wrong stage.
  bool misplaceOp = false;
  /// Only the structural checks: the step is partitioned and its execution
  /// plan built and checked (its verifier, its text form, the pipeline's
  /// structure), not run (plans too large for the interpreter).
  bool structureOnly = false;
  PassManagerOptions passes;            // --time-passes, --print-after-all for the partitioning
};

/// The largest differences of one rank's outputs from the reference, by kind.
struct RankDifference {
  int64_t rank = 0;
  MeshCoords coords{};
  struct Worst {
    double abs = 0, rel = 0;
    std::string output; // where the largest relative difference is
  } loss, grads, params;
};

struct PlanVerifyReport {
  std::array<int64_t, kNumMeshAxes> mesh{1, 1, 1, 1, 1};
  std::vector<RankDifference> ranks;
  double tolerance = 0;
  double worstRel = 0;
  std::string worstOutput;
  size_t collectives = 0; // inserted by the partitioner
  /// Elements of Adam-updated parameters left out because the reference
  /// gradient there is too close to 0 for its difference to decide the step
  /// (counted on rank 0's blocks).
  size_t noiseElements = 0;
  /// The execution plan's verifier's findings (exec/PlanVerifier.h: overlap,
  /// order, events, the deadlock replay); empty when the plan is sound.
  std::vector<std::string> plan;
  std::string corruption; // what --testing-overlap-buffers moved
  /// Work on the wrong pipeline stage, messages the schedule does not imply
  /// (analysis/PipelineStructure.h); empty when the structure is right.
  std::vector<std::string> structure;
  bool structureOnly = false; // no numbers were compared
  std::string modelStatesSkipped; // why the model states were not compared with the formula
  bool passed() const {
    return (structureOnly || worstRel <= tolerance) && plan.empty() && structure.empty();
  }
};

/// Builds, partitions, runs and compares the training step of the checked
/// plan in `c`. Errors are for plans that cannot be verified (no IR, a
/// partitioning or run-time failure), not for differences.
llvm::Expected<PlanVerifyReport> verifyPlan(Compilation &c, const PlanVerifyOptions &options);

/// The report as a table: one line per rank with its mesh coordinates and
/// the largest absolute and relative differences of loss, gradients and
/// parameters, then the verdict.
void printPlanVerifyReport(const PlanVerifyReport &r, llvm::raw_ostream &os);

} // namespace planc

#endif
