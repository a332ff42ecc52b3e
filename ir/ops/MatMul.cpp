//===- ir/ops/MatMul.cpp - batched matrix product -------------------------===//
//
// matmul(a, b) {transpose_a, transpose_b}: op(a) [..., m, k] times op(b)
// [..., k, n] -> [..., m, n], where op transposes the last two dims when its
// flag is set. The batch dims (all but the last two) broadcast as NumPy's, so
// x [b, s, h] @ w [h, f] is one op.
//
//===----------------------------------------------------------------------===//

#include "ir/ops/DimRule.h"
#include "ir/ops/OpSupport.h"

using namespace planc;
using namespace planc::ir;

namespace {

struct MatMulDims {
  Shape batch; // broadcast batch dims of the result
  int64_t m, k, n;
};

/// The dims of a matmul whose operands passed inferMatMul.
MatMulDims dimsOf(const Shape &a, const Shape &b, bool ta, bool tb) {
  size_t ra = a.size(), rb = b.size();
  MatMulDims d;
  d.m = ta ? a[ra - 1] : a[ra - 2];
  d.k = ta ? a[ra - 2] : a[ra - 1];
  d.n = tb ? b[rb - 2] : b[rb - 1];
  d.batch = *broadcastShapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  return d;
}

std::string inferMatMul(llvm::ArrayRef<TensorType> ops, const AttrMap &attrs, std::vector<TensorType> &res) {
  if (auto e = checkArity(ops, 2); !e.empty()) return e;
  if (auto e = checkFloat(ops, 0); !e.empty()) return e;
  if (auto e = checkSameDType(ops, 0, 1); !e.empty()) return e;
  AttrReader at(attrs);
  bool ta = at.getBool("transpose_a", false), tb = at.getBool("transpose_b", false);
  if (!at.ok()) return at.error;
  const Shape &a = ops[0].shape, &b = ops[1].shape;
  if (a.size() < 2 || b.size() < 2)
    return "operands must have rank 2 or more, got " + toString(a) + " and " + toString(b);
  int64_t kA = ta ? a[a.size() - 2] : a.back();
  int64_t kB = tb ? b.back() : b[b.size() - 2];
  if (kA != kB)
    return "contracted dims differ: " + std::to_string(kA) + " of " + toString(a) + (ta ? " (transposed)" : "") +
           " and " + std::to_string(kB) + " of " + toString(b) + (tb ? " (transposed)" : "");
  if (!broadcastShapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2)))
    return "batch dims of " + toString(a) + " and " + toString(b) + " do not broadcast";
  MatMulDims d = dimsOf(a, b, ta, tb);
  Shape out = d.batch;
  out.push_back(d.m);
  out.push_back(d.n);
  res = {TensorType(out, ops[0].dtype)};
  return "";
}

