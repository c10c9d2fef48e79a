/* bench_lowp.c — make bench-lowp: matmul_gelu in bf16 and in u8 x i8
 * (issue 20, asks 2 and 5) against texc's fp32 build, oneDNN's bf16 and
 * u8 x s8 matmul primitives and OpenBLAS's bf16 GEMM, at one shape
 * M x K x N.
 *
 *   bench_lowp MIN_TIME ROWS TARGETS [SBGEMM_PEER]
 *
 * Built once per shape (bench/bench_lowp.sh) with three texc kernels of
 * that shape, named by the macros LOWP_FP (samples/matmul_gelu.te, its
 * own schedule), LOWP_BF (bench/lowp_bf16.te) and LOWP_IU
 * (bench/lowp_u8i8.te), the last two under texc's default schedule.
 * Every row runs on weights packed once, outside the timed calls: texc's
 * NAME_prepack, oneDNN's reorder into the layout its primitive asks for
 * (format any); OpenBLAS takes w as given (it packs inside each call).
 * The rows compute
 *   fp32   z = gelu(0.125 * x @ w + b), x and w f32
 *   bf16   the same with x and w bf16, an f32 sum (texc: vdpbf16ps)
 *   int8   z = gelu(sx * f32(x @ w) + b), x u8 and w i8, an i32 sum
 *          (texc: vpdpbusd), sx = 4e-6: sx * (x @ w) is about N(0, 1)
 *          here, as 0.125 * x @ w is in the other rows (GELU's fast
 *          path takes |z| <= 5.9, a wider one the rest)
 * oneDNN's bf16 primitive has an output scale 0.125 and a gelu_erf
 * post-op; its u8 x s8 one an output scale sx and the same post-op; both
 * add the bias before the scale (oneDNN 2.x), so they are given b / scale.
 * SBGEMM_PEER (sbgemm_peer.c, where configure found cblas_sbgemm) runs
 * OpenBLAS's bf16 row in a process of its own, once for each
 * OPENBLAS_CORETYPE and OMP_WAIT_POLICY below, the fastest kept.  Each
 * row's output is checked: the bf16 rows against texc's fp32 run on the
 * same bf16-valued inputs (relative to max|z|, BENCH_TOLERANCE), the int8
 * ones against each other (both sum exactly; the epilogues differ by
 * rounding).  Timing is bench_measure_turns's (measure.c): the rows in
 * turns, five rounds, the median of each row's timed calls, with the
 * threads OMP_NUM_THREADS gives (texc's pool and oneDNN's OpenMP both
 * follow it).
 *
 * Appends the shape's rows, for this thread count, to ROWS (Markdown
 * table rows: bench_lowp.sh writes the header) and the issue's targets at
 * this shape, judged, to TARGETS (a Markdown list).  The exit status is 1
 * where a row's output is wrong or a peer failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define LOWP(kernel, fn) CAT(kernel, fn)

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); /* finite values only */
}

