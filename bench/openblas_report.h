/* openblas_report.h — what every OpenBLAS peer's process
 * (bench/openblas_peer.c, bench/sbgemm_peer.c) does before and after its
 * own product; WHO names the peer in an error. */
#ifndef TEXC_BENCH_OPENBLAS_REPORT_H
#define TEXC_BENCH_OPENBLAS_REPORT_H

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

/* "WHO M K N THREADS MIN_TIME SEED_X SEED_W SEED_B OUT": the shape, the
 * threads (set in OpenBLAS and OpenMP, the GELU pass's and the OpenMP
 * build's pool, and read back) and the minimum time; dies on bad ones. */
static void openblas_peer_start(const char *who, int argc, char **argv, int *m, int *k, int *n,
                                int *threads, double *min_time)
{
    if (argc != 10)
        bench_die("usage: %s M K N THREADS MIN_TIME SEED_X SEED_W SEED_B OUT", who);
    *m = atoi(argv[1]), *k = atoi(argv[2]), *n = atoi(argv[3]), *threads = atoi(argv[4]);
    *min_time = atof(argv[5]);
    if (*m < 1 || *k < 1 || *n < 1 || *threads < 1 || !(*min_time > 0))
        bench_die("%s: bad arguments", who);
    openblas_set_num_threads(*threads);
    omp_set_num_threads(*threads);
    if (openblas_get_num_threads() != *threads || omp_get_max_threads() != *threads)
        bench_die("%s: %d threads asked, OpenBLAS has %d, OpenMP %d", who, *threads,
                  openblas_get_num_threads(), omp_get_max_threads());
}

/* The end: its output Z (ZS floats) written to PATH for the caller's
 * check, then two lines on stdout, the timing and OpenBLAS's
 * configuration, which the caller parses. */
static void openblas_report(const char *who, const char *path, const float *z, size_t zs, Timing t)
{
    FILE *out = fopen(path, "wb");
    if (!out || fwrite(z, sizeof *z, zs, out) != zs || fclose(out) != 0)
        bench_die("%s: cannot write %s", who, path);
    static const char *const parallel[] = {"sequential", "pthreads", "OpenMP"};
    int par = openblas_get_parallel();
    printf("timing %.9g %.9g %.9g %.9g %d %.9g %.9g\n", t.median, t.p25, t.p75, t.best, t.reps,
           t.cpu_secs, t.cpu_share);
    printf("config `%s`, core %s, %s build\n", openblas_get_config(), openblas_get_corename(),
           par >= 0 && par <= 2 ? parallel[par] : "?");
}

#endif
