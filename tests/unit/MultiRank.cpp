//===- tests/unit/MultiRank.cpp - every rank of a partitioned module at once ---===//
//
// The single-device interpreter's loop, widened to one live map per rank:
// each op first has its shape rule rerun on local shapes (so a kernel never
// sees attributes meant for global shapes), then runs rank by rank, and a
// collective is completed across the ranks before its results are kept.
//
//===----------------------------------------------------------------------===//

#include "MultiRank.h"
#include "CollectiveExchange.h"
#include "ir/LocalAttrs.h"
#include "ir/OpDef.h"
#include "ir/Placement.h"
#include "support/Error.h"

#include <unordered_map>

using namespace planc;
using namespace planc::ir;

namespace {


/// "" when the op computes the right local blocks from local operands with
/// its local attributes (ir/LocalAttrs.h), else why not. Collectives are
/// checked by the exchange itself.
std::string checkRunsLocally(const Op &op, const AttrMap &local, const MeshLayout &mesh) {
  std::vector<TensorType> global;
  for (const Value *v : op.operands) global.push_back(v->type);
  std::vector<TensorType> inferred;
  if (std::string e = opDef(op.kind).infer(global, op.attrs, inferred); !e.empty()) return e;
  // A collective's exchange, and shard_slice's kernel, change local shapes.
  if (isCommunication(op.kind)) return "";

  std::vector<TensorType> localTypes;
  for (const Value *v : op.operands) localTypes.emplace_back(localShape(v->type, mesh), v->type.dtype);
  inferred.clear();
  if (std::string e = opDef(op.kind).infer(localTypes, local, inferred); !e.empty())
    return "its attributes do not fit the local shapes: " + e;
  for (size_t r = 0; r < op.results.size() && r < inferred.size(); ++r) {
    Shape want = localShape(op.results[r]->type, mesh);
    if (inferred[r].shape != want)
      return "its attributes do not fit the local shapes: on local operands it computes " +
             toString(inferred[r].shape) + ", but the result " + toString(op.results[r]->type) +
             " has local shape " + toString(want);
  }
  return "";
}

} // namespace

