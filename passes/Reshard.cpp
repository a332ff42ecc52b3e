//===- passes/Reshard.cpp - the collectives that change a layout ----------===//

#include "passes/Reshard.h"

#include "ir/OpDef.h"
#include "ir/Placement.h"

#include "llvm/ADT/STLExtras.h"

using namespace planc;
using namespace planc::ir;

namespace {

bool isPrefix(const std::vector<MeshAxis> &a, const std::vector<MeshAxis> &b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

/// The dim of `target` where `axis` comes right after what `cur` already has.
std::optional<size_t> nextSlotFor(MeshAxis axis, const Sharding &cur, const Sharding &target) {
  for (size_t d = 0; d < target.dims.size(); ++d) {
    const auto &want = target.dims[d], &have = cur.dims[d];
    if (isPrefix(have, want) && want.size() > have.size() && want[have.size()] == axis) return d;
  }
  return std::nullopt;
}

bool splitsOver(const Sharding &s, MeshAxis axis) {
  for (const auto &axes : s.dims)
    if (llvm::is_contained(axes, axis)) return true;
  return false;
}

} // namespace

OpStamp OpStamp::of(const Op &op) {
  OpStamp s;
  s.loc = op.loc;
  s.path = op.path;
  copyPhase(op.attrs, s.attrs);
  copyMicroBatch(op.attrs, s.attrs);
  for (const char *name : {"stage", "chunk"})
    if (auto it = op.attrs.find(name); it != op.attrs.end()) s.attrs[name] = it->second;
  return s;
}

Sharding planc::normalized(Sharding s, size_t rank) {
  s.dims.resize(rank);
  return s;
}

Op *Resharder::emit(OpKind kind, std::vector<Value *> operands, AttrMap attrs, const OpStamp &stamp) {
  for (const auto &[k, v] : stamp.attrs) attrs.emplace(k, v);
  std::vector<TensorType> types;
  std::string e = inferResultTypes(kind, operands, attrs, types);
  if (!e.empty()) {
    error = std::string("internal error: cannot insert '") + spelling(kind) + "': " + e;
    return nullptr;
  }
  Op *op = m.append(kind, std::move(operands), std::move(types), std::move(attrs));
  op->loc = stamp.loc;
  op->path = stamp.path;
  return op;
}

Value *Resharder::to(Value *v, const Sharding &wanted, const OpStamp &stamp, bool allReduceFirst,
                     const std::string &key) {
  const Sharding target = normalized(wanted, v->type.rank());
  if (normalized(v->type.sharding, v->type.rank()) == target) return v;
  auto memoKey = std::make_tuple(static_cast<const Value *>(v), toString(target) + (allReduceFirst ? "/ar" : ""), key);
  if (auto it = memo.find(memoKey); it != memo.end()) return it->second;

  Value *x = v;
  // A reduction completes the producer's partial sums: it is the producer's
  // communication (Megatron's all-reduce after the row-parallel matmul), so
  // it carries the producer's location and layer path; moves and gathers
  // serve the consumer.
  OpStamp reduceStamp = stamp;
  if (v->def) {
    reduceStamp.loc = v->def->loc;
    reduceStamp.path = v->def->path;
  }
  auto step = [&](OpKind kind, AttrMap attrs) {
    const OpStamp &s = isReducingCollective(kind) ? reduceStamp : stamp;
    Op *op = emit(kind, {x}, std::move(attrs), s);
    if (op) x = op->results[0];
    return op != nullptr;
  };
  auto cur = [&] { return normalized(x->type.sharding, x->type.rank()); };

  for (MeshAxis a : cur().partial) {
    if (llvm::is_contained(target.partial, a)) continue;
    std::optional<size_t> d = nextSlotFor(a, cur(), target);
    bool ok = d && !allReduceFirst && !splitsOver(cur(), a)
                  ? step(OpKind::ReduceScatter, {{"axis", std::string(spelling(a))}, {"dim", int64_t(*d)}})
                  : step(OpKind::AllReduce, {{"axis", std::string(spelling(a))}});
    if (!ok) return nullptr;
  }
  if (x != v && cur().partial.empty() && !reduced.count(v)) reduced[v] = x;
  for (MeshAxis a : target.partial)
    if (!llvm::is_contained(cur().partial, a)) {
      error = "internal error: %" + v->name + " cannot become a partial sum over '" + spelling(a) + "'";
      return nullptr;
    }
  for (size_t d = 0; d < target.dims.size(); ++d) {
    while (!isPrefix(cur().dims[d], target.dims[d])) {
      MeshAxis a = cur().dims[d].back();
      Sharding without = cur();
      without.dims[d].pop_back();
      std::optional<size_t> to = nextSlotFor(a, without, target);
      bool ok = to && *to != d ? step(OpKind::AllToAll, {{"axis", std::string(spelling(a))},
                                                         {"split_dim", int64_t(*to)},
                                                         {"concat_dim", int64_t(d)}})
                               : step(OpKind::AllGather, {{"axis", std::string(spelling(a))}, {"dim", int64_t(d)}});
      if (!ok) return nullptr;
    }
  }
  for (size_t d = 0; d < target.dims.size(); ++d)
    while (cur().dims[d].size() < target.dims[d].size()) {
      MeshAxis a = target.dims[d][cur().dims[d].size()];
      if (!step(OpKind::ShardSlice, {{"axis", std::string(spelling(a))}, {"dim", int64_t(d)}})) return nullptr;
    }
  memo[memoKey] = x;
  return x;
}
