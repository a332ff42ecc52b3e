//===- tests/unit/CollectiveExchange.cpp - collectives of ranks run in step --===//

#include "CollectiveExchange.h"
#include "ir/AttrReader.h"
#include "ir/LocalBlocks.h"
#include "ir/ShapeMath.h"

#include <algorithm>

using namespace planc;
using namespace planc::ir;

namespace {

/// A tensor seen as [outer, dims[d], inner], the view slicing needs.
struct DimView {
  int64_t outer = 1, size = 1, inner = 1;
  DimView(const Shape &s, size_t d) {
    for (size_t i = 0; i < s.size(); ++i) {
      if (i < d) outer *= s[i];
      if (i > d) inner *= s[i];
    }
    size = s[d];
  }
};

/// Rows [start, start + len) of `t` along dim `d`; rows past its end are 0
/// (the padding of an uneven split, ir/LocalBlocks.h).
Tensor sliceDim(const Tensor &t, size_t d, int64_t start, int64_t len) {
  DimView v(t.shape, d);
  Shape s = t.shape;
  s[d] = len;
  Tensor r(s, t.dtype);
  int64_t rows = std::clamp<int64_t>(v.size - start, 0, len);
  for (int64_t o = 0; o < v.outer; ++o)
    std::copy_n(t.data.begin() + (o * v.size + start) * v.inner, rows * v.inner, r.data.begin() + o * len * v.inner);
  return r;
}

/// `parts` joined along dim `d`; they agree on every other dim.
Tensor concatDim(llvm::ArrayRef<Tensor> parts, size_t d) {
  Shape s = parts[0].shape;
  s[d] = 0;
  for (const Tensor &p : parts) s[d] += p.shape[d];
  Tensor r(s, parts[0].dtype);
  DimView v(s, d);
  int64_t at = 0;
  for (int64_t o = 0; o < v.outer; ++o)
    for (const Tensor &p : parts) {
      int64_t n = p.shape[d] * v.inner;
      std::copy_n(p.data.begin() + o * n, n, r.data.begin() + at);
      at += n;
    }
  return r;
}

std::string axisMessage(const Op &op, MeshAxis axis, size_t dim, const char *which) {
  return std::string("'") + spelling(op.kind) + "' over " + spelling(axis) + " needs " + spelling(axis) +
         " as the minor-most axis splitting " + which + " " + std::to_string(dim) + " of its operand, which is " +
         toString(op.operands[0]->type);
}

/// True when `axis` is the last (minor-most) axis splitting dim `d` of `t`.
bool isMinorAxisOf(const TensorType &t, size_t d, MeshAxis axis) {
  return d < t.sharding.dims.size() && !t.sharding.dims[d].empty() && t.sharding.dims[d].back() == axis;
}

} // namespace

CollectiveExchange::CollectiveExchange(const MeshLayout &mesh)
    : mesh(mesh), operands(mesh.numRanks(), nullptr), results(mesh.numRanks(), nullptr),
      joined(mesh.numRanks(), false) {}

void CollectiveExchange::perform(EvalContext &, const Op &, llvm::ArrayRef<const Tensor *> in,
                                 llvm::MutableArrayRef<Tensor> out) {
  operands[current] = in.empty() ? nullptr : in[0];
  results[current] = out.empty() ? nullptr : &out[0];
  joined[current] = true;
}

