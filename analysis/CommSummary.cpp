//===- analysis/CommSummary.cpp - the collectives of a step, per rank -------===//

#include "analysis/CommSummary.h"
#include "analysis/SavedActivations.h"

#include "ir/LocalBlocks.h"
#include "ir/OpDef.h"
#include "ir/Placement.h"
#include "support/Plural.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

using namespace planc;
using namespace planc::ir;


double planc::sentBytes(OpKind kind, int64_t n, uint64_t s) {
  auto wire = opDef(kind).wireBytes; // null: recv (counted at its sender), shard_slice (no communication)
  if (n <= 1 || !wire) return 0;
  return wire(n, double(s));
}

CommOp planc::commOpOf(const Op &op, const MeshLayout &mesh, int64_t rank) {
  (void)rank; // every rank of an SPMD program holds equal blocks; kept for programs that differ by rank
  CommOp c;
  c.kind = op.kind;
  c.op = &op;
  if (isReducingCollective(op.kind)) {
    std::string reduce = op.getString("reduce", "sum");
    if (reduce != "sum") c.reduce = reduce;
  }
  if (std::optional<MeshAxis> axis = parseMeshAxis(op.getString("axis"))) c.axis = *axis;
  c.groupSize = mesh.size(c.axis);
  c.phase = spelling(phaseOf(op));
  c.path = op.path;
  // The buffer S is measured on: the gathered output of an all_gather, the
  // received value of a recv, the operand otherwise. A gather's or
  // reduce-scatter's S is n of its shards: a padded ZeRO shard
  // (ir/LocalBlocks.h) sends its padding too, as a flat padded buffer does.
  const Value *v = op.kind == OpKind::AllGather || op.kind == OpKind::Recv ? op.results[0] : op.operands[0];
  c.block = localShape(v->type, mesh);
  if (op.kind == OpKind::AllGather || op.kind == OpKind::ReduceScatter) {
    const Value *shard = op.kind == OpKind::AllGather ? op.operands[0] : op.results[0];
    int64_t dim = op.getInt("dim", 0);
    if (dim < 0) dim += int64_t(c.block.size());
    if (dim >= 0 && size_t(dim) < c.block.size())
      c.block[size_t(dim)] = localShape(shard->type, mesh)[size_t(dim)] * c.groupSize;
  }
  c.dtype = v->type.dtype;
  uint64_t numel = 1;
  for (int64_t d : c.block) numel *= uint64_t(d);
  c.messageBytes = numel * byteSize(c.dtype);
  c.sentBytes = sentBytes(c.kind, c.groupSize, c.messageBytes);
  return c;
}

namespace {

/// An op of a pipeline stage (`pipeline_stage`, passes/PipelinePartition.cpp)
/// runs on that stage's ranks only; the others on every rank.
bool runsOn(const Op &op, int64_t stage) {
  return !hasPipelineStage(op) || pipelineStageOf(op) == stage;
}

} // namespace

namespace {

/// Every rank's list, `opsOf(stage, rank)` giving a stage's: every rank of a
/// pipeline stage runs the same list (commOpOf does not depend on the
/// rank's dp or tp coordinate), so the lists are made once per stage; the
/// ranks are then grouped in increasing order, each stage's list joining
/// the first equal list already made, as if every rank's list were compared
/// in turn.
template <typename OpsOf>
CommSummary summarize(const Module &m, const MeshLayout &mesh, OpsOf opsOf) {
  CommSummary s;
  s.module = m.name;
  s.mesh = m.mesh;
  const int64_t stages = std::max<int64_t>(mesh.size(MeshAxis::PP), 1);
  std::vector<size_t> listOfStage(size_t(stages), SIZE_MAX);
  for (int64_t r = 0; r < mesh.numRanks(); ++r) {
    int64_t stage = mesh.coordinates(r)[unsigned(MeshAxis::PP)];
    size_t &list = listOfStage[size_t(stage)];
    if (list == SIZE_MAX) {
      std::vector<CommOp> ops = opsOf(stage, r);
      auto same = std::find_if(s.lists.begin(), s.lists.end(), [&](const RankCommList &l) { return l.ops == ops; });
      if (same != s.lists.end()) {
        list = size_t(same - s.lists.begin());
      } else {
        list = s.lists.size();
        s.lists.push_back({{}, std::move(ops)});
      }
    }
    s.lists[list].ranks.push_back(r);
  }
  return s;
}

} // namespace

CommSummary planc::summarizeComm(const Module &m, const MeshLayout &mesh) {
  return summarize(m, mesh, [&](int64_t stage, int64_t rank) {
    std::vector<CommOp> ops;
    for (const auto &op : m.ops)
      if (isCommunication(op->kind) && runsOn(*op, stage)) ops.push_back(commOpOf(*op, mesh, rank));
    return ops;
  });
}

CommSummary planc::summarizeStepComm(const Module &m, const MeshLayout &mesh,
                                     const sequence::StageSequencer &sequencer) {
  const std::vector<std::vector<sequence::SequencedOp>> ranks = sequencer.sequenceAll();
  return summarize(m, mesh, [&](int64_t stage, int64_t rank) {
    std::vector<CommOp> ops;
    for (const sequence::SequencedOp &s : ranks.at(size_t(stage)))
      if (isCommunication(s.op->kind)) ops.push_back(commOpOf(*s.op, mesh, rank));
    return ops;
  });
}

