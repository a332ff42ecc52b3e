//===- runtime/BlockExchange.cpp - collectives on raw blocks -------------===//

#include "runtime/BlockExchange.h"
#include "runtime/ElementBits.h"
#include "runtime/Plural.h"

#include <algorithm>
#include <cstring>
#include <set>

using namespace planc::runtime;

namespace {

using Bytes = std::vector<uint8_t>;
using Shape = std::vector<int64_t>;

int64_t numelOf(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shapeText(const Shape &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::string groupText(const std::vector<int64_t> &g) {
  std::string out = "{";
  for (size_t i = 0; i < g.size(); ++i) out += (i ? ", " : "") + std::to_string(g[i]);
  return out + "}";
}

/// A block seen as [outer, shape[d], inner] elements, the view slicing needs.
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

/// Rows [start, start + len) of `block` along dim `d`; rows past its end are
/// zero bytes (the padding of an uneven split: the value 0 in every type).
Bytes sliceRows(const uint8_t *block, const Shape &shape, size_t d, int64_t start, int64_t len, unsigned width) {
  DimView v(shape, d);
  Bytes out(size_t(v.outer * len * v.inner) * width, 0);
  int64_t rows = std::clamp<int64_t>(v.size - start, 0, len);
  size_t rowBytes = size_t(v.inner) * width;
  for (int64_t o = 0; o < v.outer; ++o)
    if (rows > 0)
      std::memcpy(out.data() + size_t(o * len) * rowBytes, block + size_t(o * v.size + start) * rowBytes,
                  size_t(rows) * rowBytes);
  return out;
}

/// `parts` (each of `shapes[i]`, equal but for dim `d`) joined along `d`.
Bytes concatRows(const std::vector<const uint8_t *> &parts, const std::vector<Shape> &shapes, size_t d,
                 unsigned width) {
  Shape all = shapes[0];
  all[d] = 0;
  for (const Shape &s : shapes) all[d] += s[d];
  DimView v(all, d);
  Bytes out(size_t(numelOf(all)) * width);
  size_t at = 0;
  for (int64_t o = 0; o < v.outer; ++o)
    for (size_t p = 0; p < parts.size(); ++p) {
      size_t n = size_t(shapes[p][d] * v.inner) * width;
      if (n) std::memcpy(out.data() + at, parts[p] + size_t(o) * n, n);
      at += n;
    }
  return out;
}

/// The members' blocks summed (or maxed) in member order, in f64.
std::vector<double> reduce(const CollectiveCall &call, const std::vector<const void *> &send) {
  size_t n = size_t(numelOf(call.shape));
  std::vector<double> acc(n), block(n);
  decodeBuffer(call.type, send[0], n, acc.data());
  for (size_t j = 1; j < send.size(); ++j) {
    decodeBuffer(call.type, send[j], n, block.data());
    for (size_t i = 0; i < n; ++i)
      acc[i] = call.op == ReduceOp::Max ? std::max(acc[i], block[i]) : acc[i] + block[i];
  }
  return acc;
}

Bytes encoded(ElementType type, const std::vector<double> &values) {
  Bytes out(values.size() * byteSize(type));
  encodeBuffer(type, values.data(), values.size(), out.data());
  return out;
}

/// Elements [begin, begin + count) of the members' blocks reduced in member
/// order in f64, as reduce() does, and encoded at `out`: a piece at a time,
/// so that a large reduction allocates no tensor-sized temporaries.
void reduceRange(const CollectiveCall &call, const std::vector<const void *> &send, size_t begin, size_t count,
                 uint8_t *out) {
  constexpr size_t kPiece = 1 << 12; // two pieces of f64: 64 KiB on the stack
  const unsigned width = byteSize(call.type);
  double acc[kPiece], block[kPiece];
  for (size_t at = 0; at < count; at += kPiece) {
    const size_t m = std::min(kPiece, count - at), first = (begin + at) * width;
    decodeBuffer(call.type, static_cast<const uint8_t *>(send[0]) + first, m, acc);
    for (size_t j = 1; j < send.size(); ++j) {
      decodeBuffer(call.type, static_cast<const uint8_t *>(send[j]) + first, m, block);
      if (call.op == ReduceOp::Max)
        for (size_t i = 0; i < m; ++i) acc[i] = std::max(acc[i], block[i]);
      else
        for (size_t i = 0; i < m; ++i) acc[i] += block[i];
    }
    encodeBuffer(call.type, acc, m, out + at * width);
  }
}

/// Whether a receive buffer overlaps a send block other than its own
/// member's, where reducing a piece at a time could overwrite what is still
/// to be read (the in-process communicator may pass such buffers).
bool overlapsAnotherBlock(const CollectiveCall &c, const std::vector<const void *> &send,
                          const std::vector<void *> &recv, size_t recvBytes) {
  const size_t sendBytes = size_t(numelOf(c.shape)) * byteSize(c.type);
  for (size_t j = 0; j < recv.size(); ++j) {
    if (!recv[j]) continue;
    auto r = reinterpret_cast<uintptr_t>(recv[j]);
    for (size_t k = 0; k < send.size(); ++k) {
      auto b = reinterpret_cast<uintptr_t>(send[k]);
      if (k == j && r == b && c.kind == CollectiveKind::AllReduce) continue; // in place, element by element
      if (r < b + sendBytes && b < r + recvBytes) return true;
    }
  }
  return false;
}

/// All-reduce and reduce-scatter straight into the receive buffers, with the
/// values exchangeBlocks' general path gives; false where it does not apply.
bool reduceInPlace(const CollectiveCall &c, const std::vector<const void *> &send, const std::vector<void *> &recv) {
  const unsigned width = byteSize(c.type);
  const size_t numel = size_t(numelOf(c.shape)), n = c.group.size();
  if (c.kind == CollectiveKind::AllReduce) {
    if (overlapsAnotherBlock(c, send, recv, numel * width)) return false;
    uint8_t *first = nullptr;
    for (size_t j = 0; j < n; ++j) {
      if (!recv[j]) continue;
      if (!first) reduceRange(c, send, 0, numel, first = static_cast<uint8_t *>(recv[j]));
      else std::memcpy(recv[j], first, numel * width);
    }
    return true;
  }
  if (c.kind != CollectiveKind::ReduceScatter) return false;
  // Member j: rows [j * len, (j + 1) * len) of the sum along dim d, zeros past the end.
  const size_t d = size_t(c.dim);
  DimView v(c.shape, d);
  const int64_t len = (c.shape[d] + int64_t(n) - 1) / int64_t(n);
  const size_t rowElems = size_t(v.inner), recvBytes = size_t(v.outer * len) * rowElems * width;
  if (overlapsAnotherBlock(c, send, recv, recvBytes)) return false;
  for (size_t j = 0; j < n; ++j) {
    if (!recv[j]) continue;
    auto *out = static_cast<uint8_t *>(recv[j]);
    const int64_t start = int64_t(j) * len, rows = std::clamp<int64_t>(v.size - start, 0, len);
    for (int64_t o = 0; o < v.outer; ++o) {
      uint8_t *dst = out + size_t(o * len) * rowElems * width;
      if (rows > 0) reduceRange(c, send, size_t(o * v.size + start) * rowElems, size_t(rows) * rowElems, dst);
      std::memset(dst + size_t(rows) * rowElems * width, 0, size_t(len - rows) * rowElems * width);
    }
  }
  return true;
}

bool usesDim(CollectiveKind k) { return k == CollectiveKind::ReduceScatter || k == CollectiveKind::AllGather; }

} // namespace

const char *planc::runtime::spelling(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce: return "all_reduce";
  case CollectiveKind::ReduceScatter: return "reduce_scatter";
  case CollectiveKind::AllGather: return "all_gather";
  case CollectiveKind::AllToAll: return "all_to_all";
  case CollectiveKind::Broadcast: return "broadcast";
  }
  return "?";
}

std::string planc::runtime::describeCollectiveCall(const CollectiveCall &c) {
  std::string s = std::string(spelling(c.kind)) + " " + spelling(c.type) + shapeText(c.shape);
  if (c.kind == CollectiveKind::AllReduce && c.op == ReduceOp::Max) s += " max";
  if (usesDim(c.kind)) s += " dim " + std::to_string(c.dim);
  if (c.kind == CollectiveKind::AllGather) s += " (" + counted(c.gatheredRows, "row") + ")";
  if (c.kind == CollectiveKind::AllToAll)
    s += " split_dim " + std::to_string(c.splitDim) + " concat_dim " + std::to_string(c.concatDim);
  if (c.kind == CollectiveKind::Broadcast) s += " root " + std::to_string(c.root);
  return s + " on group " + groupText(c.group);
}

std::string planc::runtime::checkCollectiveCall(const CollectiveCall &c, int64_t rank, int64_t worldSize) {
  std::string what = describeCollectiveCall(c) + ": ";
  if (unsigned(c.type) >= kNumElementTypes) return what + "an unknown element type";
  if (c.group.empty()) return what + "the group has no ranks";
  std::set<int64_t> seen;
  for (int64_t r : c.group) {
    if (r < 0 || r >= worldSize)
      return what + "rank " + std::to_string(r) + " is not one of the world's " + std::to_string(worldSize);
    if (!seen.insert(r).second) return what + "the group lists rank " + std::to_string(r) + " twice";
  }
  if (!seen.count(rank)) return what + "rank " + std::to_string(rank) + " starts it but is not in the group";
  for (int64_t d : c.shape)
    if (d < 0) return what + "the block has a negative extent";
  int64_t n = int64_t(c.group.size()), dims = int64_t(c.shape.size());
  auto dimOk = [&](int d) { return d >= 0 && d < dims; };
  switch (c.kind) {
  case CollectiveKind::AllReduce:
    break;
  case CollectiveKind::ReduceScatter:
    if (!dimOk(c.dim)) return what + "dim " + std::to_string(c.dim) + " is not a dim of the block";
    break;
  case CollectiveKind::AllGather: {
    if (!dimOk(c.dim)) return what + "dim " + std::to_string(c.dim) + " is not a dim of the block";
    int64_t most = n * c.shape[size_t(c.dim)];
    if (c.gatheredRows > most || c.gatheredRows < (most > 0 ? 1 : 0))
      return what + "the result's " + counted(c.gatheredRows, "row") + " are not 1 to the " +
             std::to_string(most) + " the members' blocks hold";
    break;
  }
  case CollectiveKind::AllToAll:
    if (!dimOk(c.splitDim)) return what + "split_dim " + std::to_string(c.splitDim) + " is not a dim of the block";
    if (!dimOk(c.concatDim)) return what + "concat_dim " + std::to_string(c.concatDim) + " is not a dim of the block";
    if (c.shape[size_t(c.splitDim)] % n != 0)
      return what + "split_dim " + std::to_string(c.splitDim) + " of the block does not cut into " +
             std::to_string(n) + " pieces";
    break;
  case CollectiveKind::Broadcast:
    if (c.root < 0 || c.root >= n)
      return what + "root " + std::to_string(c.root) + " is not a member index (the group has " + std::to_string(n) +
             ")";
    break;
  default:
    return what + "an unknown kind of collective";
  }
  return "";
}

std::string planc::runtime::collectiveCallMismatch(const CollectiveCall &a, const CollectiveCall &b) {
  if (a.kind != b.kind) return "the kind";
  if (a.type != b.type) return "the element type";
  if (a.group != b.group) return "the group (or its order)";
  if (a.shape != b.shape) return "the block's shape";
  if (a.kind == CollectiveKind::AllReduce && a.op != b.op) return "the reduction";
  if (usesDim(a.kind) && a.dim != b.dim) return "the dim";
  if (a.kind == CollectiveKind::AllGather && a.gatheredRows != b.gatheredRows) return "the gathered rows";
  if (a.kind == CollectiveKind::AllToAll && (a.splitDim != b.splitDim || a.concatDim != b.concatDim))
    return "the split or concat dim";
  if (a.kind == CollectiveKind::Broadcast && a.root != b.root) return "the root";
  return "";
}

std::vector<int64_t> planc::runtime::collectiveResultShape(const CollectiveCall &c) {
  Shape s = c.shape;
  int64_t n = int64_t(c.group.size());
  switch (c.kind) {
  case CollectiveKind::AllReduce:
  case CollectiveKind::Broadcast:
    break;
  case CollectiveKind::ReduceScatter:
    s[size_t(c.dim)] = (s[size_t(c.dim)] + n - 1) / n;
    break;
  case CollectiveKind::AllGather:
    s[size_t(c.dim)] = c.gatheredRows;
    break;
  case CollectiveKind::AllToAll:
    s[size_t(c.splitDim)] /= n;
    s[size_t(c.concatDim)] *= n;
    break;
  }
  return s;
}

void planc::runtime::exchangeBlocks(const CollectiveCall &c, const std::vector<const void *> &send,
                                    const std::vector<void *> &recv) {
  if (reduceInPlace(c, send, recv)) return;
  size_t n = c.group.size();
  unsigned width = byteSize(c.type);
  std::vector<Bytes> out(n);
  auto block = [&](size_t j) { return static_cast<const uint8_t *>(send[j]); };
  switch (c.kind) {
  case CollectiveKind::AllReduce: {
    Bytes sum = encoded(c.type, reduce(c, send));
    for (size_t j = 0; j < n; ++j) out[j] = sum;
    break;
  }
  case CollectiveKind::ReduceScatter: {
    // Member j keeps rows [j * len, (j + 1) * len) of the sum: ceil(rows / n)
    // each, the last members' blocks padded with zeros where n does not divide.
    Bytes sum = encoded(c.type, reduce(c, send));
    size_t d = size_t(c.dim);
    int64_t len = (c.shape[d] + int64_t(n) - 1) / int64_t(n);
    for (size_t j = 0; j < n; ++j) out[j] = sliceRows(sum.data(), c.shape, d, int64_t(j) * len, len, width);
    break;
  }
  case CollectiveKind::AllGather: {
    // The members' padding, at the end of the concatenation, is dropped.
    size_t d = size_t(c.dim);
    std::vector<const uint8_t *> parts;
    for (size_t j = 0; j < n; ++j) parts.push_back(block(j));
    Bytes all = concatRows(parts, std::vector<Shape>(n, c.shape), d, width);
    Shape allShape = c.shape;
    allShape[d] *= int64_t(n);
    Bytes kept = sliceRows(all.data(), allShape, d, 0, c.gatheredRows, width);
    for (size_t j = 0; j < n; ++j) out[j] = kept;
    break;
  }
  case CollectiveKind::AllToAll: {
    // Member i receives piece i of every member j, concatenated in member order.
    size_t split = size_t(c.splitDim), concat = size_t(c.concatDim);
    int64_t piece = c.shape[split] / int64_t(n);
    Shape pieceShape = c.shape;
    pieceShape[split] = piece;
    for (size_t i = 0; i < n; ++i) {
      std::vector<Bytes> pieces;
      std::vector<const uint8_t *> parts;
      for (size_t j = 0; j < n; ++j) pieces.push_back(sliceRows(block(j), c.shape, split, int64_t(i) * piece, piece, width));
      for (const Bytes &p : pieces) parts.push_back(p.data());
      out[i] = concatRows(parts, std::vector<Shape>(n, pieceShape), concat, width);
    }
    break;
  }
  case CollectiveKind::Broadcast: {
    const uint8_t *root = block(size_t(c.root));
    Bytes copy(root, root + size_t(numelOf(c.shape)) * width);
    for (size_t j = 0; j < n; ++j) out[j] = copy;
    break;
  }
  }
  for (size_t j = 0; j < n; ++j)
    if (recv[j] && !out[j].empty()) std::memcpy(recv[j], out[j].data(), out[j].size());
}
