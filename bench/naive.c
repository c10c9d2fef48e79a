/* naive.c — the reference matmul_gelu: a plain triple loop, built -O2.
 *
 * z[i][j] = gelu(sum_k x[i][k] * w[k][j] * 0.125 + b[j]), row-major, one
 * thread, float accumulation in k order.  Every other peer's output is
 * checked against this one, and it is timed as the "what you get without
 * trying" row.
 */
#include "bench.h"

void bench_naive(int m, int n, int k, const float *x, const float *w,
                 const float *b, float *z)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int kk = 0; kk < k; kk++)
                acc += x[(long)i * k + kk] * w[(long)kk * n + j];
            z[(long)i * n + j] = bench_gelu(acc * 0.125f + b[j]);
        }
}
