/* measure.c — what the benchmark's drivers share: data, checks, timing.
 *
 * bench_measure is the method every row of make bench's tables follows:
 * warm-up for >= 0.05 s, then separately timed calls until both MIN_TIME
 * seconds and ten calls (three for calls over 1 s) have passed; the median,
 * the interquartile range, the best call, and the CPU time the process got
 * over the timed calls (so that a table can say when a row's threads did
 * not all run).  bench_measure_turns times several rows the same way but
 * in turns: BENCH_TURNS rounds, each row's share of the calls in each
 * round, the order rotated round by round, so that a clock drifting
 * through the run (this machine's moves by 10%) favours no row: for the
 * rows whose ratios a table judges.  Inputs come from bench_fill_random
 * (a fixed seed, so that every run sees the same data) and outputs are
 * compared by bench_rel_error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"

#ifdef BENCH_HAVE_DNNL
dnnl_engine_t bench_dnnl_engine;
dnnl_stream_t bench_dnnl_stream;
#endif

#ifdef BENCH_HAVE_DNNL
int bench_dnnl_matmul_gelu(int64_t m, int64_t k, int64_t n, int plain_weights, BenchMatmulDescs *md,
                           dnnl_primitive_desc_t *pd, char *impl, size_t impl_size, char *why,
                           size_t why_size)
{
    dnnl_memory_desc_t any_weights_md;
    dnnl_dims_t src_dims = {m, k}, weights_dims = {k, n}, bias_dims = {1, n}, dst_dims = {m, n};
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&md->src, 2, src_dims, dnnl_f32, dnnl_ab));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&md->user_weights, 2, weights_dims, dnnl_f32, dnnl_ab));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&any_weights_md, 2, weights_dims, dnnl_f32,
                                          dnnl_format_tag_any));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&md->bias, 2, bias_dims, dnnl_f32, dnnl_ab));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&md->dst, 2, dst_dims, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t desc;
    DNNL_TRY(dnnl_matmul_desc_init(&desc, &md->src, plain_weights ? &md->user_weights : &any_weights_md,
                                   &md->bias, &md->dst));

    /* (the bias it is given is b / 0.125 = b * 8: exact in binary) */
    return bench_dnnl_scaled_gelu(&desc, 0.125f, pd, impl, impl_size, why, why_size);
}

int bench_dnnl_scaled_gelu(const dnnl_matmul_desc_t *desc, float scale, dnnl_primitive_desc_t *pd,
                           char *impl, size_t impl_size, char *why, size_t why_size)
{
    /* oneDNN 2.x applies the output scale after the bias:
     *   dst = gelu(scale * (src @ weights + bias)),
     * so the bias it is given is b / scale. */
    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t post_ops;
    DNNL_TRY(dnnl_primitive_attr_create(&attr));
    DNNL_TRY(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale));
    DNNL_TRY(dnnl_post_ops_create(&post_ops));
    DNNL_TRY(dnnl_post_ops_append_eltwise(post_ops, 1.0f, dnnl_eltwise_gelu_erf, 0.0f, 0.0f));
    DNNL_TRY(dnnl_primitive_attr_set_post_ops(attr, post_ops));
    DNNL_TRY(dnnl_primitive_desc_create(pd, desc, attr, bench_dnnl_engine, NULL));
    dnnl_post_ops_destroy(post_ops);
    dnnl_primitive_attr_destroy(attr);
    const char *name = "?";
    dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &name);
    snprintf(impl, impl_size, "%s", name);
    return 1;
}

int bench_dnnl_weights(const dnnl_primitive_desc_t pd, const dnnl_memory_desc_t *user_md, void *w,
                       dnnl_memory_t *out, char *layout, size_t layout_size, char *why,
                       size_t why_size)
{
    const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    if (dnnl_memory_desc_equal(want, user_md)) {
        snprintf(layout, layout_size, "as given (ab)");
        DNNL_TRY(dnnl_memory_create(out, user_md, bench_dnnl_engine, w));
        return 1;
    }
    /* pre-packed once, outside the timed loop, as an inference engine would */
    bench_describe_layout(layout, layout_size, want);
    DNNL_TRY(dnnl_memory_create(out, want, bench_dnnl_engine, DNNL_MEMORY_ALLOCATE));
    return bench_dnnl_reorder(user_md, w, want, *out, why, why_size);
}

