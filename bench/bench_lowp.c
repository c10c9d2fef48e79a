/* bench_lowp.c — make bench-lowp: matmul_gelu in bf16 and in u8 x i8
 * (issue 20, asks 2 and 5) against texc's fp32 build and oneDNN's
 * bf16 and u8 x s8 matmul primitives, at one shape M x K x N.
 *
 * Built once per shape (Makefile.am: bench-lowp) with three texc kernels
 * of that shape, named by the macros LOWP_FP (samples/matmul_gelu.te, its
 * own schedule), LOWP_BF (bench/lowp_bf16.te) and LOWP_IU
 * (bench/lowp_u8i8.te), the last two under texc's default schedule.
 * Every row runs on weights packed once, outside the timed calls: texc's
 * NAME_prepack, oneDNN's reorder into the layout its primitive asks for
 * (format any).  The rows compute
 *   fp32   z = gelu(0.125 * x @ w + b), x and w f32
 *   bf16   the same with x and w bf16, an f32 sum (texc: vdpbf16ps)
 *   int8   z = gelu(sx * f32(x @ w) + b), x u8 and w i8, an i32 sum
 *          (texc: vpdpbusd), sx = 4e-6: sx * (x @ w) is about N(0, 1)
 *          here, as 0.125 * x @ w is in the other rows (GELU's fast
 *          path takes |z| <= 5.9, a wider one the rest)
 * oneDNN's bf16 primitive has an output scale 0.125 and a gelu_erf
 * post-op; its u8 x s8 one an output scale sx and the same post-op; both
 * add the bias before the scale (oneDNN 2.x), so they are given b / scale.
 * Each row's output is checked: bf16 against texc's fp32 run on the same
 * bf16-valued inputs (relative to max|z|, BENCH_TOLERANCE), int8 against
 * oneDNN's (both sum exactly; the epilogues differ by rounding).  Timing
 * is bench_measure's (measure.c): median of the timed calls, with the
 * threads OMP_NUM_THREADS gives (texc's pool and oneDNN's OpenMP both
 * follow it).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

static double gflops(const Timing *t)
{
    return 2.0 * LOWP_M * LOWP_N * LOWP_K / t->median * 1e-9;
}

int main(int argc, char **argv)
{
    double min_time = argc > 1 ? atof(argv[1]) : 0.3;
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
    d.xb = bench_xmalloc(2 * mk);
    d.wb = bench_xmalloc(2 * kn);
    d.xu = bench_xmalloc(mk);
    d.wi = bench_xmalloc(kn);
    d.sx = 4e-6f;
    bench_fill_random(d.xf, mk, 1);
    bench_fill_random(d.wf, kn, 2);
    bench_fill_random(d.b, LOWP_N, 3);
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
    double err_bf = bench_rel_error(d.zb, d.zf, mn), err_dbf = bench_rel_error(d.zd, d.zf, mn);
    double err_iu = bench_rel_error(d.zi, d.zd8, mn);
    Timing tf = bench_measure(run_fp, &d, threads, min_time);
    Timing tb = bench_measure(run_bf, &d, threads, min_time);
    Timing tdb = bench_measure(run_dnnl, &bf, threads, min_time);
    Timing ti = bench_measure(run_iu, &d, threads, min_time);
    Timing tds = bench_measure(run_dnnl, &s8, threads, min_time);
    char load[64];
    bench_read_load(load, sizeof load);
    printf("%dx%dx%d, %d thread%s (load %s):\n", LOWP_M, LOWP_K, LOWP_N, threads, threads > 1 ? "s" : "",
           load);
    printf("  texc fp32        %7.1f GFLOP/s\n", gflops(&tf));
    printf("  texc bf16        %7.1f GFLOP/s  %.2fx texc fp32, %.2fx oneDNN bf16  (error %.1e%s)\n",
           gflops(&tb), tf.median / tb.median, tdb.median / tb.median, err_bf,
           err_bf > BENCH_TOLERANCE ? " WRONG" : "");
    printf("  oneDNN bf16      %7.1f GFLOP/s  (%s; error %.1e%s)\n", gflops(&tdb), bf.impl, err_dbf,
           err_dbf > BENCH_TOLERANCE ? " WRONG" : "");
    printf("  texc u8 x i8     %7.1f GOP/s    %.2fx texc fp32, %.2fx oneDNN u8 x s8  (vs oneDNN %.1e%s)\n",
           gflops(&ti), tf.median / ti.median, tds.median / ti.median, err_iu,
           err_iu > BENCH_TOLERANCE ? " WRONG" : "");
    printf("  oneDNN u8 x s8   %7.1f GOP/s    (%s)\n", gflops(&tds), s8.impl);
    return err_bf > BENCH_TOLERANCE || err_dbf > BENCH_TOLERANCE || err_iu > BENCH_TOLERANCE;
}
