//===- runtime/kernels/cpu/Attention.h - fused (flash) attention and its gradient ----*- C++ -*-===//
//
// flash_attention and flash_attention_grad: one row of scores per thread,
// never the s x t matrix; dropout on the probabilities with the unfused op's
// counters; an f32 path computing in f32 with f64 row sums.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_KERNELS_CPU_ATTENTION_H
#define PLANC_RUNTIME_KERNELS_CPU_ATTENTION_H

#include "runtime/FastMath.h"
#include "runtime/kernels/cpu/Common.h"
#include "runtime/kernels/cpu/Dropout.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace planc::cpu {

/// The shape of a fused attention: `matrices` (batch x heads) of q [S, D],
/// k [Tk, D], v [Tk, E]; the dropout mask is over the [matrices, S, Tk]
/// probabilities whose first dim has `rows` rows (the batch), or, with a
/// `place`, over the global probabilities of which these are a rank's block.
struct FlashShape {
  int64_t matrices, S, Tk, D, E, rows;
  double scale;
  bool causal;
  double p;
  uint64_t key;
  const int64_t *split;
  const BlockPlace *place = nullptr;
};

/// Per row of scores: scale q_i . k_j in f64, -inf where masked.
template <typename T>
inline void flashScores(const FlashShape &f, const T *q, const T *k, int64_t b, int64_t i, double *score) {
  const T *qi = q + (b * f.S + i) * f.D;
  for (int64_t j = 0; j < f.Tk; ++j) {
    if (f.causal && j > i) {
      score[j] = -std::numeric_limits<double>::infinity();
      continue;
    }
    const T *kj = k + (b * f.Tk + j) * f.D;
    double dot = 0;
    for (int64_t c = 0; c < f.D; ++c) dot += double(qi[c]) * double(kj[c]);
    score[j] = f.scale * dot;
  }
}

/// flash_attention: per row, the scores, their log-sum-exp and the output
/// softmax(scores) (dropped) v; no s x t value exists beyond one row per
/// thread. As ir/ops/FlashAttention.cpp's reference, in f64.
template <typename T, typename L>
void flashAttention(const T *q, const T *k, const T *v, T *out, L *lse, const FlashShape f, bool accOut, bool accLse) {
  const MaskCounter counter(f.matrices * f.S * f.Tk, f.rows, f.split, f.place);
  const double keepScale = f.p < 1 ? 1.0 / (1.0 - f.p) : 0.0;
PLANC_OMP(omp parallel)
  {
    std::vector<double> score(size_t(std::max<int64_t>(f.Tk, 1))), acc(size_t(std::max<int64_t>(f.E, 1)));
PLANC_OMP(omp for schedule(static) collapse(2))
    for (int64_t b = 0; b < f.matrices; ++b)
      for (int64_t i = 0; i < f.S; ++i) {
        flashScores(f, q, k, b, i, score.data());
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < f.Tk; ++j) mx = std::max(mx, score[size_t(j)]);
        double sum = 0;
        for (int64_t j = 0; j < f.Tk; ++j) sum += std::exp(score[size_t(j)] - mx);
        const double rowLse = mx + std::log(sum);
        put(lse, b * f.S + i, rowLse, accLse);
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < f.Tk; ++j) {
          double pz = std::exp(score[size_t(j)] - rowLse);
          if (f.p > 0) {
            int64_t g = counter((b * f.S + i) * f.Tk + j);
            pz *= runtime::philoxUniform(f.key, uint64_t(g)) >= f.p ? keepScale : 0.0;
          }
          if (pz == 0) continue;
          const T *vj = v + (b * f.Tk + j) * f.E;
          for (int64_t c = 0; c < f.E; ++c) acc[size_t(c)] += pz * double(vj[c]);
        }
        for (int64_t c = 0; c < f.E; ++c) put(out, (b * f.S + i) * f.E + c, acc[size_t(c)], accOut);
      }
  }
}

