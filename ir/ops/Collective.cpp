//===- ir/ops/Collective.cpp - communication between ranks ----------------===//
//
// The collectives of partitioned modules, over one mesh axis {axis: string}.
// Types keep the global shape; what a collective changes is the sharding:
//   all_reduce:     partial(axis) -> complete
//   reduce_scatter {dim}: partial(axis) -> shard(dim, axis)
//   all_gather {dim}:     shard(dim, axis) -> complete along dim
//   all_to_all {split_dim, concat_dim}: shard(concat_dim, axis) -> shard(split_dim, axis)
//   broadcast {root}: unchanged; send {peer_offset, tag} has no result;
//   recv {peer_offset, tag, shape, dtype} makes its value from its attributes.
//   shard_slice {dim}: complete -> shard(dim, axis), each rank keeping its
//     block; it moves no data between ranks, so its kernel runs locally.
//   all_reduce {reduce = "max"} takes the maximum instead of the sum (the
//     operand is then typed partial over the axis: values still to combine).
// The shape rules do not insist that the operand is sharded as the op
// expects: which shardings are legal is the verifier's and the partitioner's
// business. The kernels hand the op to the EvalContext's CollectiveSimulator,
// which runs all ranks' programs in one process (the unit tests' lock-step
// exchange, tests/unit/CollectiveExchange.h, says what each op does to the
// ranks' blocks; execution plans run collectives through the runtime's
// communicator instead); a module run alone has none,
// and a collective there is a run-time error. The cost model times them from
// bytes, so their FLOP count is 0.
//
//===----------------------------------------------------------------------===//

#include "ir/ops/OpSupport.h"
#include "ir/MeshLayout.h"

#include <algorithm>

using namespace planc;
using namespace planc::ir;

