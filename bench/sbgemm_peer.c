/* sbgemm_peer.c — make bench-lowp's OpenBLAS bf16 row, in a process of
 * its own.
 *
 *   sbgemm_peer M K N THREADS MIN_TIME SEED_X SEED_W SEED_B OUT
 *
 * z = gelu(x @ w * 0.125 + b) with x and w bf16 and an f32 result, as a
 * BLAS user writes it: cblas_sbgemm with alpha = 0.125 (cblas_sbgemv at
 * M = 1), then the fp32 peer's bias + GELU pass through libmvec
 * (gelu_mvec.c).  The inputs are bench_fill_random's with the caller's
 * seeds rounded to bf16 (to nearest even), so they are bench_lowp.c's
 * bf16 inputs; the rounding is outside the timed calls, as texc's and
 * oneDNN's rows are given bf16 inputs.  Like openblas_peer.c it is linked
 * with the OpenBLAS configure chose for the peer, and the caller
 * (bench_lowp.c) sets OPENBLAS_CORETYPE and OMP_WAIT_POLICY in its
 * environment alone.
 *
 * Prints on stdout, read by bench_lowp.c:
 *   timing MEDIAN P25 P75 BEST REPS CPU_SECS CPU_SHARE
 *   config TEXT   (openblas_get_config, the core in use, the threading)
 * and writes z (M x N floats, native byte order) to OUT.  A non-zero exit
 * status and a message on stderr on any failure.
 */
#include <cblas.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "openblas_report.h"

void bench_bias_gelu_mvec(float *restrict z, const float *restrict b, int m, int n);

typedef struct Problem {
    int m, k, n;
    const bfloat16 *x, *w;
    const float *b;
    float *z;
} Problem;

static void run(void *ctx)
{
    const Problem *p = ctx;
    if (p->m == 1) /* z = (w^T x)^T: w is K x N row-major */
        cblas_sbgemv(CblasRowMajor, CblasTrans, p->k, p->n, 0.125f, p->w, p->n, p->x, 1, 0.0f,
                     p->z, 1);
    else
        cblas_sbgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, p->m, p->n, p->k, 0.125f, p->x,
                     p->k, p->w, p->n, 0.0f, p->z, p->n);
    bench_bias_gelu_mvec(p->z, p->b, p->m, p->n);
}

/* F rounded to bf16, to nearest even (finite values: bench_fill_random's) */
static bfloat16 to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (bfloat16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static bfloat16 *random_bf16(size_t count, unsigned long long seed)
{
    float *f = bench_xmalloc(sizeof *f * count);
    bfloat16 *h = bench_xmalloc(sizeof *h * count);
    bench_fill_random(f, count, seed);
    for (size_t i = 0; i < count; i++)
        h[i] = to_bf16(f[i]);
    free(f);
    return h;
}

int main(int argc, char **argv)
{
    int m, k, n, threads;
    double min_time;
    openblas_peer_start("sbgemm_peer", argc, argv, &m, &k, &n, &threads, &min_time);

    size_t xs = (size_t)m * k, ws = (size_t)k * n, zs = (size_t)m * n;
    bfloat16 *x = random_bf16(xs, strtoull(argv[6], NULL, 10));
    bfloat16 *w = random_bf16(ws, strtoull(argv[7], NULL, 10));
    float *b = bench_xmalloc(sizeof *b * n), *z = bench_xmalloc(sizeof *z * zs);
    bench_fill_random(b, n, strtoull(argv[8], NULL, 10));
    bench_fill_nan(z, zs);
    Problem p = {m, k, n, x, w, b, z};
    Timing t = bench_measure(run, &p, threads, min_time);

    openblas_report("sbgemm_peer", argv[9], z, zs, t);
    free(x);
    free(w);
    free(b);
    free(z);
    return 0;
}