std::string CollectiveExchange::complete(const Op &op) {
  AttrReader at(op.attrs);
  std::optional<MeshAxis> axis = parseMeshAxis(at.getString("axis"));
  if (!at.ok()) return at.error;
  if (!axis) return "attribute 'axis' names no mesh axis";
  int64_t rank = op.operands.empty() ? 0 : int64_t(op.operands[0]->type.rank());
  // The shape rule has accepted the attributes (interpretRanks runs it first).
  auto dimAttr = [&](const char *name) { return size_t(normalizeDim(at.getInt(name), size_t(rank)).value_or(0)); };

  // Each group produces its members' results here, then they are moved into
  // the result slots after a shape check.
  std::vector<Tensor> produced(mesh.numRanks());
  for (const std::vector<int64_t> &group : mesh.groups(*axis)) {
    int64_t n = int64_t(group.size());
    // A pipeline stage's op runs on that stage's ranks only: a point-to-point
    // message involves the members that issued it; any other collective needs
    // the whole group or none of it.
    size_t members = size_t(std::count_if(group.begin(), group.end(), [&](int64_t r) { return bool(joined[r]); }));
    if (members == 0) continue;
    if (members != group.size() && op.kind != OpKind::Send && op.kind != OpKind::Recv)
      return std::string("only some ranks of a '") + spelling(*axis) + "' group reach this collective";
    switch (op.kind) {
    case OpKind::AllReduce:
    case OpKind::ReduceScatter: {
      // Summed in member order on every member, so all get the same bits.
      bool max = op.kind == OpKind::AllReduce && op.getString("reduce", "sum") == "max";
      Tensor sum = *operands[group[0]];
      for (int64_t j = 1; j < n; ++j) {
        const Tensor &b = *operands[group[j]];
        if (b.shape != sum.shape) return "members of a group hold blocks of different shapes";
        for (size_t i = 0; i < sum.data.size(); ++i)
          sum.data[i] = max ? std::max(sum.data[i], b.data[i]) : sum.data[i] + b.data[i];
      }
      if (op.kind == OpKind::AllReduce) {
        for (int64_t r : group) produced[r] = sum;
        break;
      }
      // Member j keeps rows [j * len, (j + 1) * len): ceil(rows / n) each,
      // the last members' blocks padded with zeros where n does not divide.
      size_t d = dimAttr("dim");
      int64_t len = (sum.shape[d] + n - 1) / n;
      for (int64_t j = 0; j < n; ++j) produced[group[j]] = sliceDim(sum, d, j * len, len);
      break;
    }
    case OpKind::AllGather: {
      size_t d = dimAttr("dim");
      if (!isMinorAxisOf(op.operands[0]->type, d, *axis)) return axisMessage(op, *axis, d, "dim");
      std::vector<Tensor> parts;
      for (int64_t r : group) parts.push_back(*operands[r]);
      // The members' padding, at the end of the concatenation, is dropped.
      Tensor all = concatDim(parts, d);
      if (int64_t rows = localShape(op.results[0]->type, mesh)[d]; rows < all.shape[d]) all = sliceDim(all, d, 0, rows);
      for (int64_t r : group) produced[r] = all;
      break;
    }
    case OpKind::AllToAll: {
      size_t split = dimAttr("split_dim"), concat = dimAttr("concat_dim");
      if (!isMinorAxisOf(op.operands[0]->type, concat, *axis)) return axisMessage(op, *axis, concat, "concat_dim");
      int64_t size = operands[group[0]]->shape[split];
      if (size % n != 0)
        return "split_dim " + std::to_string(split) + " of the local block " + toString(operands[group[0]]->shape) +
               " does not divide into " + std::to_string(n) + " pieces";
      int64_t piece = size / n;
      for (int64_t i = 0; i < n; ++i) {
        std::vector<Tensor> received;
        for (int64_t j = 0; j < n; ++j) received.push_back(sliceDim(*operands[group[j]], split, i * piece, piece));
        produced[group[i]] = concatDim(received, concat);
      }
      break;
    }
    case OpKind::Broadcast: {
      int64_t root = at.getInt("root");
      if (root < 0 || root >= n)
        return "root " + std::to_string(root) + " is not a coordinate of " + spelling(*axis) + " (size " +
               std::to_string(n) + ")";
      for (int64_t r : group) produced[r] = *operands[group[root]];
      break;
    }
    case OpKind::Send:
    case OpKind::Recv: {
      int64_t offset = at.getInt("peer_offset"), tag = at.getInt("tag");
      for (int64_t j = 0; j < n; ++j) {
        if (!joined[group[j]]) continue;
        int64_t peer = group[((j + offset) % n + n) % n];
        if (op.kind == OpKind::Send) {
          mailbox[{peer, group[j], tag}].push_back(*operands[group[j]]);
          continue;
        }
        auto it = mailbox.find({group[j], peer, tag});
        if (it == mailbox.end() || it->second.empty())
          return "rank " + std::to_string(group[j]) + " receives from rank " + std::to_string(peer) + " with tag " +
                 std::to_string(tag) + ", which has sent it nothing: the ranks would wait forever";
        produced[group[j]] = std::move(it->second.front());
        it->second.pop_front();
        if (it->second.empty()) mailbox.erase(it);
      }
      break;
    }
    default:
      return std::string("'") + spelling(op.kind) + "' is not a collective";
    }
  }
  if (!at.ok()) return at.error;

  for (int64_t r = 0; r < mesh.numRanks(); ++r) {
    if (!results[r]) continue;
    if (produced[r].shape != results[r]->shape)
      return "rank " + std::to_string(r) + " gets a block of shape " + toString(produced[r].shape) +
             ", but the result " + toString(op.results[0]->type) + " has local shape " +
             toString(results[r]->shape);
    produced[r].dtype = results[r]->dtype;
    *results[r] = std::move(produced[r]);
  }
  std::fill(operands.begin(), operands.end(), nullptr);
  std::fill(results.begin(), results.end(), nullptr);
  std::fill(joined.begin(), joined.end(), false);
  return "";
}

std::string CollectiveExchange::checkAllReceived() const {
  for (const auto &[key, queue] : mailbox)
    if (!queue.empty())
      return "rank " + std::to_string(std::get<1>(key)) + " sent rank " + std::to_string(std::get<0>(key)) +
             " a message with tag " + std::to_string(std::get<2>(key)) + " that was never received";
  return "";
}