int bench_dnnl_reorder(const dnnl_memory_desc_t *user_md, void *user, const dnnl_memory_desc_t *to_md,
                       dnnl_memory_t to, char *why, size_t why_size)
{
    dnnl_memory_t from;
    dnnl_primitive_desc_t reorder_pd;
    dnnl_primitive_t reorder;
    DNNL_TRY(dnnl_memory_create(&from, user_md, bench_dnnl_engine, user));
    DNNL_TRY(dnnl_reorder_primitive_desc_create(&reorder_pd, user_md, bench_dnnl_engine, to_md,
                                                bench_dnnl_engine, NULL));
    DNNL_TRY(dnnl_primitive_create(&reorder, reorder_pd));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    DNNL_TRY(dnnl_primitive_execute(reorder, bench_dnnl_stream, 2, args));
    DNNL_TRY(dnnl_stream_wait(bench_dnnl_stream));
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(reorder_pd);
    dnnl_memory_destroy(from);
    return 1;
}
#endif

/* ---- Small helpers ------------------------------------------------------- */

void bench_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bench_matmul: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

void *bench_xmalloc(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p)
        bench_die("out of memory (%zu bytes)", bytes);
    return p;
}

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void bench_sleep(double secs)
{
    struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/* Uniform in [-1, 1): xorshift64*, fixed seed, so every run sees the same data. */
void bench_fill_random(float *buf, size_t count, unsigned long long seed)
{
    unsigned long long s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < count; i++) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        unsigned long long r = s * 0x2545f4914f6cdd1dull;
        buf[i] = (float)((double)(r >> 40) / 16777216.0 * 2.0 - 1.0);
    }
}

void bench_fill_nan(float *buf, size_t count)
{
    for (size_t i = 0; i < count; i++)
        buf[i] = NAN;
}

/* max|z - ref| / max|ref|; infinity when z has a NaN where ref has none. */
double bench_rel_error(const float *z, const float *ref, size_t count)
{
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < count; i++) {
        if (isnan(z[i]) && !isnan(ref[i]))
            return INFINITY;
        double d = fabs((double)z[i] - (double)ref[i]);
        if (d > diff)
            diff = d;
        if (fabs((double)ref[i]) > scale)
            scale = fabs((double)ref[i]);
    }
    return scale > 0.0 ? diff / scale : diff;
}

/* ---- The machine's load ------------------------------------------------- */

/* The first three fields of /proc/loadavg: load over 1, 5 and 15 minutes. */
void bench_read_load(char *buf, size_t size)
{
    snprintf(buf, size, "unknown");
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f)
        return;
    double l1, l5, l15;
    if (fscanf(f, "%lf %lf %lf", &l1, &l5, &l15) == 3)
        snprintf(buf, size, "%.2f %.2f %.2f", l1, l5, l15);
    fclose(f);
}

/* Idle and total jiffies of all CPUs, from the first line of /proc/stat. */
static int read_cpu_jiffies(unsigned long long *idle, unsigned long long *total)
{
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return 0;
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                   &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 5)
        return 0;
    *idle = v[3] + v[4]; /* idle + iowait */
    *total = 0;
    for (int i = 0; i < 8; i++)
        *total += v[i];
    return 1;
}

/* Share of the machine's CPU time used over one second while this process
 * sleeps: what everyone else is running.  < 0 when /proc/stat is unreadable. */
double bench_others_busy(void)
{
    unsigned long long idle0, total0, idle1, total1;
    if (!read_cpu_jiffies(&idle0, &total0))
        return -1.0;
    bench_sleep(1.0);
    if (!read_cpu_jiffies(&idle1, &total1) || total1 == total0)
        return -1.0;
    return 1.0 - (double)(idle1 - idle0) / (double)(total1 - total0);
}

/* ---- Timing -------------------------------------------------------------- */

int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_percentile(const double *sorted, int count, double q)
{
    double pos = q * (count - 1);
    int lo = (int)pos;
    int hi = lo + 1 < count ? lo + 1 : lo;
    return sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
}

/* User + system CPU time of the whole process (every thread), seconds. */
static double bench_cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* Warm-up: caches, page faults, thread pools, lazy initialisation. */
static void warm_up(RunFn *run, void *ctx)
{
    double start = bench_now();
    do
        run(ctx);
    while (bench_now() - start < 0.05);
}

/* One row's timed calls, in seconds. */
typedef struct Samples {
    double *v;
    int count, cap;
} Samples;

