//===- exec/Groups.h - the ranks a communication step talks to --*- C++ -*-===//
//
// The one place of the rules exec/ExecutionPlan.h states: a collective's
// group is the ranks that differ from this one only along the step's `axis`
// attribute, in coordinate order (MeshLayout::groups); a send goes to, and a
// recv takes from, the rank at coordinate (c + peer_offset) mod n of that
// axis. The rank form of the printer, its parser, the verifier and the
// backends all ask these functions, so they cannot disagree.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_EXEC_GROUPS_H
#define PLANC_EXEC_GROUPS_H

#include "exec/ExecutionPlan.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace planc::exec {

/// The ops that exchange data with other ranks: ir::isCommunication but
/// shard_slice, which keeps the rank's own block. They run on the
/// communication stream and record an event.
bool isCommunicationStep(ir::OpKind kind);

/// The axis the step's `axis` attribute names, if it names one.
std::optional<MeshAxis> axisOf(const Step &step);

/// Whether every axis of the plan's mesh has at least one rank and there are
/// at most 2^22 ranks (what the functions below need).
bool hasValidMesh(const ExecutionPlan &plan);

/// (c + offset) mod n, in [0, n).
int64_t wrapCoordinate(int64_t c, int64_t offset, int64_t n);

/// The ranks of the step's group holding `rank`, in member order; empty when
/// the step names no axis, or the mesh or rank is not valid.
std::vector<int64_t> groupOf(const ExecutionPlan &plan, const Step &step, int64_t rank);

/// The rank a send of `rank` goes to, or a recv takes from; -1 for other
/// steps, or where the step names no axis or the rank is not in the mesh.
int64_t peerOf(const ExecutionPlan &plan, const Step &step, int64_t rank);

/// The index in plan.programs of the program `rank` runs (the one whose
/// stage is the rank's pp coordinate), or -1 where there is none.
int64_t programIndexOf(const ExecutionPlan &plan, int64_t rank);

} // namespace planc::exec

#endif
