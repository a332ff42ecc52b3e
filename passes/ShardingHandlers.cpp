//===- passes/ShardingHandlers.cpp - SPMD expansions of single ops -------===//
//
// The ops sharding propagation cannot partition by their dim labels alone
// (passes/ShardingHandlers.h), each expanded into what every rank runs.
//
//===----------------------------------------------------------------------===//

#include "passes/ShardingHandlers.h"

#include "ir/OpDef.h"

#include "llvm/ADT/STLExtras.h"

#include <map>

using namespace planc;
using namespace planc::ir;
using namespace planc::spmd;

const Value *spmd::updateLayoutOperand(const Op &op) {
  std::vector<Value *> states = operandsWithRole(op, OperandRole::State);
  return states.empty() ? operandsWithRole(op, OperandRole::Parameter).front() : states.front();
}

std::optional<bool> Handlers::expand(Op &op) {
  if (isOptimizerUpdate(op.kind)) {
    update(op);
    return true;
  }
  // The ops of the table without dim labels whose expansion is here.
  switch (op.kind) {
  case OpKind::Reshape:
    reshape(op);
    return true;
  case OpKind::CrossEntropy:
    return crossEntropy(op);
  case OpKind::CrossEntropyGrad:
    return crossEntropyGrad(op);
  case OpKind::GlobalNorm:
    globalNorm(op);
    return false;
  default:
    return std::nullopt;
  }
}

void Handlers::reshape(Op &op) {
  const Shape &in = op.operands[0]->type.shape, &out = op.results[0]->type.shape;
  Sharding cur = normalized(op.operands[0]->type.sharding, in.size());
  Sharding need = Sharding::replicated(in.size()), res = Sharding::replicated(out.size());
  need.partial = res.partial = cur.partial; // reshape is linear
  // Groups of dims with equal products; a split of a group's major dim
  // (its first of size > 1) is a split of the other side's major dim.
  size_t i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    size_t gi = i, gj = j;
    int64_t pi = i < in.size() ? in[i++] : 1, pj = j < out.size() ? out[j++] : 1;
    while (pi != pj) {
      if (pi < pj && i < in.size()) pi *= in[i++];
      else if (pj < pi && j < out.size()) pj *= out[j++];
      else break;
    }
    if (pi != pj) { // shapes that do not regroup: gather everything
      need = Sharding::replicated(in.size());
      res = Sharding::replicated(out.size());
      need.partial = res.partial = cur.partial;
      break;
    }
    size_t mi = gi, mj = gj;
    while (mi + 1 < i && in[mi] == 1) ++mi;
    while (mj + 1 < j && out[mj] == 1) ++mj;
    if (mi < in.size() && mj < out.size() && !cur.dims[mi].empty() && out[mj] % devices(cur.dims[mi]) == 0 &&
        in[mi] % devices(cur.dims[mi]) == 0) {
      need.dims[mi] = cur.dims[mi];
      res.dims[mj] = cur.dims[mi];
    }
  }
  apply(op, Decision{{}, {need}, {res}});
}