/// flash_attention_grad: each matrix on one thread (dk and dv sum over its
/// rows): the probabilities recomputed from lse, then dv, dP, dS, dq, dk as
/// ir/ops/FlashAttention.cpp's reference, in f64.
template <typename T, typename L>
void flashAttentionGrad(const T *q, const T *k, const T *v, const T *out, const L *lse, const T *dout, T *dq, T *dk,
                        T *dv, const FlashShape f, bool accQ, bool accK, bool accV) {
  const MaskCounter counter(f.matrices * f.S * f.Tk, f.rows, f.split, f.place);
  const double keepScale = f.p < 1 ? 1.0 / (1.0 - f.p) : 0.0;
PLANC_OMP(omp parallel)
  {
    std::vector<double> score(size_t(std::max<int64_t>(f.Tk, 1))), dqRow(size_t(std::max<int64_t>(f.D, 1)));
    std::vector<double> dkAcc(size_t(f.Tk * f.D)), dvAcc(size_t(f.Tk * f.E));
PLANC_OMP(omp for schedule(static))
    for (int64_t b = 0; b < f.matrices; ++b) {
      std::fill(dkAcc.begin(), dkAcc.end(), 0.0);
      std::fill(dvAcc.begin(), dvAcc.end(), 0.0);
      for (int64_t i = 0; i < f.S; ++i) {
        const T *oi = out + (b * f.S + i) * f.E, *doi = dout + (b * f.S + i) * f.E, *qi = q + (b * f.S + i) * f.D;
        double rowDot = 0;
        for (int64_t c = 0; c < f.E; ++c) rowDot += double(doi[c]) * double(oi[c]);
        const double rowLse = double(lse[b * f.S + i]);
        flashScores(f, q, k, b, i, score.data());
        std::fill(dqRow.begin(), dqRow.end(), 0.0);
        for (int64_t j = 0; j < f.Tk; ++j) {
          if (f.causal && j > i) continue;
          const double pr = std::exp(score[size_t(j)] - rowLse);
          double z = 1.0;
          if (f.p > 0) {
            int64_t g = counter((b * f.S + i) * f.Tk + j);
            z = runtime::philoxUniform(f.key, uint64_t(g)) >= f.p ? keepScale : 0.0;
          }
          const T *vj = v + (b * f.Tk + j) * f.E, *kj = k + (b * f.Tk + j) * f.D;
          double *dvj = &dvAcc[size_t(j * f.E)], *dkj = &dkAcc[size_t(j * f.D)];
          double dp = 0;
          for (int64_t c = 0; c < f.E; ++c) {
            dvj[c] += pr * z * double(doi[c]);
            dp += double(doi[c]) * double(vj[c]);
          }
          const double ds = pr * (z * dp - rowDot) * f.scale;
          for (int64_t c = 0; c < f.D; ++c) {
            dqRow[size_t(c)] += ds * double(kj[c]);
            dkj[c] += ds * double(qi[c]);
          }
        }
        for (int64_t c = 0; c < f.D; ++c) put(dq, (b * f.S + i) * f.D + c, dqRow[size_t(c)], accQ);
      }
      for (int64_t x = 0; x < f.Tk * f.D; ++x) put(dk, b * f.Tk * f.D + x, dkAcc[size_t(x)], accK);
      for (int64_t x = 0; x < f.Tk * f.E; ++x) put(dv, b * f.Tk * f.E + x, dvAcc[size_t(x)], accV);
    }
  }
}