namespace {

/// The `axis` attribute; "" or the error.
std::string axisAttr(AttrReader &at, MeshAxis &axis) {
  std::string name = at.getString("axis");
  if (!at.ok()) return at.error;
  std::optional<MeshAxis> a = parseMeshAxis(name);
  if (!a) return "attribute 'axis' names no mesh axis: '" + name + "'";
  axis = *a;
  return "";
}

void eraseAxis(std::vector<MeshAxis> &axes, MeshAxis axis) {
  axes.erase(std::remove(axes.begin(), axes.end(), axis), axes.end());
}

/// The operand's type, its sharding sized to its rank.
TensorType resultLike(const TensorType &t) {
  TensorType r(t.shape, t.dtype);
  r.sharding = t.sharding;
  r.sharding.dims.resize(t.rank());
  return r;
}

/// What every collective checks first: its operand count and its mesh axis.
std::string checkCollective(llvm::ArrayRef<TensorType> ops, size_t arity, AttrReader &at, MeshAxis &axis) {
  if (auto e = checkArity(ops, arity); !e.empty()) return e;
  return axisAttr(at, axis);
}

std::string inferAllReduce(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  AttrReader at(attrs);
  MeshAxis axis;
  if (auto e = checkCollective(ops, 1, at, axis); !e.empty()) return e;
  TensorType r = resultLike(ops[0]);
  eraseAxis(r.sharding.partial, axis);
  res = {r};
  return "";
}

std::string inferReduceScatter(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  AttrReader at(attrs);
  MeshAxis axis;
  if (auto e = checkCollective(ops, 1, at, axis); !e.empty()) return e;
  std::optional<int64_t> dim = normalizeDim(at.getInt("dim"), ops[0].rank());
  if (!at.ok()) return at.error;
  if (!dim) return "dim is out of range for " + toString(ops[0]);
  TensorType r = resultLike(ops[0]);
  eraseAxis(r.sharding.partial, axis);
  r.sharding.dims[*dim].push_back(axis);
  res = {r};
  return "";
}

std::string inferAllGather(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  AttrReader at(attrs);
  MeshAxis axis;
  if (auto e = checkCollective(ops, 1, at, axis); !e.empty()) return e;
  std::optional<int64_t> dim = normalizeDim(at.getInt("dim"), ops[0].rank());
  if (!at.ok()) return at.error;
  if (!dim) return "dim is out of range for " + toString(ops[0]);
  TensorType r = resultLike(ops[0]);
  eraseAxis(r.sharding.dims[*dim], axis);
  res = {r};
  return "";
}

std::string inferAllToAll(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  AttrReader at(attrs);
  MeshAxis axis;
  if (auto e = checkCollective(ops, 1, at, axis); !e.empty()) return e;
  std::optional<int64_t> split = normalizeDim(at.getInt("split_dim"), ops[0].rank());
  std::optional<int64_t> concat = normalizeDim(at.getInt("concat_dim"), ops[0].rank());
  if (!at.ok()) return at.error;
  if (!split || !concat) return "split_dim or concat_dim is out of range for " + toString(ops[0]);
  TensorType r = resultLike(ops[0]);
  eraseAxis(r.sharding.dims[*concat], axis);
  r.sharding.dims[*split].push_back(axis);
  res = {r};
  return "";
}

std::string inferShardSlice(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  AttrReader at(attrs);
  MeshAxis axis;
  if (auto e = checkCollective(ops, 1, at, axis); !e.empty()) return e;
  std::optional<int64_t> dim = normalizeDim(at.getInt("dim"), ops[0].rank());
  if (!at.ok()) return at.error;
  if (!dim) return "dim is out of range for " + toString(ops[0]);
  TensorType r = resultLike(ops[0]);
  for (const auto &axes : r.sharding.dims)
    if (std::find(axes.begin(), axes.end(), axis) != axes.end())
      return std::string("the operand is already split over '") + spelling(axis) + "'";
  r.sharding.dims[*dim].push_back(axis);
  res = {r};
  return "";
}

void evalShardSlice(EvalContext &ctx, const Op &op, llvm::ArrayRef<const Tensor *> in,
                    llvm::MutableArrayRef<Tensor> out) {
  // The operand's block on this rank is the result's block widened along
  // `dim`; keep the part at the result's offset within it.
  const TensorType &from = op.operands[0]->type, &to = op.results[0]->type;
  int64_t dim = normalizeDim(op.getInt("dim"), from.rank()).value_or(0);
  int64_t start = ctx.blockOffset(to, size_t(dim)) - ctx.blockOffset(from, size_t(dim));
  const Tensor &x = *in[0];
  Tensor &y = out[0];
  int64_t outer = product(x.shape, 0, size_t(dim)), inner = product(x.shape, size_t(dim) + 1);
  int64_t xn = x.shape[size_t(dim)], yn = y.shape[size_t(dim)];
  if (start < 0) return ctx.fail("shard_slice: the block lies outside the operand's");
  // Rows past the operand's end are the padding of an uneven split: 0.
  int64_t rows = std::clamp<int64_t>(xn - start, 0, yn);
  std::fill(y.data.begin(), y.data.end(), 0.0);
  for (int64_t o = 0; o < outer; ++o)
    std::copy_n(x.data.begin() + (o * xn + start) * inner, rows * inner, y.data.begin() + o * yn * inner);
}

// stage_merge(v_0, ..., v_{p-1}): v_i exists only on pipeline stage i's
// ranks; every rank takes its own stage's operand. The pipeline pass types
// the result partial over pp, so an all_reduce over pp sums the stages'
// values (the squared gradient norms of each stage's parameters).
std::string inferStageMerge(llvm::ArrayRef<TensorType> ops, const AttrMap &, std::vector<TensorType> &res) {
  if (ops.empty()) return "expects at least one operand";
  for (size_t i = 1; i < ops.size(); ++i)
    if (ops[i].shape != ops[0].shape || ops[i].dtype != ops[0].dtype)
      return "operand " + std::to_string(i) + " " + toString(ops[i]) + " differs from operand 0 " + toString(ops[0]);
  res = {resultLike(ops[0])};
  return "";
}

void evalStageMerge(EvalContext &ctx, const Op &, llvm::ArrayRef<const Tensor *> in,
                    llvm::MutableArrayRef<Tensor> out) {
  size_t stage = ctx.mesh ? size_t(ctx.mesh->coordinates(ctx.rank)[unsigned(MeshAxis::PP)]) : 0;
  if (stage >= in.size() || !in[stage]) return ctx.fail("stage_merge has no operand for pipeline stage " + std::to_string(stage));
  out[0] = *in[stage];
}

std::string inferBroadcast(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  AttrReader at(attrs);
  MeshAxis axis;
  if (auto e = checkCollective(ops, 1, at, axis); !e.empty()) return e;
  at.getInt("root");
  if (!at.ok()) return at.error;
  res = {resultLike(ops[0])};
  return "";
}

std::string inferSend(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  AttrReader at(attrs);
  MeshAxis axis;
  if (auto e = checkCollective(ops, 1, at, axis); !e.empty()) return e;
  at.getInt("peer_offset");
  at.getInt("tag");
  if (!at.ok()) return at.error;
  res.clear();
  return "";
}

std::string inferRecv(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  AttrReader at(attrs);
  MeshAxis axis;
  if (auto e = checkCollective(ops, 0, at, axis); !e.empty()) return e;
  at.getInt("peer_offset");
  at.getInt("tag");
  Shape shape = at.getInts("shape");
  DType dtype = at.getDType("dtype");
  if (!at.ok()) return at.error;
  res = {TensorType(shape, dtype)};
  return "";
}

/// The hook: the simulator performs the op, or the run stops here.
void evalCollective(EvalContext &ctx, const Op &op, llvm::ArrayRef<const Tensor *> in,
                    llvm::MutableArrayRef<Tensor> out) {
  if (ctx.collectives) {
    ctx.collectives->perform(ctx, op, in, out);
    return;
  }
  ctx.fail(std::string("collective '") + spelling(op.kind) +
           "' outside a simulator: a partitioned module runs with all its ranks");
}


// Bytes each rank sends among n ranks for a message of S bytes, by the ring
// algorithms (NCCL's): an all-reduce is a reduce-scatter then an all-gather.
double ringOf(int64_t n) { return double(n - 1) / double(n); }
double wireAllReduce(int64_t n, double S) { return 2 * ringOf(n) * S; }
double wireRing(int64_t n, double S) { return ringOf(n) * S; }
double wireWhole(int64_t, double S) { return S; }

} // namespace