bool Handlers::crossEntropy(Op &op) {
  Resharder &rs = resharder();
  std::optional<DimLabels> L = dimLabelsOf(op);
  if (!L) return replicate(op), true;
  int vocab = L->operands[0].back();
  const Sharding &logitsNow = op.operands[0]->type.sharding;
  bool split = !logitsNow.dims.empty() && !logitsNow.dims.back().empty();
  Decision dec = decide(op, *L, split ? vocab : -1);
  std::vector<MeshAxis> vocabAxes = dec.assign[size_t(vocab)];
  setDenominator(op, dec, *L);
  if (vocabAxes.empty()) {
    apply(op, dec);
    return true;
  }
  // Vocab-parallel: every rank holds V / n columns of each row.
  OpStamp stamp = OpStamp::of(op);
  Value *logits = move(op.operands[0], dec.operands[0], stamp);
  Value *targets = logits ? move(op.operands[1], dec.operands[1], stamp) : nullptr;
  if (!targets) return false;
  Sharding rows = normalized(dec.operands[1], targets->type.rank());
  int64_t last = int64_t(logits->type.rank()) - 1;
  Op *localMax = rs.emit(OpKind::ReduceMax, {logits}, {{"dims", std::vector<int64_t>{last}}, {"keepdim", false}}, stamp);
  if (!localMax) return false;
  localMax->results[0]->type.sharding = rows;
  localMax->results[0]->type.sharding.partial = vocabAxes;
  Value *rowMax = localMax->results[0];
  for (MeshAxis a : vocabAxes)
    if (Op *r = rs.emit(OpKind::AllReduce, {rowMax}, {{"axis", std::string(spelling(a))}, {"reduce", std::string("max")}}, stamp))
      rowMax = r->results[0];
  Op *stats = rs.emit(OpKind::VocabCeStats, {logits, targets, rowMax}, {}, stamp);
  if (!stats) return false;
  Value *sumExp = stats->results[0], *target = stats->results[1];
  for (Value *v : {sumExp, target}) {
    v->type.sharding = rows;
    v->type.sharding.partial = vocabAxes;
  }
  for (MeshAxis a : vocabAxes) {
    sumExp = rs.emit(OpKind::AllReduce, {sumExp}, {{"axis", std::string(spelling(a))}}, stamp)->results[0];
    target = rs.emit(OpKind::AllReduce, {target}, {{"axis", std::string(spelling(a))}}, stamp)->results[0];
  }
  Value *maxAcc = rowMax;
  if (maxAcc->type.dtype != sumExp->type.dtype) {
    maxAcc = rs.emit(OpKind::Cast, {rowMax}, {{"dtype", std::string(spelling(sumExp->type.dtype))}}, stamp)->results[0];
    maxAcc->type.sharding = rows;
  }
  vocabStats[op.operands[0]] = {rowMax, sumExp};
  Op *lg = rs.emit(OpKind::Log, {sumExp}, {}, stamp);
  Op *lse = rs.emit(OpKind::Add, {lg->results[0], maxAcc}, {}, stamp);
  Op *perRow = rs.emit(OpKind::Sub, {lse->results[0], target}, {}, stamp);
  for (Op *o : {lg, lse, perRow}) o->results[0]->type.sharding = rows;
  std::vector<int64_t> all;
  for (int64_t d = 0; d < int64_t(targets->type.rank()); ++d) all.push_back(d);
  Op *total = rs.emit(OpKind::ReduceSum, {perRow->results[0]}, {{"dims", all}, {"keepdim", false}}, stamp);
  total->results[0]->type.sharding = Sharding::replicated(0);
  for (const auto &axes : rows.dims)
    for (MeshAxis a : axes) total->results[0]->type.sharding.partial.push_back(a);
  Op *mean = rs.emit(OpKind::Scale, {total->results[0]}, {{"factor", 1.0 / double(targets->type.numel())}}, stamp);
  mean->results[0]->type.sharding = total->results[0]->type.sharding;
  replace(op.results[0], mean->results[0]);
  return false;
}

bool Handlers::crossEntropyGrad(Op &op) {
  Resharder &rs = resharder();
  std::optional<DimLabels> L = dimLabelsOf(op);
  if (!L) return replicate(op), true;
  int vocab = L->operands[0].back();
  auto stats = vocabStats.find(op.operands[0]);
  Decision dec = decide(op, *L, stats != vocabStats.end() ? vocab : -1);
  setDenominator(op, dec, *L);
  if (dec.assign[size_t(vocab)].empty() || stats == vocabStats.end()) {
    apply(op, dec);
    return true;
  }
  OpStamp stamp = OpStamp::of(op);
  Value *logits = move(op.operands[0], dec.operands[0], stamp);
  Value *targets = logits ? move(op.operands[1], dec.operands[1], stamp) : nullptr;
  Value *dloss = targets ? move(op.operands[2], dec.operands[2], stamp) : nullptr;
  if (!dloss) return false;
  AttrMap attrs{{"denominator", double(op.operands[1]->type.numel())}};
  Op *g = rs.emit(OpKind::VocabCeGrad, {logits, targets, stats->second.first, stats->second.second, dloss}, attrs, stamp);
  if (!g) return false;
  g->results[0]->type.sharding = dec.results[0];
  replace(op.results[0], g->results[0]);
  return false;
}

