/* naive.c — the reference matmul_gelu: a plain triple loop, built -O2.
 *
 * z[i][j] = gelu(sum_k x[i][k] * w[k][j] * 0.125 + b[j]), row-major, one
 * thread, float accumulation in k order.  Every other row's output is
 * checked against this one, and it is timed as the "what a plain C loop
 * gets" row.  The loops run i, k, j (the row of z is the accumulator), so
 * that the inner loop walks rows of w: the textbook i, j, k order strides
 * down w's columns and took 12 s a call at 1024x1024x1024 on the 2-core
 * machine (0.18 GFLOP/s), too slow to time more than once or twice.  No
 * restrict, no -march: what a plain C program gets from -O2.
 */
#include "bench.h"

void bench_naive(int m, int n, int k, const float *x, const float *w,
                 const float *b, float *z)
{
    for (int i = 0; i < m; i++) {
        float *row = z + (long)i * n;
        for (int j = 0; j < n; j++)
            row[j] = 0.0f;
        for (int kk = 0; kk < k; kk++) {
            float xik = x[(long)i * k + kk];
            for (int j = 0; j < n; j++)
                row[j] += xik * w[(long)kk * n + j];
        }
        for (int j = 0; j < n; j++)
            row[j] = bench_gelu(row[j] * 0.125f + b[j]);
    }
}