/// The f32 path of fused attention (forward and gradient): the same steps
/// in f32 over one matrix at a time, written so that every inner loop runs
/// along contiguous memory and vectorises -- k and v are transposed once
/// per matrix into per-thread buffers (so a row of scores is a sum of rows
/// of k^T), exp is planc_expf, the 64-odd-term dot products are summed in
/// f32 and the row statistics in f64. Within 1e-5 relative of the f64
/// reference (tests/unit/backend/LibraryKernelsTest.cpp).
struct FlashF32Matrix {
  std::vector<float> kT, vT, score, prob, keep;
  void transpose(const float *x, int64_t rows, int64_t cols, std::vector<float> &xT) {
    xT.resize(size_t(rows * cols));
    for (int64_t j = 0; j < rows; ++j)
      for (int64_t c = 0; c < cols; ++c) xT[size_t(c * rows + j)] = x[j * cols + c];
  }
  /// score[j] = scale q_i . k_j for j < end (k^T in kT, Tk columns).
  void scores(const FlashShape &f, const float *qi, int64_t end) {
    float *s = score.data();
    const float *kt = kT.data();
    for (int64_t j = 0; j < end; ++j) s[j] = 0;
    for (int64_t c = 0; c < f.D; ++c) {
      const float qc = qi[c];
      const float *row = kt + c * f.Tk;
PLANC_OMP(omp simd)
      for (int64_t j = 0; j < end; ++j) s[j] += qc * row[j];
    }
    const float scale = float(f.scale);
PLANC_OMP(omp simd)
    for (int64_t j = 0; j < end; ++j) s[j] *= scale;
  }
  /// keep[j]: dropout's factor of score (b, i, j) (0 or 1 / (1 - p)).
  void dropMask(const FlashShape &f, const MaskCounter &counter, int64_t b, int64_t i, int64_t end) {
    const float keepScale = f.p < 1 ? float(1.0 / (1.0 - f.p)) : 0.0f;
    for (int64_t j = 0; j < end; ++j)
      keep[size_t(j)] =
          runtime::philoxUniform(f.key, uint64_t(counter((b * f.S + i) * f.Tk + j))) >= f.p ? keepScale : 0.0f;
  }
  void size(const FlashShape &f) {
    score.resize(size_t(std::max<int64_t>(f.Tk, 1)));
    prob.resize(score.size());
    keep.resize(score.size());
  }
};

template <typename L>
void flashAttention(const float *q, const float *k, const float *v, float *out, L *lse, const FlashShape f,
                    bool accOut, bool accLse) {
  const MaskCounter counter(f.matrices * f.S * f.Tk, f.rows, f.split, f.place);
PLANC_OMP(omp parallel)
  {
    FlashF32Matrix m;
    m.size(f);
    std::vector<float> acc(size_t(std::max<int64_t>(f.E, 1)));
PLANC_OMP(omp for schedule(static))
    for (int64_t b = 0; b < f.matrices; ++b) {
      m.transpose(k + b * f.Tk * f.D, f.Tk, f.D, m.kT);
      for (int64_t i = 0; i < f.S; ++i) {
        const int64_t end = f.causal ? std::min(i + 1, f.Tk) : f.Tk;
        m.scores(f, q + (b * f.S + i) * f.D, end);
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < end; ++j) mx = std::max(mx, m.score[size_t(j)]);
        float *p = m.prob.data();
        const float *s = m.score.data();
        double sum = 0;
PLANC_OMP(omp simd reduction(+ : sum))
        for (int64_t j = 0; j < end; ++j) {
          p[j] = planc_expf(s[j] - mx);
          sum += double(p[j]);
        }
        const double rowLse = double(mx) + std::log(sum);
        put(lse, b * f.S + i, rowLse, accLse);
        const float inv = float(1.0 / sum);
        if (f.p > 0) {
          m.dropMask(f, counter, b, i, end);
          for (int64_t j = 0; j < end; ++j) p[j] *= m.keep[size_t(j)];
        }
        std::fill(acc.begin(), acc.end(), 0.0f);
        float *a = acc.data();
        for (int64_t j = 0; j < end; ++j) {
          const float pj = p[j] * inv;
          const float *vj = v + (b * f.Tk + j) * f.E;
PLANC_OMP(omp simd)
          for (int64_t c = 0; c < f.E; ++c) a[c] += pj * vj[c];
        }
        float *o = out + (b * f.S + i) * f.E;
        if (accOut) {
PLANC_OMP(omp simd)
          for (int64_t c = 0; c < f.E; ++c) o[c] += a[c];
        } else {
PLANC_OMP(omp simd)
          for (int64_t c = 0; c < f.E; ++c) o[c] = a[c];
        }
      }
    }
  }
}