/// A loss over split rows divides by the global count.
void Handlers::setDenominator(Op &op, const Decision &dec, const DimLabels &L) {
  const auto &rows = L.operands[1];
  bool split = llvm::any_of(rows, [&](int label) { return label >= 0 && !dec.assign[size_t(label)].empty(); });
  if (split) op.attrs["denominator"] = double(op.operands[1]->type.numel());
}

void Handlers::globalNorm(Op &op) {
  Resharder &rs = resharder();
  OpStamp stamp = OpStamp::of(op);
  // Group the (reduced) gradients by the axes that split them; each group's
  // sum of squares is a partial sum over those axes.
  std::map<std::vector<MeshAxis>, std::vector<Value *>> groups;
  for (Value *g : op.operands) {
    Sharding target = wholeOf(g->type.sharding, g->type.rank());
    if (const Sharding *h = hintOf(g); h && zeroStageOf() >= 1) target = *h;
    Value *moved = move(g, target, stamp);
    if (!moved) return;
    std::vector<MeshAxis> axes;
    for (const auto &d : moved->type.sharding.dims) axes.insert(axes.end(), d.begin(), d.end());
    std::sort(axes.begin(), axes.end());
    groups[axes].push_back(moved);
  }
  DType dtype = op.results[0]->type.dtype;
  Value *total = nullptr;
  for (auto &[axes, values] : groups) {
    Op *sq = rs.emit(OpKind::GlobalNorm, values, {{"squared", true}}, stamp);
    if (!sq) return;
    Value *s = sq->results[0];
    s->type.sharding.partial = axes;
    for (MeshAxis a : axes) s = rs.emit(OpKind::AllReduce, {s}, {{"axis", std::string(spelling(a))}}, stamp)->results[0];
    if (s->type.dtype != dtype)
      s = rs.emit(OpKind::Cast, {s}, {{"dtype", std::string(spelling(dtype))}}, stamp)->results[0];
    total = total ? rs.emit(OpKind::Add, {total, s}, {}, stamp)->results[0] : s;
  }
  Op *root = rs.emit(OpKind::Sqrt, {total}, {}, stamp);
  if (root) replace(op.results[0], root->results[0]);
}

/// The update runs in its states' layout (ZeRO shards of them).
void Handlers::update(Op &op) {
  const OpDef &def = opDef(op.kind);
  const Value *layoutOf = updateLayoutOperand(op);
  Sharding layout = wholeOf(layoutOf->type.sharding, layoutOf->type.rank());
  if (!operandsWithRole(op, OperandRole::BlockState).empty()) {
    // Block-quantised states keep the parameter's layout less any ZeRO-3
    // split: the update runs on the whole parameter (gathered over dp).
    layout = withoutAxis(layout, MeshAxis::DP);
    auto followsParam = [&](size_t i) {
      OperandRole role = def.roleOf(i);
      return role == OperandRole::Parameter || role == OperandRole::Gradient;
    };
    Decision dec;
    for (size_t i = 0; i < op.operands.size(); ++i)
      dec.operands.push_back(followsParam(i) ? layout
                                             : wholeOf(op.operands[i]->type.sharding, op.operands[i]->type.rank()));
    // Each result is the next value of an operand: laid out as that one.
    for (size_t r = 0; r < op.results.size(); ++r) {
      const Value *was = op.operands[size_t(def.inPlaceOf[r])];
      dec.results.push_back(followsParam(size_t(def.inPlaceOf[r])) ? layout
                                                                  : wholeOf(was->type.sharding, op.results[r]->type.rank()));
    }
    return apply(op, dec);
  }
  Decision dec;
  for (Value *v : op.operands)
    dec.operands.push_back(v->type.rank() == layout.dims.size() && v->type.rank() > 0 ? layout
                                                                                     : Sharding::replicated(v->type.rank()));
  if (layout.dims.empty())
    for (auto &s : dec.operands) s = Sharding::replicated(0);
  for (Value *v : op.results) dec.results.push_back(normalized(layout, v->type.rank()));
  apply(op, dec);
}