static float from_bf16(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

typedef struct Data {
    float *xf, *wf, *wpf, *b, *zf, *zb, *zi, *zd, *zd8;
    uint16_t *xb, *wb, *wpb;
    uint8_t *xu;
    int8_t *wi, *wpi;
    float sx;
} Data;

static void run_fp(void *ctx)
{
    Data *d = ctx;
    LOWP(LOWP_FP, _packed)(d->xf, d->wpf, d->b, d->zf);
}

static void run_bf(void *ctx)
{
    Data *d = ctx;
    LOWP(LOWP_BF, _packed)(d->xb, d->wpb, d->b, d->zb);
}

static void run_iu(void *ctx)
{
    Data *d = ctx;
    LOWP(LOWP_IU, _packed)(d->xu, d->wpi, d->b, &d->sx, d->zi);
}

typedef struct Dnnl {
    dnnl_primitive_t matmul;
    dnnl_exec_arg_t args[4];
    char impl[128];
} Dnnl;

static void run_dnnl(void *ctx)
{
    Dnnl *p = ctx;
    dnnl_primitive_execute(p->matmul, bench_dnnl_stream, 4, p->args);
    dnnl_stream_wait(bench_dnnl_stream);
}

/* oneDNN's matmul of SRC_T x WEI_T -> f32 with bias B / SCALE, output
 * scale SCALE and a gelu_erf post-op; W reordered once.  1, or 0 and WHY. */
static int dnnl_setup(Dnnl *p, dnnl_data_type_t src_t, dnnl_data_type_t wei_t, void *x, void *w,
                      const float *b, float scale, float *z, char *why, size_t why_size)
{
    int64_t m = LOWP_M, k = LOWP_K, n = LOWP_N;
    dnnl_dims_t sd = {m, k}, wd = {k, n}, bd = {1, n}, dd = {m, n};
    dnnl_memory_desc_t smd, wmd, wany, bmd, dmd;
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&smd, 2, sd, src_t, dnnl_ab));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&wmd, 2, wd, wei_t, dnnl_ab));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&wany, 2, wd, wei_t, dnnl_format_tag_any));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&bmd, 2, bd, dnnl_f32, dnnl_ab));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&dmd, 2, dd, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t desc;
    DNNL_TRY(dnnl_matmul_desc_init(&desc, &smd, &wany, &bmd, &dmd));
    dnnl_primitive_desc_t pd;
    if (!bench_dnnl_scaled_gelu(&desc, scale, &pd, p->impl, sizeof p->impl, why, why_size))
        return 0;
    DNNL_TRY(dnnl_primitive_create(&p->matmul, pd));
    dnnl_memory_t src, wei, bias, dst;
    float *scaled = bench_xmalloc(sizeof *scaled * (size_t)n);
    for (int64_t j = 0; j < n; j++)
        scaled[j] = b[j] / scale;
    char layout[128];
    if (!bench_dnnl_weights(pd, &wmd, w, &wei, layout, sizeof layout, why, why_size))
        return 0;
    DNNL_TRY(dnnl_memory_create(&src, &smd, bench_dnnl_engine, x));
    DNNL_TRY(dnnl_memory_create(&bias, &bmd, bench_dnnl_engine, scaled));
    DNNL_TRY(dnnl_memory_create(&dst, &dmd, bench_dnnl_engine, z));
    dnnl_primitive_desc_destroy(pd);
    p->args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, src};
    p->args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, wei};
    p->args[2] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, bias};
    p->args[3] = (dnnl_exec_arg_t){DNNL_ARG_DST, dst};
    return 1;
}

static double gflops(double secs)
{
    return 2.0 * LOWP_M * LOWP_N * LOWP_K / secs * 1e-9;
}

enum { SEED_X = 1, SEED_W = 2, SEED_B = 3 };

/* A row of the table; MEDIAN 0 where it did not run. */
typedef struct Row {
    const char *impl;
    Timing t;
    double err;          /* max|z - ref| / max|ref|, or -1: the reference */
    const char *against; /* what err is measured against */
    char note[512];
} Row;

/* OpenBLAS's bf16 row: PEER in a process of its own for each core type
 * and wait policy, the fastest whose output is REF's (within the
 * tolerance) kept.  Z is M x N scratch. 1, or 0 with R->note saying why. */
