//===- ir/RankProgram.cpp - one rank's program of a partitioned module ----===//

#include "ir/RankProgram.h"
#include "ir/LocalAttrs.h"
#include "ir/LocalBlocks.h"
#include "ir/Parser.h"
#include "ir/Placement.h"
#include "ir/Printer.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <cassert>

using namespace planc;
using namespace planc::ir;

namespace {

} // namespace

std::unique_ptr<Module> ir::rankProgram(const Module &partitioned, const MeshLayout &mesh, int64_t rank) {
  assert(rank >= 0 && rank < mesh.numRanks() && "rank out of range");
  std::unique_ptr<Module> m = partitioned.clone();
  MeshCoords coords = mesh.coordinates(rank);

  // Attributes first: localAttrs reads the global result types.
  for (auto &op : m->ops) {
    AttrMap attrs = localAttrs(*op, mesh);
    if (isCommunication(op->kind)) {
      if (std::optional<MeshAxis> axis = parseMeshAxis(op->getString("axis"))) {
        for (const auto &g : mesh.groups(*axis)) {
          if (std::find(g.begin(), g.end(), rank) == g.end()) continue;
          attrs["group"] = g;
          if (op->kind == OpKind::Send || op->kind == OpKind::Recv) {
            int64_t n = int64_t(g.size()), c = coords[unsigned(*axis)];
            int64_t to = ((c + op->getInt("peer_offset")) % n + n) % n;
            attrs["peer"] = g[size_t(to)];
          }
        }
      }
    }
    op->attrs = std::move(attrs);
  }
  for (auto &v : m->allValues()) {
    Shape local = localShape(v->type, mesh);
    v->type = TensorType(std::move(local), v->type.dtype);
  }
  // Ops of other pipeline stages are not this rank's (as ir/MultiRank.h runs
  // them); nor are the outputs they make.
  int64_t stage = coords[unsigned(MeshAxis::PP)];
  auto elsewhere = [&](const Op &op) { return hasPipelineStage(op) && pipelineStageOf(op) != stage; };
  for (auto &op : m->ops)
    if (elsewhere(*op))
      for (Value *v : op->results) v->def = nullptr;
  m->outputs.erase(std::remove_if(m->outputs.begin(), m->outputs.end(),
                                  [&](const Output &out) { return out.value->kind == Value::Kind::Result && !out.value->def; }),
                   m->outputs.end());
  m->ops.erase(std::remove_if(m->ops.begin(), m->ops.end(), [&](const auto &op) { return elsewhere(*op); }),
               m->ops.end());
  m->name = m->name + ".rank" + std::to_string(rank);
  m->mesh = {1, 1, 1, 1, 1};
  return m;
}
