/* gelu_mvec.c — the OpenBLAS peer's epilogue, z = gelu(z + b), as a BLAS
 * user who wants it fast writes it: one pass over z, threads over rows
 * (over slices of the row when there are fewer rows than threads), the
 * inner loop vectorized.  This file alone is built with -O3 -march=native
 * -ffast-math: under __FAST_MATH__ glibc's math.h declares erff `simd`, so
 * gcc calls libmvec's 16-lane AVX-512 erff (_ZGVeN16v_erff) instead of the
 * scalar one, about 13 ns an element (the Makefile checks with objdump
 * that it does).  The formula is bench.h's bench_gelu, as every peer's. */
#include "bench.h"

void bench_bias_gelu_mvec(float *restrict z, const float *restrict b, int m, int n)
{
    enum { SLICE = 512 };  /* columns a thread takes at once: a few KiB */
    int slices = (n + SLICE - 1) / SLICE;
    #pragma omp parallel for collapse(2) schedule(static)
    for (int i = 0; i < m; i++)
        for (int s = 0; s < slices; s++) {
            float *restrict row = z + (long)i * n;
            int end = s * SLICE + SLICE < n ? s * SLICE + SLICE : n;
            #pragma omp simd
            for (int j = s * SLICE; j < end; j++)
                row[j] = bench_gelu(row[j] + b[j]);
        }
}