llvm::Expected<RankTensorMaps> ir::interpretRanks(const Module &m, const MeshLayout &mesh,
                                                  const RankTensorMaps &feeds, uint64_t seed) {
  for (unsigned a = 0; a < kNumMeshAxes; ++a)
    if (mesh.size(MeshAxis(a)) != m.mesh[a])
      return makeError(std::string("the mesh has ") + spelling(MeshAxis(a)) + " = " +
                  std::to_string(mesh.size(MeshAxis(a))) + ", but the module's has " + std::to_string(m.mesh[a]));
  const int64_t ranks = mesh.numRanks();
  if (int64_t(feeds.size()) != ranks)
    return makeError("feeds for " + std::to_string(feeds.size()) + " ranks, but the mesh has " + std::to_string(ranks));

  std::vector<std::unordered_map<const Value *, Tensor>> live(ranks);
  auto feed = [&](int64_t r, const Value *v, const char *what) -> llvm::Error {
    auto it = feeds[r].find(v->name);
    if (it == feeds[r].end())
      return makeError("no value fed for " + std::string(what) + " '%" + v->name + "' on rank " + std::to_string(r));
    Shape want = localShape(v->type, mesh);
    if (it->second.shape != want)
      return makeError(std::string(what) + " '%" + v->name + "' is " + toString(v->type) + ", local shape " +
                  toString(want) + ", but rank " + std::to_string(r) + " is fed shape " +
                  toString(it->second.shape));
    Tensor t = it->second;
    t.dtype = v->type.dtype;
    roundToDType(t);
    live[r][v] = std::move(t);
    return llvm::Error::success();
  };
  for (int64_t r = 0; r < ranks; ++r) {
    for (const Value *p : m.params)
      if (llvm::Error e = feed(r, p, "parameter")) return e;
    for (const Value *i : m.inputs)
      if (llvm::Error e = feed(r, i, "input")) return e;
  }

  std::unordered_map<const Value *, size_t> lastUse;
  for (size_t i = 0; i < m.ops.size(); ++i)
    for (const Value *v : m.ops[i]->operands) lastUse[v] = i;
  for (const Output &out : m.outputs) lastUse[out.value] = m.ops.size();

  CollectiveExchange exchange(mesh);
  for (size_t i = 0; i < m.ops.size(); ++i) {
    const Op &globalOp = *m.ops[i];
    const OpDef &def = opDef(globalOp.kind);
    if (!def.eval) return makeError("op " + describeOp(globalOp) + " has no reference kernel");
    // The kernels see the op with its local attributes (same operands and
    // results, whose global types give the blocks' offsets).
    Op op = globalOp;
    op.attrs = localAttrs(globalOp, mesh);
    if (std::string e = checkRunsLocally(globalOp, op.attrs, mesh); !e.empty())
      return makeError("op " + describeOp(op) + ": " + e);

    // Every rank's results stay here until a collective has filled them all.
    // An op of a pipeline stage runs on that stage's ranks only.
    std::vector<std::vector<Tensor>> outs(ranks);
    const int64_t stage = pipelineStageOf(op);
    for (int64_t r = 0; r < ranks; ++r) {
      const int64_t myStage = mesh.coordinates(r)[unsigned(MeshAxis::PP)];
      if (stage >= 0 && stage != myStage) continue;
      std::vector<const Tensor *> in;
      for (size_t k = 0; k < op.operands.size(); ++k) {
        const Value *v = op.operands[k];
        if (op.kind == OpKind::StageMerge && int64_t(k) != myStage) {
          in.push_back(nullptr); // another stage's operand
          continue;
        }
        auto it = live[r].find(v);
        if (it == live[r].end())
          return makeError("op " + describeOp(op) + " reads %" + (v ? v->name : "<null>") + " on rank " + std::to_string(r) +
                      ", where it is not defined (made on another pipeline stage, or later)");
        in.push_back(&it->second);
      }
      for (const Value *res : op.results) outs[r].emplace_back(localShape(res->type, mesh), res->type.dtype);
      EvalContext ctx;
      ctx.seed = seed;
      ctx.collectives = &exchange;
      ctx.mesh = &mesh;
      ctx.rank = r;
      exchange.setRank(r);
      def.eval(ctx, op, in, outs[r]);
      if (!ctx.error.empty())
        return makeError("op " + describeOp(op) + " on rank " + std::to_string(r) + ": " + ctx.error);
    }
    if (exchangesData(op.kind))
      if (std::string e = exchange.complete(op); !e.empty()) return makeError("op " + describeOp(op) + ": " + e);

    // The padding of an uneven split (ir/LocalBlocks.h) must stay 0: an op
    // that writes into it would make what the padding holds matter.
    std::vector<bool> padded;
    for (const Value *res : op.results) padded.push_back(isPadded(res->type, mesh));
    for (int64_t r = 0; r < ranks; ++r) {
      for (size_t k = 0; k < outs[r].size(); ++k) {
        if (!lastUse.count(op.results[k])) continue;
        roundToDType(outs[r][k]);
        if (padded[k])
          if (std::string e = checkPaddingIsZero(outs[r][k], op.results[k]->type, mesh, r); !e.empty())
            return makeError("op " + describeOp(op) + " leaves a value in the padding: " + e);
        live[r][op.results[k]] = std::move(outs[r][k]);
      }
      for (const Value *v : op.operands)
        if (lastUse[v] == i) live[r].erase(v);
    }
  }
  if (std::string e = exchange.checkAllReceived(); !e.empty()) return makeError(e);

  // An output made on one pipeline stage is reported on every rank as the
  // rank of that stage at the same other coordinates holds it.
  RankTensorMaps outputs(ranks);
  for (int64_t r = 0; r < ranks; ++r)
    for (const Output &out : m.outputs) {
      const std::string &name = out.name;
      const Value *v = out.value;
      int64_t holder = r;
      if (v->def && hasPipelineStage(*v->def)) {
        MeshCoords c = mesh.coordinates(r);
        c[unsigned(MeshAxis::PP)] = pipelineStageOf(*v->def);
        holder = mesh.rankOf(c);
      }
      auto it = live[holder].find(v);
      if (it == live[holder].end()) return makeError("output '" + name + "' (%" + v->name + ") is never computed");
      outputs[r][name] = it->second;
    }
  return outputs;
}

llvm::Expected<RankTensorMaps> ir::splitFeeds(const Module &m, const MeshLayout &mesh, const TensorMap &global) {
  RankTensorMaps feeds(mesh.numRanks());
  auto split = [&](const Value *v) -> llvm::Error {
    auto it = global.find(v->name);
    if (it == global.end()) return makeError("no value fed for '%" + v->name + "'");
    if (it->second.shape != v->type.shape)
      return makeError("'%" + v->name + "' is " + toString(v->type) + ", but the value fed has shape " +
                  toString(it->second.shape));
    std::vector<Tensor> blocks = splitToRanks(it->second, v->type, mesh);
    for (int64_t r = 0; r < mesh.numRanks(); ++r) feeds[r][v->name] = std::move(blocks[r]);
    return llvm::Error::success();
  };
  for (const Value *p : m.params)
    if (llvm::Error e = split(p)) return e;
  for (const Value *i : m.inputs)
    if (llvm::Error e = split(i)) return e;
  return feeds;
}

llvm::Expected<TensorMap> ir::assembleOutputs(const Module &m, const MeshLayout &mesh, const RankTensorMaps &local) {
  TensorMap result;
  for (const Output &out : m.outputs) {
    const std::string &name = out.name;
    std::vector<Tensor> blocks;
    for (const TensorMap &rank : local) {
      auto it = rank.find(name);
      if (it == rank.end()) return makeError("a rank has no output '" + name + "'");
      blocks.push_back(it->second);
    }
    llvm::Expected<Tensor> t = assembleFromRanks(blocks, out.value->type, mesh);
    if (!t) return llvm::joinErrors(makeError("output '" + name + "'"), t.takeError());
    result[name] = std::move(*t);
  }
  return result;
}
