//===- analysis/CostModel.h - how long a training step takes -------*- C++ -*-===//
//
// The time of one training step, predicted from the placed step (the module
// the memory planner and the execution plan read) and the machine:
//
//  - an op's time on one rank is the roofline's: its FLOPs (the op table's
//    count, ir/OpDef.h, times the rank's share of the work) at the peak of
//    its dtype times an efficiency, or its bytes (every operand's and
//    result's local block) at the memory bandwidth times an efficiency,
//    whichever is longer, plus a kernel's launch. GEMMs (matmul, flash
//    attention) reach an efficiency that grows with their size, read from
//    the calibration's curve; other kernels compute at the f32 rate times
//    the calibration's elementwise efficiency. Views
//    cost nothing.
//  - a collective's time is the α-β model over the link its group crosses:
//    a group whose ranks lie in one node (the rank layout puts tp fastest,
//    then cp, ep, pp, dp) uses the intra-node link, any other the inter-node
//    one; the bytes are the ring's (analysis/CommSummary.h: 2(n-1)/n S for an
//    all-reduce, nccl-tests' bus bandwidth), at the link's bandwidth times
//    the calibration's bus efficiency, plus one latency per ring step.
//  - overlap follows what the execution plan runs on the communication
//    stream: bucketed gradient reductions overlap the backward of their
//    stage (those that run once per step only the last micro-batch's), and
//    ZeRO-3's prefetched parameter gathers the compute of their pass; any
//    other collective (tensor and sequence parallel, the loss's) blocks.
//  - the pipeline is the real schedule (analysis/PipelineSchedule.h)
//    replayed with these durations, a message arriving its send's time after
//    it is issued; then each rank's exposed gradient reduction, the
//    optimizer and the once-per-step values (parameters' copies).
//
// Model FLOPs are the op table's counts of forward and backward (not the
// optimizer, not recomputed ops) over the global batch; hardware FLOPs add
// the recomputed ops (Korthikanti et al. 2022: MFU and HFU).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_ANALYSIS_COSTMODEL_H
#define PLANC_ANALYSIS_COSTMODEL_H

#include "analysis/PipelineSchedule.h"
#include "ir/IR.h"

#include "llvm/Support/Error.h"

#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace planc::cost {

struct Link {
  double bandwidth = 0; // bytes/s per device and direction
  double latency = 0;   // seconds per ring step
};

/// What a device reaches of its datasheet: measured (`planc calibrate`) or
/// the defaults of its kind (docs/cost.md says where each comes from).
struct Calibration {
  std::string source;  // "defaults for GPUs", a file's name, ...
  /// GEMM efficiency (a fraction of the dtype's peak) by the FLOPs of one
  /// GEMM call, FLOPs increasing; interpolated in log FLOPs, clamped at the ends.
  std::vector<std::pair<double, double>> gemm;
  double memoryEfficiency = 0.8; // of the memory bandwidth, for kernels that stream
  double busEfficiency = 0.8;    // a collective's bus bandwidth over the link's
  double kernelLaunch = 4e-6;    // seconds a kernel costs however small
  /// Other kernels' FLOPs (elementwise, norms, softmax) run at this fraction
  /// of the f32 peak: on GPUs the f32 peak is the CUDA cores' own (1); on
  /// CPUs it is the GEMMs' FMA peak, which transcendental-heavy scalar code
  /// is far from.
  double elementwiseEfficiency = 1.0;
  /// Measured on the machine (`planc calibrate`): they replace the device's
  /// datasheet figures (peak FLOP/s by dtype, memory bandwidth) and the
  /// intra-node link; empty or 0: the device's.
  std::map<std::string, double> peakFlops;
  double memoryBandwidth = 0;
  std::optional<Link> intraNode;

  double gemmEfficiency(double flops) const;
};

