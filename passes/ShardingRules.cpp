//===- passes/ShardingRules.cpp - how each op's dims correspond -----------===//

#include "passes/ShardingRules.h"

#include "ir/ops/OpSupport.h"

using namespace planc;
using namespace planc::ir;

namespace {

class Rule {
public:
  explicit Rule(const Op &op) : op(op) {
    L.operands.resize(op.operands.size());
    L.results.resize(op.results.size());
    L.linearIn.assign(op.operands.size(), false);
  }
  int fresh(bool whole = false, bool summed = false) {
    L.whole.push_back(whole);
    L.summed.push_back(summed);
    return L.numLabels++;
  }
  std::vector<int> freshDims(size_t rank) {
    std::vector<int> dims;
    for (size_t d = 0; d < rank; ++d) dims.push_back(fresh());
    return dims;
  }
  size_t rankOf(size_t operand) const { return op.operands[operand]->type.rank(); }
  int64_t dimSize(size_t operand, size_t d) const { return op.operands[operand]->type.shape[d]; }
  /// Operand `i` aligned to `target` from the right (NumPy broadcasting).
  std::vector<int> aligned(size_t i, const std::vector<int> &target, const Shape &targetShape) {
    std::vector<int> dims(rankOf(i), DimLabels::kNone);
    size_t offset = target.size() - rankOf(i);
    for (size_t d = 0; d < dims.size(); ++d)
      dims[d] = dimSize(i, d) == 1 && targetShape[d + offset] != 1 ? DimLabels::kNone : target[d + offset];
    return dims;
  }
  void makeWhole(int label) {
    if (label >= 0) L.whole[size_t(label)] = true;
  }
  void linear(size_t operand) { L.linearIn[operand] = true; }

  /// Every operand has the result's shape (or broadcasts to it).
  DimLabels elementwise() {
    const Shape &shape = op.results[0]->type.shape;
    std::vector<int> res = freshDims(shape.size());
    for (size_t i = 0; i < op.operands.size(); ++i) L.operands[i] = aligned(i, res, shape);
    for (auto &r : L.results) r = res;
    return L;
  }

  const Op &op;
  DimLabels L;
};

std::optional<int64_t> dimAttr(const Op &op, const char *name, size_t rank) {
  return normalizeDim(op.getInt(name), rank);
}

bool isLinearUnary(OpKind k) {
  switch (k) {
  case OpKind::Neg:
  case OpKind::Scale:
  case OpKind::Cast:
  case OpKind::Dropout:
  case OpKind::MaskGrad:
    return true;
  default:
    return false;
  }
}

} // namespace