template <typename L>
void flashAttentionGrad(const float *q, const float *k, const float *v, const float *out, const L *lse,
                        const float *dout, float *dq, float *dk, float *dv, const FlashShape f, bool accQ, bool accK,
                        bool accV) {
  const MaskCounter counter(f.matrices * f.S * f.Tk, f.rows, f.split, f.place);
  const float scale = float(f.scale);
PLANC_OMP(omp parallel)
  {
    FlashF32Matrix m;
    m.size(f);
    std::vector<float> dp(m.score.size()), ds(m.score.size()), dqRow(size_t(std::max<int64_t>(f.D, 1)));
    std::vector<float> dkAcc(size_t(f.Tk * f.D)), dvAcc(size_t(f.Tk * f.E));
PLANC_OMP(omp for schedule(static))
    for (int64_t b = 0; b < f.matrices; ++b) {
      m.transpose(k + b * f.Tk * f.D, f.Tk, f.D, m.kT);
      m.transpose(v + b * f.Tk * f.E, f.Tk, f.E, m.vT);
      std::fill(dkAcc.begin(), dkAcc.end(), 0.0f);
      std::fill(dvAcc.begin(), dvAcc.end(), 0.0f);
      for (int64_t i = 0; i < f.S; ++i) {
        const int64_t end = f.causal ? std::min(i + 1, f.Tk) : f.Tk;
        const float *oi = out + (b * f.S + i) * f.E, *doi = dout + (b * f.S + i) * f.E,
                    *qi = q + (b * f.S + i) * f.D;
        float rowDot = 0;
PLANC_OMP(omp simd reduction(+ : rowDot))
        for (int64_t c = 0; c < f.E; ++c) rowDot += doi[c] * oi[c];
        m.scores(f, qi, end);
        const float rowLse = float(lse[b * f.S + i]);
        float *p = m.prob.data(), *dpj = dp.data(), *dsj = ds.data();
        const float *s = m.score.data();
PLANC_OMP(omp simd)
        for (int64_t j = 0; j < end; ++j) {
          p[j] = planc_expf(s[j] - rowLse);
          dpj[j] = 0;
        }
        // dP[j] = dout_i . v_j, as a sum of rows of v^T.
        for (int64_t c = 0; c < f.E; ++c) {
          const float dc = doi[c];
          const float *row = m.vT.data() + c * f.Tk;
PLANC_OMP(omp simd)
          for (int64_t j = 0; j < end; ++j) dpj[j] += dc * row[j];
        }
        if (f.p > 0) {
          m.dropMask(f, counter, b, i, end);
          for (int64_t j = 0; j < end; ++j) {
            dsj[j] = p[j] * (m.keep[size_t(j)] * dpj[j] - rowDot) * scale;
            p[j] *= m.keep[size_t(j)]; // dv's weight: the kept probability
          }
        } else {
PLANC_OMP(omp simd)
          for (int64_t j = 0; j < end; ++j) dsj[j] = p[j] * (dpj[j] - rowDot) * scale;
        }
        std::fill(dqRow.begin(), dqRow.end(), 0.0f);
        float *dqr = dqRow.data();
        for (int64_t j = 0; j < end; ++j) {
          const float pj = p[j], sj = dsj[j];
          const float *kj = k + (b * f.Tk + j) * f.D;
          float *dvj = dvAcc.data() + j * f.E, *dkj = dkAcc.data() + j * f.D;
PLANC_OMP(omp simd)
          for (int64_t c = 0; c < f.E; ++c) dvj[c] += pj * doi[c];
PLANC_OMP(omp simd)
          for (int64_t c = 0; c < f.D; ++c) {
            dqr[c] += sj * kj[c];
            dkj[c] += sj * qi[c];
          }
        }
        for (int64_t c = 0; c < f.D; ++c) put(dq, (b * f.S + i) * f.D + c, double(dqr[c]), accQ);
      }
      for (int64_t x = 0; x < f.Tk * f.D; ++x) put(dk, b * f.Tk * f.D + x, double(dkAcc[size_t(x)]), accK);
      for (int64_t x = 0; x < f.Tk * f.E; ++x) put(dv, b * f.Tk * f.E + x, double(dvAcc[size_t(x)]), accV);
    }
  }
}

} // namespace planc::cpu

#endif