/* Times one call of RUN(CTX) into S; returns its seconds. */
static double timed_call(Samples *s, RunFn *run, void *ctx)
{
    double t0 = bench_now();
    run(ctx);
    double secs = bench_now() - t0;
    if (s->count == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->v = realloc(s->v, sizeof *s->v * (size_t)s->cap);
        if (!s->v)
            bench_die("out of memory");
    }
    s->v[s->count++] = secs;
    return secs;
}

/* The Timing of S (freed), which took CPU_SECS of process CPU time over
 * WALL seconds on THREADS threads. */
static Timing timing_of(Samples *s, double cpu_secs, double wall, int threads)
{
    qsort(s->v, (size_t)s->count, sizeof *s->v, bench_cmp_double);
    Timing t = {bench_percentile(s->v, s->count, 0.5), bench_percentile(s->v, s->count, 0.25),
                bench_percentile(s->v, s->count, 0.75), s->v[0], s->count, cpu_secs,
                cpu_secs / (wall * threads)};
    free(s->v);
    return t;
}

/* Times RUN(CTX), which should keep THREADS threads busy. */
Timing bench_measure(RunFn *run, void *ctx, int threads, double min_time)
{
    warm_up(run, ctx);
    Samples s = {0};
    double total = 0.0, cpu0 = bench_cpu_seconds(), wall0 = bench_now();
    for (;;) {
        total += timed_call(&s, run, ctx);
        int min_reps = s.v[0] > 1.0 ? 3 : 10;
        if (total >= min_time && s.count >= min_reps)
            break;
    }
    return timing_of(&s, bench_cpu_seconds() - cpu0, bench_now() - wall0, threads);
}

/* Times N rows RUN[i](CTX[i]) in turns (the top of the file) into T[i]. */
void bench_measure_turns(RunFn *const *run, void *const *ctx, int n, int threads, double min_time,
                         Timing *t)
{
    enum { MAX_ROWS = 16 };
    if (n > MAX_ROWS)
        bench_die("bench_measure_turns: %d rows, at most %d", n, MAX_ROWS);
    Samples s[MAX_ROWS] = {{0}};
    double cpu[MAX_ROWS] = {0}, wall[MAX_ROWS] = {0};
    for (int i = 0; i < n; i++)
        warm_up(run[i], ctx[i]);
    for (int round = 0; round < BENCH_TURNS; round++)
        for (int j = 0; j < n; j++) {
            int i = (j + round) % n;
            double cpu0 = bench_cpu_seconds(), wall0 = bench_now(), spent = 0;
            /* this round's share: 1/BENCH_TURNS of min_time and of the calls */
            for (int calls = 1;; calls++) {
                spent += timed_call(&s[i], run[i], ctx[i]);
                int min_calls = s[i].v[0] > 1.0 ? 1 : 2;
                if (spent >= min_time / BENCH_TURNS && calls >= min_calls)
                    break;
            }
            cpu[i] += bench_cpu_seconds() - cpu0;
            wall[i] += bench_now() - wall0;
        }
    for (int i = 0; i < n; i++)
        t[i] = timing_of(&s[i], cpu[i], wall[i], threads);
}

#ifdef BENCH_HAVE_DNNL
/* "blocked BA16a64b"-style description of a blocked layout. */
void bench_describe_layout(char *buf, size_t size, const dnnl_memory_desc_t *md)
{
    if (md->format_kind != dnnl_blocked) {
        snprintf(buf, size, "%s", dnnl_fmt_kind2str(md->format_kind));
        return;
    }
    const dnnl_blocking_desc_t *blk = &md->format_desc.blocking;
    /* outer dimensions by decreasing stride, upper case when blocked */
    int order[DNNL_MAX_NDIMS];
    for (int i = 0; i < md->ndims; i++)
        order[i] = i;
    for (int i = 0; i < md->ndims; i++)
        for (int j = i + 1; j < md->ndims; j++)
            if (blk->strides[order[j]] > blk->strides[order[i]]) {
                int t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
    int len = 0;
    for (int i = 0; i < md->ndims && len < (int)size - 1; i++) {
        int blocked = 0;
        for (int b = 0; b < blk->inner_nblks; b++)
            blocked |= blk->inner_idxs[b] == order[i];
        buf[len++] = (char)((blocked ? 'A' : 'a') + order[i]);
    }
    buf[len] = '\0';
    for (int b = 0; b < blk->inner_nblks; b++)
        len += snprintf(buf + len, len < (int)size ? size - len : 0, "%lld%c",
                        (long long)blk->inner_blks[b], (int)('a' + blk->inner_idxs[b]));
}

#endif
