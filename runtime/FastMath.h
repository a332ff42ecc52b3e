//===- runtime/FastMath.h - exp and tanh of f32 that vectorise -*- C++ -*-===//
//
// Generated elementwise and row kernels (backend/c/CFamily.cpp's prelude
// includes this file) and the CPU library (runtime/kernels/cpu/) take exp
// and tanh of f32 values through these two functions. libm's expf and
// tanhf are calls the compiler cannot vectorise (glibc declares its vector
// variants only under -ffast-math, which the generated code must not use:
// it changes NaN and infinity semantics), and at ~10 ns an element they
// made GELU, softmax and cross-entropy slower than the GEMMs around them.
//
// Both are branch-free (selects, no calls), so an `omp simd` loop over
// them vectorises; both keep NaN, infinities, overflow to inf and
// underflow to 0. Accuracy: within 2 ulps of the exact result over the
// whole f32 range (tests/unit/runtime/FastMathTest.cpp checks every
// 97th f32 against libm's double exp and tanh), so they stay inside the
// few-ulp tolerance kernels are tested to against the interpreter's f64
// reference. On the GPU (nvcc's device pass) they are the device's expf
// and tanhf.
//
// Cody-Waite reduction and Cephes's minimax polynomials (S. L. Moshier,
// Methods and Programs for Mathematical Functions, 1989).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_FASTMATH_H
#define PLANC_RUNTIME_FASTMATH_H

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define PLANC_FAST_MATH_FN __host__ __device__ inline
#else
#define PLANC_FAST_MATH_FN inline
#endif

/// 2^n for an integer n in [-126, 127], as a float (its exponent bits).
PLANC_FAST_MATH_FN float planc_exp2i(int32_t n) {
  const uint32_t bits = uint32_t(n + 127) << 23;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/// exp(x) for f32, within 2 ulps.
PLANC_FAST_MATH_FN float planc_expf(float x) {
#if defined(__CUDA_ARCH__)
  return expf(x);
#else
  // Beyond these, exp is inf or 0 in f32 (and 2^n below stays a float);
  // comparisons with NaN are false, so NaN passes through.
  x = x > 128.0f ? 128.0f : x;
  x = x < -150.0f ? -150.0f : x;
  // n = round(x / ln 2) by the 1.5 * 2^23 trick (no call, vectorises).
  const float shifter = 12582912.0f;
  float n = (x * 1.44269504088896341f + shifter) - shifter;
  n = n == n ? n : 0.0f; // NaN: any n, the polynomial keeps the NaN
  // r = x - n ln 2 in two pieces: n * 0.693359375 is exact for |n| < 2^15.
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  const float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r2 + r + 1.0f;
  // 2^n in two factors, each a normal float for n in [-217, 185]: the
  // second multiplication rounds to a subnormal, 0 or inf as exp does.
  const int32_t ni = int32_t(n), half = ni >> 1;
  return p * planc_exp2i(half) * planc_exp2i(ni - half);
#endif
}

/// tanh(x) for f32, within 2 ulps.
PLANC_FAST_MATH_FN float planc_tanhf(float x) {
#if defined(__CUDA_ARCH__)
  return tanhf(x);
#else
  const float a = x < 0.0f ? -x : x;
  // |x| < 0.625: the odd polynomial (1 - 2/(e^2x + 1) would cancel).
  const float z = x * x;
  float s = -5.70498872745e-3f;
  s = s * z + 2.06390887954e-2f;
  s = s * z - 5.37397155531e-2f;
  s = s * z + 1.33314422036e-1f;
  s = s * z - 3.33332819422e-1f;
  const float small = std::copysign(s * z * x + x, x); // tanh(-0) is -0
  // Else 1 - 2 / (e^2|x| + 1), signed; e^2|x| = inf gives 1.
  float large = 1.0f - 2.0f / (planc_expf(2.0f * a) + 1.0f);
  large = x < 0.0f ? -large : large;
  return a < 0.625f ? small : large; // NaN: a < 0.625 is false, large is NaN
#endif
}

#endif