void evalMatMul(EvalContext &, const Op &op, llvm::ArrayRef<const Tensor *> in, llvm::MutableArrayRef<Tensor> out) {
  AttrReader at(op.attrs);
  bool ta = at.getBool("transpose_a", false), tb = at.getBool("transpose_b", false);
  const Tensor &a = *in[0], &b = *in[1];
  Tensor &c = out[0];
  MatMulDims d = dimsOf(a.shape, b.shape, ta, tb);
  const int64_t m = d.m, k = d.k, n = d.n;

  // Batch strides in whole matrices, 0 along broadcast dims.
  auto batchStrides = [&](const Shape &s) {
    std::vector<int64_t> st = broadcastStrides(Shape(s.begin(), s.end() - 2), d.batch);
    for (int64_t &x : st) x *= s[s.size() - 2] * s.back();
    return st;
  };
  IndexWalker w(d.batch, {batchStrides(a.shape), batchStrides(b.shape)});
  if (w.count() == 0 || c.data.empty()) return;
  // Each C[i, j] is the sum over p of A'[i, p] B'[p, j], in the order p = 0,
  // 1, ...: the rows of A' and the columns of B' are first copied out
  // contiguous (A' as [m, k], B' as [n, k]), so the inner loop is a dot product of
  // two rows -- the same sums in the same order as indexing the operands in
  // place, without a transpose test and a strided load per term (the
  // interpreter's hottest loop; sanitized, 3x its time).
  std::vector<double> rowsA(size_t(m * k)), colsB(size_t(n * k));
  int64_t cOffset = 0;
  do {
    const double *pa = a.data.data() + w.offset(0), *pb = b.data.data() + w.offset(1);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) rowsA[size_t(i * k + p)] = ta ? pa[p * m + i] : pa[i * k + p];
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) colsB[size_t(j * k + p)] = tb ? pb[j * k + p] : pb[p * n + j];
    double *pc = c.data.data() + cOffset;
    for (int64_t i = 0; i < m; ++i) {
      const double *ar = rowsA.data() + i * k;
      int64_t j = 0;
      // Four columns at once: each A' element is loaded once for four sums,
      // and each sum still adds its terms in the order p = 0, 1, ...
      for (; j + 4 <= n; j += 4) {
        const double *b0 = colsB.data() + j * k, *b1 = b0 + k, *b2 = b1 + k, *b3 = b2 + k;
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double x = ar[p];
          s0 += x * b0[p];
          s1 += x * b1[p];
          s2 += x * b2[p];
          s3 += x * b3[p];
        }
        pc[i * n + j] = s0;
        pc[i * n + j + 1] = s1;
        pc[i * n + j + 2] = s2;
        pc[i * n + j + 3] = s3;
      }
      for (; j < n; ++j) {
        const double *bc = colsB.data() + j * k;
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) sum += ar[p] * bc[p];
        pc[i * n + j] = sum;
      }
    }
    cOffset += m * n;
  } while (w.next());
}

// C = op(A) op(B). With A' = op(A), B' = op(B): dA' = dC B'^T, dB' = A'^T dC;
// a transposed operand's gradient is the transpose of that, which the
// transpose flags express without a transpose op. Broadcast batch dims are
// summed back with sum_to.
void gradMatMul(Builder &b, const Op &op, llvm::ArrayRef<Value *> d, std::vector<Value *> &dx) {
  dx.assign(2, nullptr);
  Value *dC = d[0];
  if (!dC) return;
  AttrReader at(op.attrs);
  bool ta = at.getBool("transpose_a", false), tb = at.getBool("transpose_b", false);
  Value *A = op.operands[0], *B = op.operands[1];
  Value *dA = ta ? b.matmul(B, dC, tb, true)    // (dC B'^T)^T = B' dC^T   [..., k, m]
                 : b.matmul(dC, B, false, !tb); // dC B'^T                 [..., m, k]
  Value *dB = tb ? b.matmul(dC, A, true, ta)    // (A'^T dC)^T = dC^T A'   [..., n, k]
                 : b.matmul(A, dC, !ta, false); // A'^T dC                 [..., k, n]
  dx[0] = b.sumTo(dA, A->type.shape);
  dx[1] = b.sumTo(dB, B->type.shape);
}

double flopsMatMul(const Op &op) {
  AttrReader at(op.attrs);
  MatMulDims d = dimsOf(op.operands[0]->type.shape, op.operands[1]->type.shape, at.getBool("transpose_a", false),
                        at.getBool("transpose_b", false));
  return 2.0 * double(product(d.batch)) * double(d.m) * double(d.n) * double(d.k);
}


/// Batch dims broadcast as in elementwise ops; the contraction is summed.
std::optional<DimLabels> labelsMatMul(const Op &op) {
  DimRule r(op);
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

} // namespace

void ir::registerMatMulOps(OpDef *t) {
  define(t, OpKind::MatMul, inferMatMul, evalMatMul, gradMatMul, flopsMatMul);
  declare(t, OpKind::MatMul, 0, labelsMatMul);
  kernel(t, OpKind::MatMul, KernelClass::Gemm);
}
