/* openblas_peer.c — make bench's OpenBLAS row, in a process of its own.
 *
 *   openblas_peer M K N THREADS MIN_TIME SEED_X SEED_W SEED_B OUT
 *
 * z = gelu(x @ w * 0.125 + b) as a BLAS user writes it at its fastest:
 * cblas_sgemm with alpha = 0.125 (cblas_sgemv at M = 1), then one bias +
 * GELU pass vectorized through libmvec (gelu_mvec.c).  Linked with the
 * OpenBLAS configure chose for the peer (OpenBLAS's OpenMP build where it
 * is installed: see configure.ac), whose OpenMP runtime and
 * OPENBLAS_CORETYPE / OMP_WAIT_POLICY apply to this process alone: the
 * caller (bench_matmul.c, openblas_row) sets them in its environment.
 * The inputs are bench_fill_random's with the caller's seeds, so they are
 * the caller's; timing is bench_measure's, like every row of the table.
 *
 * Prints two lines on stdout, read by openblas_row:
 *   timing MEDIAN P25 P75 BEST REPS CPU_SECS CPU_SHARE
 *   config TEXT   (openblas_get_config, the core in use, the threading)
 * and writes z (M x N floats, native byte order) to OUT.  A non-zero exit
 * status and a message on stderr on any failure.
 */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "openblas_report.h"

void bench_bias_gelu_mvec(float *restrict z, const float *restrict b, int m, int n);

typedef struct Problem {
    int m, k, n;
    const float *x, *w, *b;
    float *z;
} Problem;

static void run(void *ctx)
{
    const Problem *p = ctx;
    if (p->m == 1) /* z = (w^T x)^T: w is K x N row-major */
        cblas_sgemv(CblasRowMajor, CblasTrans, p->k, p->n, 0.125f, p->w, p->n, p->x, 1, 0.0f,
                    p->z, 1);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, p->m, p->n, p->k, 0.125f, p->x,
                    p->k, p->w, p->n, 0.0f, p->z, p->n);
    bench_bias_gelu_mvec(p->z, p->b, p->m, p->n);
}

int main(int argc, char **argv)
{
    int m, k, n, threads;
    double min_time;
    openblas_peer_start("openblas_peer", argc, argv, &m, &k, &n, &threads, &min_time);

    size_t xs = (size_t)m * k, ws = (size_t)k * n, zs = (size_t)m * n;
    float *x = bench_xmalloc(sizeof *x * xs), *w = bench_xmalloc(sizeof *w * ws);
    float *b = bench_xmalloc(sizeof *b * n), *z = bench_xmalloc(sizeof *z * zs);
    bench_fill_random(x, xs, strtoull(argv[6], NULL, 10));
    bench_fill_random(w, ws, strtoull(argv[7], NULL, 10));
    bench_fill_random(b, n, strtoull(argv[8], NULL, 10));
    bench_fill_nan(z, zs);
    Problem p = {m, k, n, x, w, b, z};
    Timing t = bench_measure(run, &p, threads, min_time);

    openblas_report("openblas_peer", argv[9], z, zs, t);
    free(x);
    free(w);
    free(b);
    free(z);
    return 0;
}