static int sbgemm_row(Row *r, const char *peer, int threads, double min_time, const float *ref,
                      float *z)
{
    static const char *const cores[] = {"SkylakeX", "Cooperlake"};
    static const char *const policies[] = {"PASSIVE", "ACTIVE"};
    size_t count = (size_t)LOWP_M * LOWP_N;
    char times[256] = "", config[256] = "", best_env[64] = "";
    int ok = 0;
    for (size_t c = 0; c < 2; c++)
        for (size_t i = 0; i < 2; i++) {
            char out[] = "/tmp/texc-sbgemm-XXXXXX", cmd[1024], line[512];
            int fd = mkstemp(out);
            if (fd < 0)
                bench_die("mkstemp: %s", strerror(errno));
            close(fd);
            snprintf(cmd, sizeof cmd,
                     "env OPENBLAS_CORETYPE=%s OMP_WAIT_POLICY=%s OMP_NUM_THREADS=%d "
                     "OPENBLAS_NUM_THREADS=%d '%s' %d %d %d %d %.9g %d %d %d '%s'",
                     cores[c], policies[i], threads, threads, peer, LOWP_M, LOWP_K, LOWP_N,
                     threads, min_time, SEED_X, SEED_W, SEED_B, out);
            FILE *f = popen(cmd, "r");
            Timing t = {0};
            int got = 0;
            char cfg[256] = "";
            while (f && fgets(line, sizeof line, f)) {
                if (sscanf(line, "timing %lf %lf %lf %lf %d %lf %lf", &t.median, &t.p25, &t.p75,
                           &t.best, &t.reps, &t.cpu_secs, &t.cpu_share) == 7)
                    got = 1;
                else if (!strncmp(line, "config ", 7))
                    snprintf(cfg, sizeof cfg, "%.*s", (int)strcspn(line + 7, "\n"), line + 7);
            }
            int status = f ? pclose(f) : -1;
            FILE *zf = got && status == 0 ? fopen(out, "rb") : NULL;
            bench_fill_nan(z, count);
            int read_all = zf && fread(z, sizeof *z, count, zf) == count;
            if (zf)
                fclose(zf);
            unlink(out);
            size_t used = strlen(times);
            if (!read_all) {
                snprintf(times + used, sizeof times - used, "%s%s/%s failed", used ? ", " : "",
                         cores[c], policies[i]);
                continue;
            }
            double err = bench_rel_error(z, ref, count);
            snprintf(times + used, sizeof times - used, "%s%s/%s %.3f ms%s", used ? ", " : "",
                     cores[c], policies[i], t.median * 1e3, err > BENCH_TOLERANCE ? " wrong" : "");
            if (err > BENCH_TOLERANCE || (ok && t.median >= r->t.median))
                continue;
            ok = 1;
            r->t = t;
            r->err = err;
            snprintf(config, sizeof config, "%s", cfg);
            snprintf(best_env, sizeof best_env, "OPENBLAS_CORETYPE=%s, OMP_WAIT_POLICY=%s",
                     cores[c], policies[i]);
        }
    if (ok)
        snprintf(r->note, sizeof r->note,
                 "own process; %s; %s (w as given) + bias/GELU pass through libmvec; fastest: "
                 "%s (medians: %s); %d reps",
                 config, LOWP_M == 1 ? "sbgemv" : "sbgemm", best_env, times, r->t.reps);
    else
        snprintf(r->note, sizeof r->note, "bench/sbgemm_peer failed or was wrong: %s", times);
    return ok;
}

