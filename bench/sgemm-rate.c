/* The OpenBLAS sgemm rate of this machine (bench/cpu-step.sh): the best of 5 calls of an
 * m x n x k row-major sgemm, in GFLOP/s.
 *
 *   cc -O2 bench/sgemm-rate.c -lopenblas -o sgemm-rate && ./sgemm-rate 1024 1024 1024
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
  int m = atoi(argv[1]), n = atoi(argv[2]), k = atoi(argv[3]);
  float *a = calloc((size_t)m * k, 4), *b = calloc((size_t)k * n, 4), *c = calloc((size_t)m * n, 4);
  for (long i = 0; i < (long)m * k; ++i) a[i] = 1e-3f * (i % 7);
  for (long i = 0; i < (long)k * n; ++i) b[i] = 1e-3f * (i % 5);
  double best = 1e9;
  for (int r = 0; r < 5; ++r) {
    double t = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1, a, k, b, n, 0, c, n);
    t = now() - t; if (t < best) best = t;
  }
  printf("%d x %d x %d: %.1f GFLOP/s\n", m, n, k, 2.0 * m * n * k / best / 1e9);
  return 0;
}
