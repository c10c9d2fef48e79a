/* bench.h — what the pieces of make bench share.
 *
 * The benchmark is three translation units built with different flags on
 * purpose: bench_matmul.c (the driver and the peers' glue, built like
 * texc's kernels: -O3 -march=native -fopenmp), naive.c (the reference,
 * -O2 as a plain C program would be) and peak.c (the FMA loop that
 * measures the machine's peak).  The GELU is the one texc emits
 * (codegen/c.c, te_gelu_f32), so that every peer computes the same
 * function and the check compares like with like.
 */
#ifndef BENCH_H
#define BENCH_H

#include <math.h>

/* GELU with erf, as texc's generated te_gelu_f32. */
static inline float bench_gelu(float v)
{
    return 0.5f * v * (1.0f + erff(v * 0.707106781f));
}

/* naive.c */
void bench_naive(int m, int n, int k, const float *x, const float *w,
                 const float *b, float *z);

/* peak.c */
extern const char bench_fma_isa[];
double bench_fma_peak(int threads); /* GFLOP per CPU-second of one core */

#endif
