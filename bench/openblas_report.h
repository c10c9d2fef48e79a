/* openblas_report.h — the end of an OpenBLAS peer's process
 * (bench/openblas_peer.c, bench/sbgemm_peer.c): its output Z (ZS floats)
 * written to PATH for the caller's check, then two lines on stdout, the
 * timing and OpenBLAS's configuration, which the caller parses.  WHO
 * names the peer in an error. */
#ifndef TEXC_BENCH_OPENBLAS_REPORT_H
#define TEXC_BENCH_OPENBLAS_REPORT_H

#include <stdio.h>

#include "bench.h"

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