/// The machine, as the cost model needs it.
struct Hardware {
  std::string device;
  std::map<std::string, double> peakFlops; // by dtype spelling ("bf16"): dense FLOP/s
  double memoryBandwidth = 0;              // bytes/s
  int64_t nodes = 1, devicesPerNode = 1;
  Link intraNode, interNode;
  Calibration calibration;

  /// The peak for `dtype`, else f32's (a dtype the device has no units for
  /// runs on its f32 units), else the largest it has.
  double peakFor(const std::string &dtype) const;
};

/// Where the time of one rank's step goes, in seconds.
struct Breakdown {
  double gemm = 0;          // matmuls and attention, recompute included
  double other = 0;         // elementwise, norms, softmax, losses, copies
  double recompute = 0;     // of the two above, what recompute repeats
  double commBlocking = 0;  // collectives the compute waits for (tp, sp, the loss's)
  double commExposed = 0;   // overlapped collectives (dp gradients, ZeRO gathers) not hidden
  double commHidden = 0;    // ... and their hidden part
  double optimizer = 0;     // the update and its collectives, the parameters' copies
  double pipelineWait = 0;  // idle in the pipeline schedule (bubble, waits for messages)
};

/// One pipeline rank's part.
struct StageCost {
  int stage = 0;
  /// Per micro-batch, per model chunk: a chunk's forward, backward and
  /// (zero-bubble) weight-gradient instruction, as the replay charges them.
  std::vector<double> forward, backward, weightGrad;
  double busy = 0;   // the schedule's compute on this rank
  double finish = 0; // when its last backward ends
  double tail = 0;   // after it: exposed gradient reduction, optimizer, copies
  double total = 0;  // finish + tail
  Breakdown breakdown;
};

struct StepCost {
  double stepTime = 0;       // seconds
  double modelFlops = 0;     // per step, the whole mesh
  double hardwareFlops = 0;  // model FLOPs plus recompute
  double tokens = 0;         // per step
  int64_t devices = 1;
  double peakFlops = 0;      // one device's, for the compute dtype
  std::vector<StageCost> stages;
  int busiest = 0;           // index into stages: the rank that sets the step time
  double bubbleFraction = 0; // idle / (ranks x step) in the replay, of the whole step
  double tokensPerSecond() const { return stepTime > 0 ? tokens / stepTime : 0; }
  double mfu() const { return stepTime > 0 && peakFlops > 0 ? modelFlops / (stepTime * double(devices) * peakFlops) : 0; }
  double hfu() const {
    return stepTime > 0 && peakFlops > 0 ? hardwareFlops / (stepTime * double(devices) * peakFlops) : 0;
  }
  /// Achieved model (resp. hardware) FLOP/s per device.
  double modelFlopsPerDevice() const { return stepTime > 0 ? modelFlops / (stepTime * double(devices)) : 0; }
  double hardwareFlopsPerDevice() const {
    return stepTime > 0 ? hardwareFlops / (stepTime * double(devices)) : 0;
  }
};

struct CostInputs {
  const ir::Module *placed = nullptr;                 // the placed step (one micro-batch)
  const pipeline::PipelineSchedule *schedule = nullptr; // the one it is placed for
  Hardware hardware;
  std::string computeDType = "f32"; // for MFU: the plan's compute precision
  double tokensPerStep = 0;
};

/// The predicted step. Errors only for a schedule that deadlocks.
llvm::Expected<StepCost> estimateStep(const CostInputs &in);

/// The share of an op's work one rank does: its first result's local block
/// over the whole (a partial sum is a full-size block of 1/n of the work).
double rankShare(const ir::Op &op, const std::array<int64_t, kNumMeshAxes> &mesh);

/// The time of one collective of `messageBytes` (S, as CommSummary measures
/// it) of `kind` over `n` ranks `stride` apart in the rank layout.
double collectiveSeconds(ir::OpKind kind, int64_t n, int64_t stride, uint64_t messageBytes, const Hardware &hw);

} // namespace planc::cost

#endif