/* the ratio cell: how many times faster TEXC is than R */
static void ratio(char *buf, size_t size, const Timing *texc, const Row *r)
{
    if (texc->median > 0 && r->t.median > 0)
        snprintf(buf, size, "%.2f", r->t.median / texc->median);
    else
        snprintf(buf, size, "—");
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5)
        bench_die("usage: bench_lowp MIN_TIME ROWS TARGETS [SBGEMM_PEER]");
    double min_time = atof(argv[1]);
    const char *sbgemm_peer = argc > 4 ? argv[4] : NULL;
    FILE *rows = fopen(argv[2], "a"), *targets = fopen(argv[3], "a");
    if (!rows || !targets)
        bench_die("bench_lowp: cannot append to %s or %s", argv[2], argv[3]);
    const char *threads_env = getenv("OMP_NUM_THREADS");
    int threads = threads_env ? atoi(threads_env) : 1;
    size_t mk = (size_t)LOWP_M * LOWP_K, kn = (size_t)LOWP_K * LOWP_N, mn = (size_t)LOWP_M * LOWP_N;
    Data d = {0};
    d.xf = bench_xmalloc(4 * mk);
    d.wf = bench_xmalloc(4 * kn);
    d.b = bench_xmalloc(4 * (size_t)LOWP_N);
    d.zf = bench_xmalloc(4 * mn);
    d.zb = bench_xmalloc(4 * mn);
    d.zi = bench_xmalloc(4 * mn);
    d.zd = bench_xmalloc(4 * mn);
    d.zd8 = bench_xmalloc(4 * mn);
    float *zs = bench_xmalloc(4 * mn);
    d.xb = bench_xmalloc(2 * mk);
    d.wb = bench_xmalloc(2 * kn);
    d.xu = bench_xmalloc(mk);
    d.wi = bench_xmalloc(kn);
    d.sx = 4e-6f;
    bench_fill_random(d.xf, mk, SEED_X);
    bench_fill_random(d.wf, kn, SEED_W);
    bench_fill_random(d.b, LOWP_N, SEED_B);
    /* the bf16 inputs, and fp32 ones of the same values */
    for (size_t i = 0; i < mk; i++) {
        d.xb[i] = to_bf16(d.xf[i]);
        d.xf[i] = from_bf16(d.xb[i]);
        d.xu[i] = (uint8_t)((d.xf[i] + 1.0f) * 127.5f);
    }
    for (size_t i = 0; i < kn; i++) {
        d.wb[i] = to_bf16(d.wf[i]);
        d.wf[i] = from_bf16(d.wb[i]);
        d.wi[i] = (int8_t)(d.wf[i] * 127.0f);
    }
    d.wpf = bench_xmalloc(LOWP(LOWP_FP, _prepacked_bytes)());
    d.wpb = bench_xmalloc(LOWP(LOWP_BF, _prepacked_bytes)());
    d.wpi = bench_xmalloc(LOWP(LOWP_IU, _prepacked_bytes)());
    LOWP(LOWP_FP, _prepack)(d.wf, d.wpf);
    LOWP(LOWP_BF, _prepack)(d.wb, d.wpb);
    LOWP(LOWP_IU, _prepack)(d.wi, d.wpi);

    if (dnnl_engine_create(&bench_dnnl_engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&bench_dnnl_stream, bench_dnnl_engine, dnnl_stream_default_flags) != dnnl_success)
        bench_die("oneDNN: no CPU engine");
    char why[256];
    Dnnl bf = {0}, s8 = {0};
    if (!dnnl_setup(&bf, dnnl_bf16, dnnl_bf16, d.xb, d.wb, d.b, 0.125f, d.zd, why, sizeof why))
        bench_die("oneDNN bf16: %s", why);
    if (!dnnl_setup(&s8, dnnl_u8, dnnl_s8, d.xu, d.wi, d.b, d.sx, d.zd8, why, sizeof why))
        bench_die("oneDNN u8s8: %s", why);

    run_fp(&d);
    run_bf(&d);
    run_iu(&d);
    run_dnnl(&bf);
    run_dnnl(&s8);
    enum { FP, BF, DBF, SB, IU, DS8, ROWS };
    Row r[ROWS] = {
        [FP] = {"texc fp32", .err = -1, .against = "reference of the bf16 rows"},
        [BF] = {"texc bf16", .err = bench_rel_error(d.zb, d.zf, mn), .against = "texc fp32"},
        [DBF] = {"onednn bf16", .err = bench_rel_error(d.zd, d.zf, mn), .against = "texc fp32"},
        [SB] = {"openblas sbgemm", .err = -1, .against = "texc fp32"},
        [IU] = {"texc u8×i8", .err = bench_rel_error(d.zi, d.zd8, mn), .against = "onednn u8×s8"},
        [DS8] = {"onednn u8×s8", .err = bench_rel_error(d.zd8, d.zi, mn), .against = "texc u8×i8"},
    };
    {
        /* in turns: the targets are ratios of these rows */
        RunFn *const runs[] = { run_fp, run_bf, run_dnnl, run_iu, run_dnnl };
        void *const ctxs[] = { &d, &d, &bf, &d, &s8 };
        const int rows[] = { FP, BF, DBF, IU, DS8 };
        enum { TIMED = sizeof rows / sizeof rows[0] };
        Timing t[TIMED];
        bench_measure_turns(runs, ctxs, TIMED, threads, min_time, t);
        for (int i = 0; i < TIMED; i++)
            r[rows[i]].t = t[i];
    }
    snprintf(r[FP].note, sizeof r[FP].note, "samples/matmul_gelu.te, its schedule; w prepacked");
    snprintf(r[BF].note, sizeof r[BF].note, "bench/lowp_bf16.te, default schedule; w prepacked");
    snprintf(r[IU].note, sizeof r[IU].note, "bench/lowp_u8i8.te, default schedule; w prepacked");
    snprintf(r[DBF].note, sizeof r[DBF].note, "%s; w reordered once", bf.impl);
    snprintf(r[DS8].note, sizeof r[DS8].note, "%s; w reordered once", s8.impl);
    int failed = 0;
    if (!sbgemm_peer)
        snprintf(r[SB].note, sizeof r[SB].note,
                 "not run: the peer's OpenBLAS has no cblas_sbgemm (configure)");
    else if (!sbgemm_row(&r[SB], sbgemm_peer, threads, min_time, d.zf, zs))
        failed = 1;

    for (int i = 0; i < ROWS; i++) {
        char rb[32], ri[32], err[64];
        ratio(rb, sizeof rb, &r[BF].t, &r[i]);
        ratio(ri, sizeof ri, &r[IU].t, &r[i]);
        const char *check = "—";
        if (r[i].t.median > 0 && r[i].err >= 0) {
            snprintf(err, sizeof err, "%.1e vs %s", r[i].err, r[i].against);
            check = r[i].err > BENCH_TOLERANCE ? "WRONG" : "ok";
            failed |= r[i].err > BENCH_TOLERANCE;
        } else if (r[i].t.median > 0) {
            snprintf(err, sizeof err, "%s", r[i].against);
        } else {
            snprintf(err, sizeof err, "—");
            check = sbgemm_peer ? "failed" : "not run";
        }
        if (r[i].t.median > 0)
            fprintf(rows, "| %d×%d×%d | %d | %s | %.3f | %.1f | %s | %s | %s | %s | %s |\n", LOWP_M,
                    LOWP_K, LOWP_N, threads, r[i].impl, r[i].t.median * 1e3, gflops(r[i].t.median),
                    rb, ri, err, check, r[i].note);
        else
            fprintf(rows, "| %d×%d×%d | %d | %s | — | — | — | — | — | %s | %s |\n", LOWP_M, LOWP_K,
                    LOWP_N, threads, r[i].impl, check, r[i].note);
    }

    /* issue 20's targets at its shapes */
    struct { int row, peer; double at_least; const char *what; } gemm[] = {
        {BF, DBF, 1.0, "bf16 ≥ 1.0× oneDNN bf16"},
        {BF, FP, 1.7, "bf16 ≥ 1.7× texc fp32"},
        {IU, DS8, 1.0, "u8×i8 ≥ 1.0× oneDNN u8×s8"},
        {IU, FP, 2.5, "u8×i8 ≥ 2.5× texc fp32"},
    }, gemv[] = {
        {BF, FP, 1.8, "bf16 weights ≥ 1.8× texc fp32 GEMV"},
    };
    int issue_gemm = (LOWP_M == 512 && LOWP_K == 768 && LOWP_N == 3072) ||
                     (LOWP_M == 1024 && LOWP_K == 1024 && LOWP_N == 1024) ||
                     (LOWP_M == 64 && LOWP_K == 768 && LOWP_N == 3072);
    int issue_gemv = LOWP_M == 1 && LOWP_K == 768 && LOWP_N == 3072;
    size_t count = issue_gemm ? sizeof gemm / sizeof gemm[0] : issue_gemv ? 1 : 0;
    for (size_t i = 0; i < count; i++) {
        int row = issue_gemm ? gemm[i].row : gemv[i].row, peer = issue_gemm ? gemm[i].peer : gemv[i].peer;
        double at_least = issue_gemm ? gemm[i].at_least : gemv[i].at_least;
        const char *what = issue_gemm ? gemm[i].what : gemv[i].what;
        int wrong = r[row].err > BENCH_TOLERANCE || r[peer].err > BENCH_TOLERANCE;
        double x = r[peer].t.median / r[row].t.median;
        fprintf(targets, "- %d×%d×%d, %d thread%s: %s: %.2f×: %s\n", LOWP_M, LOWP_K, LOWP_N,
                threads, threads > 1 ? "s" : "", what, x,
                wrong ? "not judged (a row's output is wrong)"
                      : x >= at_least ? "**holds**" : "**does not hold**");
    }
    fclose(rows);
    fclose(targets);
    return failed;
}