std::string planc::formatRanks(const std::vector<int64_t> &ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

namespace {

std::string bytesText(double b) {
  if (b == std::floor(b) && b < 9e15) return std::to_string(uint64_t(b));
  return llvm::formatv("{0:f1}", b).str();
}

std::string opName(const CommOp &c) {
  std::string name = spelling(c.kind);
  if (!c.reduce.empty()) name += "(" + c.reduce + ")";
  return name;
}

/// The layer instance of a path: up to its first numeric component
/// (blocks.3.attention -> blocks.3), or the whole path.
std::string layerOf(llvm::StringRef path) {
  std::string layer = repeatedLayerOf(path);
  return layer.empty() ? path.str() : layer;
}

struct Total {
  size_t ops = 0;
  uint64_t message = 0;
  double sent = 0;
  void add(const CommOp &c) {
    ++ops;
    message += c.messageBytes;
    sent += c.sentBytes;
  }
};

void printTotals(llvm::raw_ostream &os, llvm::StringRef title, const std::vector<std::pair<std::string, Total>> &rows) {
  os << "  " << title << ":\n";
  for (const auto &[name, t] : rows)
    os << llvm::formatv("    {0,-28} {1,4} ops  S {2,12}  sent {3,12}\n", name, t.ops, t.message, bytesText(t.sent));
}

} // namespace

void planc::printCommSummary(const CommSummary &s, llvm::raw_ostream &os) {
  MeshLayout layout(s.mesh);
  os << "comm: @" << s.module << ", mesh";
  bool any = false;
  for (MeshAxis a : {MeshAxis::DP, MeshAxis::PP, MeshAxis::EP, MeshAxis::CP, MeshAxis::TP})
    if (s.mesh[unsigned(a)] > 1) {
      os << " " << spelling(a) << "=" << s.mesh[unsigned(a)];
      any = true;
    }
  if (!any) os << " (one device)";
  os << ", " << counted(layout.numRanks(), "rank") << "; one training step\n";
  os << "bytes: S = message (local blocks; all_gather: the gathered output, reduce_scatter: the whole input)\n"
     << "       sent = bytes each rank sends, ring: all_reduce 2(n-1)/n*S; reduce_scatter, all_gather,\n"
     << "       all_to_all (n-1)/n*S; broadcast, send S; recv, shard_slice 0\n";
  for (const RankCommList &l : s.lists) {
    os << "\n" << pluralOf(int64_t(l.ranks.size()), "rank") << " " << formatRanks(l.ranks) << ": "
       << counted(int64_t(l.ops.size()), "op") << "\n";
    if (l.ops.empty()) continue;
    os << llvm::formatv("  {0,-4} {1,-18} {2,-4} {3,-3} {4,-10} {5,-22} {6,10} {7,10}  {8}\n", "#", "op", "axis",
                        "n", "phase", "block", "S", "sent", "path");
    Total total;
    std::vector<std::pair<std::string, Total>> byAxis, byPhase, byPath, byLayer;
    auto bump = [](std::vector<std::pair<std::string, Total>> &rows, const std::string &key, const CommOp &c) {
      auto it = std::find_if(rows.begin(), rows.end(), [&](const auto &r) { return r.first == key; });
      if (it == rows.end()) {
        rows.push_back({key, Total{}});
        it = std::prev(rows.end());
      }
      it->second.add(c);
    };
    for (size_t i = 0; i < l.ops.size(); ++i) {
      const CommOp &c = l.ops[i];
      std::string block = std::string(spelling(c.dtype)) + toString(c.block);
      std::string path = c.path.empty() ? "-" : c.path;
      os << llvm::formatv("  {0,-4} {1,-18} {2,-4} {3,-3} {4,-10} {5,-22} {6,10} {7,10}  {8}\n", i, opName(c),
                          spelling(c.axis), c.groupSize, c.phase, block, c.messageBytes, bytesText(c.sentBytes),
                          path);
      total.add(c);
      bump(byAxis, spelling(c.axis), c);
      bump(byPhase, c.phase, c);
      bump(byPath, path, c);
      bump(byLayer, layerOf(path), c);
    }
    // Axes fastest-varying first, phases in step order, paths sorted.
    auto rank = [](const std::string &p) {
      return p == "forward" ? 0 : p == "backward" ? 1 : p == "optimizer" ? 2 : 3;
    };
    std::stable_sort(byPhase.begin(), byPhase.end(),
                     [&](const auto &a, const auto &b) { return rank(a.first) < rank(b.first); });
    std::sort(byAxis.begin(), byAxis.end(), [](const auto &a, const auto &b) {
      auto pos = [](const std::string &n) {
        for (size_t i = 0; i < MeshLayout::kFastestFirst.size(); ++i)
          if (n == spelling(MeshLayout::kFastestFirst[i])) return i;
        return MeshLayout::kFastestFirst.size();
      };
      return pos(a.first) < pos(b.first);
    });
    std::sort(byPath.begin(), byPath.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    printTotals(os, "by axis", byAxis);
    printTotals(os, "by phase", byPhase);
    std::sort(byLayer.begin(), byLayer.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    printTotals(os, "by path", byPath);
    printTotals(os, "by layer", byLayer);
    os << llvm::formatv("  total: {0}, S {1} bytes, sent {2} bytes\n", counted(int64_t(total.ops), "op"), total.message,
                        bytesText(total.sent));
  }
}