std::optional<DimLabels> planc::dimLabelsOf(const Op &op) {
  Rule r(op);
  const size_t n = op.operands.size();
  auto rank0 = [&] { return n ? r.rankOf(0) : 0; };
  switch (op.kind) {
  case OpKind::Neg: case OpKind::Exp: case OpKind::Log: case OpKind::Sqrt: case OpKind::Rsqrt:
  case OpKind::Tanh: case OpKind::Relu: case OpKind::Gelu: case OpKind::Silu: case OpKind::Sigmoid:
  case OpKind::Abs: case OpKind::Pow: case OpKind::Scale: case OpKind::AddScalar: case OpKind::Cast:
  case OpKind::Dropout: {
    DimLabels L = r.elementwise();
    L.linearIn[0] = isLinearUnary(op.kind);
    // A partial sum is reduced before a cast that widens it: the collective
    // then moves the narrow bytes (bf16 gradients are reduced in bf16 before
    // the optimizer widens them, as DeepSpeed does). A gradient widened into
    // its f32 accumulator (`main_grad`, Megatron-LM's fp32 main gradients)
    // stays partial through the cast: it is reduced in f32, after it.
    if (op.kind == OpKind::Cast && n == 1 && !op.results.empty() && !op.getBool("main_grad") &&
        byteSize(op.results[0]->type.dtype) > byteSize(op.operands[0]->type.dtype))
      L.linearIn[0] = false;
    return L;
  }
  case OpKind::Add:
  case OpKind::Sub: {
    DimLabels L = r.elementwise();
    L.jointlyLinear = true;
    return L;
  }
  case OpKind::Mul: {
    DimLabels L = r.elementwise();
    L.linearIn = {true, true};
    return L;
  }
  case OpKind::Div: {
    DimLabels L = r.elementwise();
    L.linearIn[0] = true;
    return L;
  }
  case OpKind::Select: // a scalar condition broadcasts: each rank selects its own blocks
    return r.elementwise();
  case OpKind::GeluGrad: case OpKind::SiluGrad: case OpKind::SigmoidGrad: case OpKind::TanhGrad:
  case OpKind::ReluGrad:
    // Linear in dy, but a partial dy is reduced here (Megatron's layout: the
    // backward all-reduce sits where the forward's operand was whole).
    return r.elementwise();
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
  case OpKind::SoftmaxGrad: {
    DimLabels L = r.elementwise();
    if (auto d = dimAttr(op, "dim", rank0())) L.whole[size_t(L.results[0][size_t(*d)])] = true;
    return L;
  }
  case OpKind::CausalMask:
  case OpKind::MaskGrad: {
    DimLabels L = r.elementwise();
    size_t k = rank0();
    for (size_t d = k >= 2 ? k - 2 : 0; d < k; ++d) L.whole[size_t(L.results[0][d])] = true;
    L.linearIn[0] = op.kind == OpKind::MaskGrad;
    return L;
  }
  case OpKind::Rope: { // [b, s, heads, d]: positions and pairs of the head dim are whole
    DimLabels L = r.elementwise();
    size_t k = rank0();
    if (k >= 3) L.whole[size_t(L.results[0][k - 3])] = true;
    if (k >= 1) L.whole[size_t(L.results[0][k - 1])] = true;
    L.linearIn[0] = true;
    return L;
  }
  case OpKind::MatMul: {
    size_t ra = r.rankOf(0), rb = r.rankOf(1);
    if (ra < 2 || rb < 2) return std::nullopt;
    const Shape &out = op.results[0]->type.shape;
    size_t R = out.size();
    std::vector<int> res = r.freshDims(R);
    int K = r.fresh(false, true);
    auto side = [&](size_t i, int rowLabel, bool rowFirst, bool transpose) {
      size_t rank = r.rankOf(i);
      std::vector<int> dims(rank, DimLabels::kNone);
      for (size_t d = 0; d + 2 < rank; ++d) {
        size_t o = d + (R - 2) - (rank - 2);
        dims[d] = r.dimSize(i, d) == 1 && out[o] != 1 ? DimLabels::kNone : res[o];
      }
      int first = rowFirst ? rowLabel : K, second = rowFirst ? K : rowLabel;
      if (transpose) std::swap(first, second);
      dims[rank - 2] = first;
      dims[rank - 1] = second;
      return dims;
    };
    r.L.operands[0] = side(0, res[R - 2], true, op.getBool("transpose_a"));
    r.L.operands[1] = side(1, res[R - 1], false, op.getBool("transpose_b"));
    r.L.results[0] = res;
    r.L.linearIn = {true, true};
    return r.L;
  }
  case OpKind::ReduceSum:
  case OpKind::ReduceMean:
  case OpKind::ReduceMax: {
    size_t k = rank0();
    std::vector<bool> reduced(k, false);
    std::vector<int64_t> dims = op.getInts("dims");
    for (int64_t d : dims)
      if (auto nd = normalizeDim(d, k)) reduced[size_t(*nd)] = true;
    bool keep = op.getBool("keepdim");
    std::vector<int> in, out;
    for (size_t d = 0; d < k; ++d) {
      if (!reduced[d]) {
        in.push_back(r.fresh());
        out.push_back(in.back());
        continue;
      }
      in.push_back(r.fresh(op.kind == OpKind::ReduceMax, op.kind != OpKind::ReduceMax));
      if (keep) out.push_back(DimLabels::kNone);
    }
    r.L.operands[0] = in;
    r.L.results[0] = out;
    r.L.linearIn[0] = op.kind == OpKind::ReduceSum;
    return r.L;
  }
  case OpKind::SumTo: {
    const Shape &out = op.results[0]->type.shape;
    size_t k = rank0(), R = out.size(), offset = k - R;
    std::vector<int> in(k), res(R, DimLabels::kNone);
    for (size_t d = 0; d < k; ++d) {
      bool kept = d >= offset && out[d - offset] == r.dimSize(0, d);
      in[d] = r.fresh(false, !kept);
      if (kept) res[d - offset] = in[d];
    }
    r.L.operands[0] = in;
    r.L.results[0] = res;
    r.L.linearIn[0] = true;
    return r.L;
  }
  case OpKind::BroadcastTo: {
    const Shape &out = op.results[0]->type.shape;
    std::vector<int> res = r.freshDims(out.size());
    r.L.operands[0] = r.aligned(0, res, out);
    r.L.results[0] = res;
    r.L.linearIn[0] = true;
    return r.L;
  }
  case OpKind::Transpose: {
    std::vector<int> in = r.freshDims(rank0());
    std::vector<int64_t> perm = op.getInts("perm");
    if (perm.size() != in.size()) return std::nullopt;
    std::vector<int> res;
    for (int64_t p : perm) res.push_back(in[size_t(p)]);
    r.L.operands[0] = in;
    r.L.results[0] = res;
    r.L.linearIn[0] = true;
    return r.L;
  }
  case OpKind::Slice:
  case OpKind::Pad:
  case OpKind::RepeatInterleave: {
    // A repeat keeps blocks aligned (a rank's kv heads repeat into its query
    // heads), so only slice and pad need their dim whole.
    std::vector<int> dims = r.freshDims(rank0());
    auto d = dimAttr(op, "dim", rank0());
    if (!d) return std::nullopt;
    if (op.kind != OpKind::RepeatInterleave) r.makeWhole(dims[size_t(*d)]);
    r.L.operands[0] = r.L.results[0] = dims;
    r.L.linearIn[0] = true;
    return r.L;
  }
  case OpKind::Concat: {
    std::vector<int> dims = r.freshDims(op.results[0]->type.rank());
    auto d = dimAttr(op, "dim", dims.size());
    if (!d) return std::nullopt;
    r.makeWhole(dims[size_t(*d)]);
    for (auto &o : r.L.operands) o = dims;
    r.L.results[0] = dims;
    r.L.jointlyLinear = true;
    return r.L;
  }
  case OpKind::Gather: { // (table [V, rest...], indices [...]) -> [..., rest...]
    std::vector<int> table = r.freshDims(r.rankOf(0)), idx = r.freshDims(r.rankOf(1));
    r.L.summed[size_t(table[0])] = true; // a vocab-split table: each rank adds its rows
    std::vector<int> res = idx;
    res.insert(res.end(), table.begin() + 1, table.end());
    r.L.operands = {table, idx};
    r.L.results[0] = res;
    r.L.linearIn[0] = true;
    return r.L;
  }
  case OpKind::ScatterAdd: { // (indices [...], dy [..., rest...]) -> [rows, rest...]
    size_t ki = r.rankOf(0), kd = r.rankOf(1);
    std::vector<int> dy;
    for (size_t d = 0; d < kd; ++d) dy.push_back(r.fresh(false, d < ki));
    std::vector<int> res{r.fresh()};
    res.insert(res.end(), dy.begin() + long(ki), dy.end());
    r.L.operands = {std::vector<int>(dy.begin(), dy.begin() + long(ki)), dy};
    r.L.results[0] = res;
    r.L.linearIn[1] = true;
    return r.L;
  }
  case OpKind::LayerNorm:
  case OpKind::RmsNorm:
  case OpKind::LayerNormGrad:
  case OpKind::RmsNormGrad: {
    size_t k = rank0();
    if (k == 0) return std::nullopt;
    std::vector<int> x;
    bool grad = op.kind == OpKind::LayerNormGrad || op.kind == OpKind::RmsNormGrad;
    for (size_t d = 0; d + 1 < k; ++d) x.push_back(r.fresh(false, grad)); // summed into the weight gradients
    x.push_back(r.fresh(true));
    std::vector<int> h{x.back()};
    for (size_t i = 0; i < n; ++i) r.L.operands[i] = r.rankOf(i) == k ? x : h;
    r.L.results[0] = x;
    for (size_t i = 1; i < op.results.size(); ++i) r.L.results[i] = h;
    return r.L;
  }
  case OpKind::CrossEntropy:
  case OpKind::CrossEntropyGrad: { // the vocab dim whole here; the pass splits it itself
    size_t k = rank0();
    if (k == 0) return std::nullopt;
    bool grad = op.kind == OpKind::CrossEntropyGrad;
    std::vector<int> logits;
    for (size_t d = 0; d + 1 < k; ++d) logits.push_back(r.fresh(false, !grad));
    logits.push_back(r.fresh(true));
    r.L.operands[0] = logits;
    r.L.operands[1] = std::vector<int>(logits.begin(), logits.end() - 1);
    if (grad) {
      r.L.operands[2] = {};
      r.L.results[0] = logits;
      r.L.linearIn[2] = true;
    } else {
      r.L.results[0] = {};
    }
    return r.L;
  }
  case OpKind::Fill:
    r.L.results[0] = r.freshDims(op.results[0]->type.rank());
    return r.L;
  case OpKind::LrSchedule:
  case OpKind::ClipScale:
    if (rank0() != 0) return std::nullopt;
    r.L.operands[0] = {};
    r.L.results[0] = {};
    return r.L;
  default:
    return std::nullopt;
  }
}