void ir::registerCollectiveOps(OpDef *t) {
  define(t, OpKind::AllReduce, inferAllReduce, evalCollective, nullptr, noFlops);
  define(t, OpKind::ReduceScatter, inferReduceScatter, evalCollective, nullptr, noFlops);
  define(t, OpKind::AllGather, inferAllGather, evalCollective, nullptr, noFlops);
  define(t, OpKind::AllToAll, inferAllToAll, evalCollective, nullptr, noFlops);
  define(t, OpKind::Send, inferSend, evalCollective, nullptr, noFlops);
  define(t, OpKind::Recv, inferRecv, evalCollective, nullptr, noFlops);
  define(t, OpKind::Broadcast, inferBroadcast, evalCollective, nullptr, noFlops);
  define(t, OpKind::ShardSlice, inferShardSlice, evalShardSlice, nullptr, noFlops);
  define(t, OpKind::StageMerge, inferStageMerge, evalStageMerge, nullptr, noFlops);
  const uint32_t exchange = kSideEffect | kCollective, message = kSideEffect | kPointToPoint;
  for (OpKind k : {OpKind::AllReduce, OpKind::ReduceScatter, OpKind::AllGather, OpKind::AllToAll, OpKind::Broadcast})
    declare(t, k, exchange, nullptr);
  entry(t, OpKind::AllReduce).traits |= kReduces;
  entry(t, OpKind::ReduceScatter).traits |= kReduces;
  declare(t, OpKind::Send, message, nullptr);
  declare(t, OpKind::Recv, message, nullptr);
  declare(t, OpKind::ShardSlice, kRankBlock, nullptr);
  declare(t, OpKind::StageMerge, kStageChoice, nullptr);
  entry(t, OpKind::Recv).shapeAttr = "shape";
  entry(t, OpKind::AllReduce).wireBytes = wireAllReduce;
  for (OpKind k : {OpKind::ReduceScatter, OpKind::AllGather, OpKind::AllToAll}) entry(t, k).wireBytes = wireRing;
  // Recv sends nothing: its bytes are counted at its sender.
  for (OpKind k : {OpKind::Broadcast, OpKind::Send}) entry(t, k).wireBytes = wireWhole;
  for (OpKind k : {OpKind::AllReduce, OpKind::ReduceScatter, OpKind::AllGather, OpKind::AllToAll, OpKind::Send,
                   OpKind::Recv, OpKind::Broadcast})
    kernel(t, k, KernelClass::Communication);
  // Nothing moves between ranks: a gather of the rank's block, of its stage's operand.
  kernel(t, OpKind::ShardSlice, KernelClass::Layout);
  kernel(t, OpKind::StageMerge, KernelClass::Layout);
}
