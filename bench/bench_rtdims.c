/* bench_rtdims.c — make bench, run-time sizes: one dynamic artifact
 * against static kernels and oneDNN (issue #16).
 *
 * The operation is samples/matmul_gelu.te, z = gelu(x @ w * 0.125 + b) in
 * f32, row-major, N = 3072, K = 768, with M a run-time size:
 * gen_rtdims.sh strips the file's schedules (texc's default schedule) and
 * declares `dim M in 1..4096 = 512`, and builds from that one file the
 * kernels bench/gen-rt/rt_kernels.h lists.  At every M of the Makefile's
 * BENCH_RT_SIZES (issue #16's thirty, 1 to 4096) and every thread count,
 * the rows are:
 *
 *   dynamic        the one artifact, mg_rt_packed(M, ...): built once, M
 *                  an argument
 *   static         texc -D M=m of the same file: a kernel for that M alone,
 *                  texc's default schedule at that M
 *   dynamic tuned  the artifact built with the tuning log's records, where
 *                  texc uses them; otherwise "no tuning record" and why
 *   oracle         texc -D M=m with the tuning log's winner for that M
 *                  (a schedule tuned for each M); otherwise "no tuning
 *                  record" and why
 *   oneDNN rt-M    oneDNN's matmul primitive created once for every M:
 *                  src and dst {DNNL_RUNTIME_DIM_VAL, K} and {.., N}, plain
 *                  row-major (format any is not allowed for a tensor with
 *                  a run-time dim); given fully specified memory objects
 *                  for each M at execution
 *   oneDNN per-M   a primitive created for each M (what a framework with a
 *                  primitive cache runs): every size known at creation
 *   oneDNN best    the faster of the two at each M and thread count: the
 *                  peer the ratios are taken against
 * Both oneDNN rows are as bench_matmul.c's onednn row: bias (b / 0.125,
 * as oneDNN 2.x scales after the bias), output scale 0.125 and an
 * eltwise_gelu_erf post-op; the weights in the layout the primitive asks
 * for (format any: K and N are known), reordered once, outside the timed
 * loop, for each primitive.  texc's kernels read w prepacked the same way
 * (NAME_prepack once, untimed; the dynamic artifact's packing does not
 * depend on M).
 *
 * Ratios are speeds, this row's time over the other's inverted: the
 * dynamic row's speed over the static row's, the tuned one's over the
 * oracle's, texc's over oneDNN best's (> 1: texc faster).  Over the
 * sizes, the geometric mean and the worst; then issue #16's targets,
 * judged on this run's numbers at each thread count:
 *   dynamic ÷ static:        geomean >= 0.95, worst >= 0.85
 *   dynamic tuned ÷ oracle:  geomean >= 0.97, worst >= 0.90
 *   dynamic tuned ÷ oneDNN best: geomean >= 1.0
 *   tuning the dynamic artifact takes at most a quarter of the oracle's
 *   summed tuning time (all sizes)
 * A target whose rows were not all measured (no tuning record, a
 * mismatch) is "not judged", never guessed.
 *
 * Tuning records.  The tuned builds read BENCH_LOG (texc's default log
 * when empty) with --tune-cache BENCH_TUNE_CACHE.  The oracle's come
 * from tuning the generated file at each M,
 *     texc --tune --tune-cache=warm -D M=m bench/gen-rt/matmul_gelu_rt.te -o /tmp/o
 * and the dynamic artifact's from tuning it with M at run time (issue
 * #16's phase 5; texc refuses --tune with a run-time dim until then);
 * make bench-rt-tune runs both, a time budget for each.
 * Tuning time is read from the log: for each record, the seconds the
 * tuner recorded for building the candidate and measuring it (build_s,
 * plus first_s + repeats x time_s for a measured one, limit_s for one
 * that timed out), summed over the records of this machine and cache
 * mode in texc's default search space for the program: for the oracle,
 * the records whose dims are exactly M = m, N = 3072, K = 768 (for the
 * sizes of the run); for the dynamic artifact, the records that carry a
 * bucket (tuning_kind below: a bucket's record gives M as an object,
 * {"lo", "hi", "hint"}: tuner/log.c).  A lower bound of the tuner's wall time
 * (the cost model and process starts are not in it), counted the same
 * way for both sides.
 *
 * Dispatch overhead.  A call at a size outside the range returns
 * NAME_ERANGE at once and tells nothing about the dispatch, so the
 * section times a tight loop of the generated dispatch itself:
 * mg_rt_variant(M), which every entry point's dispatcher switches on (the
 * range checks, then the if-chain over the buckets; the variant's index),
 * through a volatile M so that nothing is hoisted, in ns per call
 * including the call.
 * The section also checks that M = MIN - 1 and MAX + 1 return
 * NAME_ERANGE with z untouched.
 *
 * Method.  bench_measure (measure.c), as every make bench row: inputs
 * uniform in [-1, 1) from a fixed seed (x allocated for the largest M,
 * each M using its first rows), warm caches, >= 0.05 s warm-up, then the
 * median of separately timed calls (>= MIN_TIME s and >= 10 calls).  The
 * rows a ratio compares (dynamic and static; dynamic tuned and oracle)
 * are timed in turn, A B B A, each keeping the faster of its two medians,
 * so that neither gains from its place in the order (measure_pair);
 * and at each size every texc kernel's w is packed into a fresh buffer
 * (the dynamic artifact's too, though its packing does not depend on M),
 * so that no row keeps one buffer's placement for the whole run.
 * Each row's output is poisoned with NaN first and compared afterwards
 * with naive.c's reference (computed once at the largest M: row i of z
 * depends on row i of x alone): max|z - ref| / max|ref| <= 1e-4, else the
 * row is a MISMATCH and the exit status 1.  Thread counts are set with
 * omp_set_num_threads (texc's pool and oneDNN's OpenMP runtime follow
 * it) and read back.  cpu = the process's CPU time / (wall time x
 * threads) over a row's timed calls; below 90% (⚠) the row did not have
 * its cores.
 *
 *   bench_rtdims [--threads '1 2'] [--min-time S] [--out FILE.md]
 *
 * The report (a Markdown section) goes to stdout and to --out; progress
 * goes to stderr.  make bench appends it to bench/results.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "rt_kernels.h"

#ifndef BENCH_KERNEL_CFLAGS
#define BENCH_KERNEL_CFLAGS "?"
#endif

enum { MAX_THREAD_COUNTS = 8, N = MG_RT_N, K = MG_RT_K };

/* ---- The kernels ------------------------------------------------------- */

typedef void StaticFn(const float *x, const float *w, const float *b, float *z);
typedef int DynamicFn(int64_t m, const float *x, const float *w, const float *b, float *z);
/* Puts w in the layout the kernel reads, once, outside the timed loop;
 * the seconds it took, or -1 if the kernel reads w as it is. */
typedef double PrepareFn(const float *w);

typedef struct Size {
    int m;
    StaticFn *static_fn;       /* texc -D M=m, default schedule */
    PrepareFn *static_prepare;
    StaticFn *oracle;          /* texc -D M=m with the log's winner, or NULL */
    PrepareFn *oracle_prepare;
    const char *oracle_note;   /* texc's words about the log */
} Size;

#define SIZE_ENTRY(M, FN, PREP, ORACLE, OPREP, NOTE) {M, FN, PREP, ORACLE, OPREP, NOTE},
static const Size sizes[] = {BENCH_RT_SIZES(SIZE_ENTRY)};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

static DynamicFn *const dynamic_fn = BENCH_RT_DYNAMIC;
static DynamicFn *const tuned_fn = BENCH_RT_TUNED;
static PrepareFn *const tuned_prepare = BENCH_RT_TUNED_PREPARE;

/* ---- Rows ---------------------------------------------------------------- */

/* The rows of a size, in the table's order: X(kind, name) */
#define RT_IMPLS(X)                                                          \
    X(IMPL_DYNAMIC, "dynamic")            /* the one artifact */              \
    X(IMPL_STATIC, "static")              /* -D M=m, default schedule */      \
    X(IMPL_TUNED, "dynamic tuned")        /* the artifact, log's records */   \
    X(IMPL_ORACLE, "oracle")              /* -D M=m, tuned for m */           \
    X(IMPL_DNNL_RT, "oneDNN rt-M")        /* one primitive, M at run time */  \
    X(IMPL_DNNL_PER_M, "oneDNN per-M")    /* a primitive for each M */

typedef enum Impl {
#define IMPL_ENUM(kind, name) kind,
    RT_IMPLS(IMPL_ENUM)
#undef IMPL_ENUM
    NIMPLS
} Impl;

static const char *const impl_names[] = {
#define IMPL_NAME(kind, name) name,
    RT_IMPLS(IMPL_NAME)
#undef IMPL_NAME
};

typedef enum RowState {
    ROW_UNSET,       /* not run */
    ROW_OK,          /* measured, output matches the reference */
    ROW_MISMATCH,    /* measured, output does not match (or a call failed) */
    ROW_ABSENT,      /* oneDNN was not found by configure */
    ROW_FAILED,      /* the peer could not be set up (note says why) */
    ROW_NO_RECORD,   /* a tuned row: the log has no record texc uses */
} RowState;

typedef struct Row {
    RowState state;
    Timing timing;
    double error;
    char note[320];
} Row;

static Row rows[NSIZES][MAX_THREAD_COUNTS][NIMPLS];

static int is_ok(const Row *r)
{
    return r->state == ROW_OK;
}

static int is_measured(const Row *r)
{
    return r->state == ROW_OK || r->state == ROW_MISMATCH;
}

/* ---- The data -------------------------------------------------------------- */

typedef struct Data {
    int max_m;                 /* the largest M of the run: x, z, ref have its rows */
    float *x, *w, *b, *z, *ref;
    float *bias_dnnl;          /* b / 0.125, for oneDNN (scale after bias) */
    double min_time;
} Data;

typedef struct StaticRun {
    StaticFn *fn;
    const Data *d;
} StaticRun;

static void run_static(void *ctx)
{
    const StaticRun *s = ctx;
    s->fn(s->d->x, s->d->w, s->d->b, s->d->z);
}

typedef struct DynamicRun {
    DynamicFn *fn;
    int64_t m;
    const Data *d;
    int failed;                /* a call returned nonzero */
} DynamicRun;

static void run_dynamic(void *ctx)
{
    DynamicRun *r = ctx;
    if (r->fn(r->m, r->d->x, r->d->w, r->d->b, r->d->z) != 0)
        r->failed = 1;
}

/* Times RUN, IMPL's row at M rows on THREADS threads, and checks z against the reference. */
static void measure(Row *r, Impl impl, RunFn *run, void *ctx, const Data *d, int m, int threads)
{
    size_t count = (size_t)m * N;
    bench_fill_nan(d->z, count);
    r->timing = bench_measure(run, ctx, threads, d->min_time);
    r->error = bench_rel_error(d->z, d->ref, count);
    r->state = r->error <= BENCH_TOLERANCE ? ROW_OK : ROW_MISMATCH;
    fprintf(stderr, "  M %4d %2d thr %-14s %10.4f ms  err %.2e  cpu %3.0f%%%s\n", m, threads,
            impl_names[impl],
            r->timing.median * 1e3, r->error, 100.0 * r->timing.cpu_share,
            r->state == ROW_MISMATCH ? "  *** MISMATCH ***" : "");
}

/* One side of a compared pair (dynamic and static, tuned and oracle). */
typedef struct Side {
    Row *row;
    Impl impl;
    RunFn *run;
    void *ctx;
} Side;

/* Times the two sides of a pair in turn, A B B A, so that neither gains
 * from going second (a clock that ramps, a cache the other left warm):
 * each row keeps the faster of its two medians, and is a mismatch if
 * either run's output was.  B may be NULL (A alone, once). */
static void measure_pair(const Side *a, const Side *b, const Data *d, int m, int threads)
{
    const Side *order[4] = { a, b, b, a };
    Row best[2];
    int seen[2] = { 0, 0 };
    for (int i = 0; i < (b ? 4 : 1); i++) {
        const Side *x = order[i];
        int k = x == a ? 0 : 1;
        measure(x->row, x->impl, x->run, x->ctx, d, m, threads);
        if (!seen[k] || x->row->timing.median < best[k].timing.median ||
            x->row->state == ROW_MISMATCH) {
            int mismatch = seen[k] && best[k].state == ROW_MISMATCH;
            best[k] = *x->row;
            if (mismatch)
                best[k].state = ROW_MISMATCH;
        }
        seen[k] = 1;
    }
    a->row->timing = best[0].timing, a->row->error = best[0].error, a->row->state = best[0].state;
    if (b)
        b->row->timing = best[1].timing, b->row->error = best[1].error, b->row->state = best[1].state;
}

/* Prepacks for a texc row (timed once, said in the note). */
static void prepare_note(Row *r, PrepareFn *prepare, const Data *d, const char *note)
{
    double secs = prepare(d->w);
    if (secs >= 0)
        snprintf(r->note, sizeof r->note, "%s%sw prepacked once, untimed: %.2f ms", note,
                 note[0] ? "; " : "", secs * 1e3);
    else
        snprintf(r->note, sizeof r->note, "%s", note);
}

/* ---- oneDNN ------------------------------------------------------------------ */

typedef struct DnnlMatmul DnnlMatmul;

#ifdef BENCH_HAVE_DNNL
/* One matmul primitive and its prepacked weights: for one M, or for any
 * (M = DNNL_RUNTIME_DIM_VAL). */
struct DnnlMatmul {
    dnnl_primitive_t prim;
    dnnl_memory_t weights, bias;
    char impl[64];             /* the implementation oneDNN chose */
    char layout[48];           /* the weights' layout */
    double setup_ms;           /* creation and the weights' reorder */
};

static int dnnl_matmul_new(DnnlMatmul *mm, int64_t m, const Data *d, char *why, size_t why_size)
{
    memset(mm, 0, sizeof *mm);
    double t0 = bench_now();
    BenchMatmulDescs md;
    dnnl_primitive_desc_t pd;
    if (!bench_dnnl_matmul_gelu(m, K, N, 0, &md, &pd, mm->impl, sizeof mm->impl, why, why_size))
        return 0;
    dnnl_memory_desc_t bias_md = md.bias, user_weights_md = md.user_weights;
    DNNL_TRY(dnnl_primitive_create(&mm->prim, pd));
    DNNL_TRY(dnnl_memory_create(&mm->bias, &bias_md, bench_dnnl_engine, d->bias_dnnl));

    /* the weights in the primitive's layout, reordered once */
    if (!bench_dnnl_weights(pd, &user_weights_md, d->w, &mm->weights, mm->layout, sizeof mm->layout,
                            why, why_size))
        return 0;
    dnnl_primitive_desc_destroy(pd);
    mm->setup_ms = (bench_now() - t0) * 1e3;
    return 1;
}

static void dnnl_matmul_free(DnnlMatmul *mm)
{
    if (mm->prim)
        dnnl_primitive_destroy(mm->prim);
    if (mm->weights)
        dnnl_memory_destroy(mm->weights);
    if (mm->bias)
        dnnl_memory_destroy(mm->bias);
    memset(mm, 0, sizeof *mm);
}

/* One execution of a primitive at M rows: src and dst fully specified. */
typedef struct DnnlCall {
    dnnl_primitive_t prim;
    dnnl_memory_t src, dst;
    dnnl_exec_arg_t args[4];
} DnnlCall;

static int dnnl_call_new(DnnlCall *c, const DnnlMatmul *mm, int m, const Data *d, char *why,
                         size_t why_size)
{
    memset(c, 0, sizeof *c);
    dnnl_memory_desc_t src_md, dst_md;
    dnnl_dims_t src_dims = {m, K}, dst_dims = {m, N};
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&src_md, 2, src_dims, dnnl_f32, dnnl_ab));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&dst_md, 2, dst_dims, dnnl_f32, dnnl_ab));
    DNNL_TRY(dnnl_memory_create(&c->src, &src_md, bench_dnnl_engine, d->x));
    DNNL_TRY(dnnl_memory_create(&c->dst, &dst_md, bench_dnnl_engine, d->z));
    c->prim = mm->prim;
    c->args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, c->src};
    c->args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, mm->weights};
    c->args[2] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, mm->bias};
    c->args[3] = (dnnl_exec_arg_t){DNNL_ARG_DST, c->dst};
    return 1;
}

static void dnnl_call_free(DnnlCall *c)
{
    if (c->src)
        dnnl_memory_destroy(c->src);
    if (c->dst)
        dnnl_memory_destroy(c->dst);
}

static void run_dnnl(void *ctx)
{
    DnnlCall *c = ctx;
    dnnl_primitive_execute(c->prim, bench_dnnl_stream, 4, c->args);
    dnnl_stream_wait(bench_dnnl_stream);
}

/* A oneDNN row: MM (NULL when it could not be built: WHY) executed at M;
 * FOR says what the primitive was created for. */
static void dnnl_row(Row *r, Impl impl, const DnnlMatmul *mm, const char *why, const Data *d,
                     int m, int threads, const char *for_what)
{
    char call_why[256];
    DnnlCall c;
    if (!mm) {
        r->state = ROW_FAILED;
        snprintf(r->note, sizeof r->note, "%s", why);
        return;
    }
    if (!dnnl_call_new(&c, mm, m, d, call_why, sizeof call_why)) {
        r->state = ROW_FAILED;
        snprintf(r->note, sizeof r->note, "%s", call_why);
    } else {
        snprintf(r->note, sizeof r->note, "%s, weights %s; created and reordered %s, untimed: %.1f ms",
                 mm->impl, mm->layout, for_what, mm->setup_ms);
        measure(r, impl, run_dnnl, &c, d, m, threads);
    }
    dnnl_call_free(&c);
}
#endif

/* ---- Dispatch overhead ---------------------------------------------------------- */

enum { CHECK_CALLS = 100000 };

typedef struct CheckLoop {
    volatile int64_t m;        /* read at every call: nothing is hoisted */
    int sink;
} CheckLoop;

static void run_check_loop(void *ctx)
{
    CheckLoop *c = ctx;
    int sum = 0;
    for (int i = 0; i < CHECK_CALLS; i++)
        sum += BENCH_RT_VARIANT(c->m);
    c->sink += sum;
}

typedef struct Dispatch {
    int64_t m[2];              /* the sizes timed: the run's least and largest */
    double check_ns[2];        /* mg_rt_variant, ns per call */
    int variant[2];            /* ... and the variant it picks */
    int erange_ok;             /* M = MIN - 1 and MAX + 1 return NAME_ERANGE, z untouched */
} Dispatch;

static void measure_dispatch(Dispatch *dp, const Data *d, int least, int largest)
{
    dp->m[0] = least;
    dp->m[1] = largest;
    for (int i = 0; i < 2; i++) {
        CheckLoop loop = {dp->m[i], 0};
        Timing t = bench_measure(run_check_loop, &loop, 1, d->min_time);
        dp->check_ns[i] = t.median / CHECK_CALLS * 1e9;
        dp->variant[i] = BENCH_RT_VARIANT(dp->m[i]);
        fprintf(stderr, "  %s(%lld): %.2f ns per call\n", "variant", (long long)dp->m[i],
                dp->check_ns[i]);
    }
    /* outside the range: NAME_ERANGE and nothing written */
    dp->erange_ok = 1;
    const int64_t outside[2] = {BENCH_RT_M_MIN - 1, (int64_t)BENCH_RT_M_MAX + 1};
    for (int i = 0; i < 2; i++) {
        size_t count = (size_t)d->max_m * N;
        for (size_t j = 0; j < count; j++)
            d->z[j] = 42.0f;
        int rc = dynamic_fn(outside[i], d->x, d->w, d->b, d->z);
        for (size_t j = 0; j < count && rc == BENCH_RT_ERANGE; j++)
            if (d->z[j] != 42.0f)
                rc = 0;
        dp->erange_ok &= rc == BENCH_RT_ERANGE && BENCH_RT_CHECK_SIZES(outside[i]) == BENCH_RT_ERANGE;
    }
}

/* ---- Tuning time, from the log ---------------------------------------------------- */

typedef enum TuningKind {
    TUNING_NONE,       /* another workload, machine or cache mode */
    TUNING_STATIC,     /* the program at one static M: the oracle's */
    TUNING_DYNAMIC,    /* the program with M at run time (a bucket) */
} TuningKind;

static const char *str_field(json_t *r, const char *key)
{
    const char *s = json_string_value(json_object_get(r, key));
    return s ? s : "";
}

static double num_field(json_t *r, const char *key)
{
    json_t *v = json_object_get(r, key);
    return json_is_number(v) ? json_number_value(v) : 0.0;
}

/* Which side record R counts for, and *M its static size; CPU is this
 * machine's model name.  Phase 5 decides how a dynamic record looks: for
 * now, one that carries a "bucket". */
static TuningKind tuning_kind(json_t *r, const char *cpu, int64_t *m)
{
    if (strcmp(str_field(r, "target"), "cpu") || strcmp(str_field(r, "cpu"), cpu) ||
        strcmp(str_field(r, "cache"), BENCH_RT_CACHE) || strcmp(str_field(r, "space_kind"), "auto"))
        return TUNING_NONE;
    json_t *dims = json_object_get(r, "dims");
    /* a bucket's record (tuner/log.c): M is its range and hint */
    if (json_is_object(json_object_get(dims, "M")))
        return TUNING_DYNAMIC;
    json_t *dm = json_object_get(dims, "M"), *dn = json_object_get(dims, "N");
    json_t *dk = json_object_get(dims, "K");
    if (json_object_size(dims) != 3 || !json_is_integer(dm) || !json_is_integer(dn) ||
        !json_is_integer(dk) || json_integer_value(dn) != N || json_integer_value(dk) != K)
        return TUNING_NONE;
    *m = json_integer_value(dm);
    return TUNING_STATIC;
}

/* The seconds the tuner recorded for record R: its build and its measurement. */
static double record_seconds(json_t *r)
{
    const char *status = str_field(r, "status");
    double secs = num_field(r, "build_s");
    if (!strcmp(status, "ok"))
        secs += num_field(r, "first_s") + num_field(r, "repeats") * num_field(r, "time_s");
    else if (!strcmp(status, "timeout"))
        secs += num_field(r, "limit_s");
    return secs;
}

typedef struct Tuning {
    int have_log;              /* the log could be read */
    double static_secs[NSIZES];
    int static_records[NSIZES];
    double dynamic_secs;
    int dynamic_records;
} Tuning;

/* This machine's model name, as /proc/cpuinfo (and texc's log) give it. */
static void cpu_model(char *buf, size_t size)
{
    snprintf(buf, size, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[1024];
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (colon && !strncmp(line, "model name", 10)) {
            char *value = colon + 1 + (colon[1] == ' ');
            value[strcspn(value, "\n")] = '\0';
            snprintf(buf, size, "%s", value);
            break;
        }
    }
    if (f)
        fclose(f);
}

static void read_tuning(Tuning *t, const char *cpu)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(BENCH_RT_LOG, "r");
    if (!f)
        return;
    t->have_log = 1;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *r = json_loads(line, 0, NULL);
        int64_t m = 0;
        TuningKind kind = json_is_object(r) ? tuning_kind(r, cpu, &m) : TUNING_NONE;
        if (kind == TUNING_DYNAMIC) {
            t->dynamic_secs += record_seconds(r);
            t->dynamic_records++;
        }
        for (int si = 0; kind == TUNING_STATIC && si < NSIZES; si++)
            if (sizes[si].m == m) {
                t->static_secs[si] += record_seconds(r);
                t->static_records[si]++;
            }
        json_decref(r);
    }
    free(line);
    fclose(f);
}

/* ---- The report ---------------------------------------------------------------------- */

typedef struct Report {
    int thread_counts[MAX_THREAD_COUNTS], nthread_counts;
    double min_time;
    char cpu[128];
    char load_before[64], load_after[64];
    char onednn[1024];
    double dynamic_prepack_ms;
    Dispatch dispatch;
    Tuning tuning;
} Report;

/* The faster oneDNN row of a size and thread count, or NULL when neither is OK. */
static const Row *dnnl_best(int si, int ti)
{
    const Row *rt = &rows[si][ti][IMPL_DNNL_RT], *per_m = &rows[si][ti][IMPL_DNNL_PER_M];
    if (is_ok(rt) && (!is_ok(per_m) || rt->timing.median <= per_m->timing.median))
        return rt;
    return is_ok(per_m) ? per_m : NULL;
}

/* A's speed over B's; 0 when either was not measured or mismatched. */
static double speed_ratio(const Row *a, const Row *b)
{
    return a && b && is_ok(a) && is_ok(b) ? b->timing.median / a->timing.median : 0.0;
}

static void print_ms(FILE *out, const Row *r)
{
    switch (r->state) {
    case ROW_OK: fprintf(out, " %.4f |", r->timing.median * 1e3); break;
    case ROW_MISMATCH: fprintf(out, " %.4f **MISMATCH** |", r->timing.median * 1e3); break;
    case ROW_ABSENT: fputs(" not found |", out); break;
    case ROW_FAILED: fputs(" FAILED |", out); break;
    case ROW_NO_RECORD: fputs(" no tuning record |", out); break;
    case ROW_UNSET: fputs(" — |", out); break;
    }
}

static void print_ratio(FILE *out, double ratio)
{
    if (ratio > 0.0)
        fprintf(out, " %.3f |", ratio);
    else
        fputs(" — |", out);
}

typedef double RatioFn(int si, int ti);

static double dynamic_vs_static(int si, int ti)
{
    return speed_ratio(&rows[si][ti][IMPL_DYNAMIC], &rows[si][ti][IMPL_STATIC]);
}

static double tuned_vs_oracle(int si, int ti)
{
    return speed_ratio(&rows[si][ti][IMPL_TUNED], &rows[si][ti][IMPL_ORACLE]);
}

static double tuned_vs_dnnl(int si, int ti)
{
    return speed_ratio(&rows[si][ti][IMPL_TUNED], dnnl_best(si, ti));
}

static double dynamic_vs_dnnl(int si, int ti)
{
    return speed_ratio(&rows[si][ti][IMPL_DYNAMIC], dnnl_best(si, ti));
}

static double dnnl_rt_vs_per_m(int si, int ti)
{
    return speed_ratio(&rows[si][ti][IMPL_DNNL_RT], &rows[si][ti][IMPL_DNNL_PER_M]);
}

/* Geomean and worst of RATIO over the sizes at thread count TI; how many
 * sizes had both rows (0: none). */
typedef struct Summary {
    int count;
    double geomean, worst;
    int worst_m;
    int contended;             /* a row it used ran below BENCH_CONTENDED */
} Summary;

static Summary summarize(RatioFn *ratio, int ti)
{
    Summary s = {0, 0.0, INFINITY, 0, 0};
    double log_sum = 0.0;
    for (int si = 0; si < NSIZES; si++) {
        double v = ratio(si, ti);
        if (v <= 0.0)
            continue;
        s.count++;
        log_sum += log(v);
        if (v < s.worst) {
            s.worst = v;
            s.worst_m = sizes[si].m;
        }
        for (int i = 0; i < NIMPLS; i++)
            s.contended |= is_measured(&rows[si][ti][i]) &&
                           rows[si][ti][i].timing.cpu_share < BENCH_CONTENDED;
    }
    if (s.count)
        s.geomean = exp(log_sum / s.count);
    return s;
}

static void print_size_table(FILE *out, const Report *rep, int ti)
{
    fprintf(out, "\n### %d thread%s\n\n", rep->thread_counts[ti], rep->thread_counts[ti] > 1 ? "s" : "");
    fputs("| M | dynamic ms | static ms | dynamic ÷ static | dynamic tuned ms | oracle ms | "
          "tuned ÷ oracle | oneDNN rt-M ms | oneDNN per-M ms | oneDNN best | dynamic ÷ best | "
          "tuned ÷ best | max rel err | cpu |\n"
          "|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|\n", out);
    for (int si = 0; si < NSIZES; si++) {
        const Row *r = rows[si][ti];
        fprintf(out, "| %d |", sizes[si].m);
        print_ms(out, &r[IMPL_DYNAMIC]);
        print_ms(out, &r[IMPL_STATIC]);
        print_ratio(out, dynamic_vs_static(si, ti));
        print_ms(out, &r[IMPL_TUNED]);
        print_ms(out, &r[IMPL_ORACLE]);
        print_ratio(out, tuned_vs_oracle(si, ti));
        print_ms(out, &r[IMPL_DNNL_RT]);
        print_ms(out, &r[IMPL_DNNL_PER_M]);
        const Row *best = dnnl_best(si, ti);
        fprintf(out, " %s |", !best ? "—" : best == &r[IMPL_DNNL_RT] ? "rt-M" : "per-M");
        print_ratio(out, dynamic_vs_dnnl(si, ti));
        print_ratio(out, tuned_vs_dnnl(si, ti));
        double worst_err = 0.0, least_cpu = 1.0;
        for (int i = 0; i < NIMPLS; i++)
            if (is_measured(&r[i])) {
                worst_err = fmax(worst_err, r[i].error);
                least_cpu = fmin(least_cpu, r[i].timing.cpu_share);
            }
        fprintf(out, " %.1e | %.0f%%%s |\n", worst_err, 100.0 * least_cpu,
                least_cpu < BENCH_CONTENDED ? " ⚠" : "");
    }
}

typedef enum Verdict { HOLDS, FAILS, UNJUDGED } Verdict;
static const char *const verdict_text[] = {"holds", "**does not hold**", "not judged"};

typedef struct Tally {
    int count[3];
} Tally;

/* One target line: WHAT (geomean or worst of SUMMARY) >= BOUND. */
static void target_line(FILE *out, Tally *tally, int threads, const char *comparison,
                        const Summary *s, int worst, double bound, const char *unjudged)
{
    Verdict v = UNJUDGED;
    char measured[160];
    if (s->count == NSIZES) {
        double value = worst ? s->worst : s->geomean;
        v = value >= bound ? HOLDS : FAILS;
        if (worst)
            snprintf(measured, sizeof measured, "%.3f (at M = %d)", value, s->worst_m);
        else
            snprintf(measured, sizeof measured, "%.3f", value);
    } else {
        snprintf(measured, sizeof measured, "%s (%d of %d sizes)", unjudged, s->count, NSIZES);
    }
    tally->count[v]++;
    fprintf(out, "| %d | %s, %s | ≥ %.2f | %s | %s%s |\n", threads, comparison,
            worst ? "worst" : "geomean", bound, measured, verdict_text[v],
            s->contended && v != UNJUDGED ? " ⚠" : "");
}

static void print_summary(FILE *out, const Report *rep)
{
    fputs("\n### Over the sizes, and issue #16's targets judged on this run\n\n"
          "Speed ratios (> 1: the first faster) over the sizes: geometric mean and the worst; a "
          "target is judged only when every size has both rows (⚠: a row it uses ran below 90% "
          "of its threads' CPU time).\n\n"
          "| thr | comparison | target | measured | verdict |\n|--:|---|--:|---|---|\n", out);
    Tally tally = {{0}};
    for (int ti = 0; ti < rep->nthread_counts; ti++) {
        int threads = rep->thread_counts[ti];
        Summary s = summarize(dynamic_vs_static, ti);
        target_line(out, &tally, threads, "dynamic ÷ static", &s, 0, 0.95, "not measured");
        target_line(out, &tally, threads, "dynamic ÷ static", &s, 1, 0.85, "not measured");
        s = summarize(tuned_vs_oracle, ti);
        target_line(out, &tally, threads, "dynamic tuned ÷ oracle", &s, 0, 0.97, "no tuning record");
        target_line(out, &tally, threads, "dynamic tuned ÷ oracle", &s, 1, 0.90, "no tuning record");
        s = summarize(tuned_vs_dnnl, ti);
        target_line(out, &tally, threads, "dynamic tuned ÷ oneDNN best", &s, 0, 1.0,
                    "no tuning record");
    }
    /* tuning time: once, not per thread count */
    const Tuning *t = &rep->tuning;
    double oracle_secs = 0.0;
    int oracle_sizes = 0;
    for (int si = 0; si < NSIZES; si++) {
        oracle_secs += t->static_secs[si];
        oracle_sizes += t->static_records[si] > 0;
    }
    Verdict v = UNJUDGED;
    char measured[192];
    if (t->dynamic_records && oracle_sizes == NSIZES) {
        v = t->dynamic_secs <= 0.25 * oracle_secs ? HOLDS : FAILS;
        snprintf(measured, sizeof measured, "%.0f s for the dynamic artifact, %.0f s for the oracle "
                 "(%.3f×)", t->dynamic_secs, oracle_secs, t->dynamic_secs / oracle_secs);
    } else {
        snprintf(measured, sizeof measured, "no tuning record (dynamic: %d records; oracle: records "
                 "for %d of %d sizes)", t->dynamic_records, oracle_sizes, NSIZES);
    }
    tally.count[v]++;
    fprintf(out, "| all | tuning time, dynamic ÷ oracle's sum | ≤ 0.25 | %s | %s |\n", measured,
            verdict_text[v]);
    fprintf(out, "\n**%d of %d targets hold**; %d do not hold; %d not judged.\n", tally.count[HOLDS],
            tally.count[HOLDS] + tally.count[FAILS] + tally.count[UNJUDGED], tally.count[FAILS],
            tally.count[UNJUDGED]);

    fputs("\nNot targets, for the record:\n\n| thr | comparison | geomean | worst |\n|--:|---|--:|---|\n",
          out);
    for (int ti = 0; ti < rep->nthread_counts; ti++) {
        struct { const char *what; RatioFn *fn; } extra[] = {
            {"dynamic ÷ oneDNN best", dynamic_vs_dnnl},
            {"oneDNN rt-M ÷ oneDNN per-M", dnnl_rt_vs_per_m},
        };
        for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
            Summary s = summarize(extra[i].fn, ti);
            if (s.count)
                fprintf(out, "| %d | %s | %.3f | %.3f (at M = %d)%s |\n", rep->thread_counts[ti],
                        extra[i].what, s.geomean, s.worst, s.worst_m,
                        s.count < NSIZES ? " (not every size)" : "");
            else
                fprintf(out, "| %d | %s | — | — |\n", rep->thread_counts[ti], extra[i].what);
        }
    }
}

static void print_notes(FILE *out)
{
    fputs("\nNotes by row (the first thread count's; per-M primitives and oracles per size):\n\n", out);
    const Row *first = rows[0][0];
    fprintf(out, "- dynamic: %s\n", first[IMPL_DYNAMIC].note);
    fprintf(out, "- dynamic tuned: %s\n", first[IMPL_TUNED].note);
    fprintf(out, "- oneDNN rt-M: %s\n", first[IMPL_DNNL_RT].note);
    for (int si = 0; si < NSIZES; si++)
        fprintf(out, "- M = %d: static: %s; oracle: %s; oneDNN per-M: %s\n", sizes[si].m,
                rows[si][0][IMPL_STATIC].note, rows[si][0][IMPL_ORACLE].note,
                rows[si][0][IMPL_DNNL_PER_M].note);
}

static void print_report(FILE *out, const Report *rep)
{
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    fputs("\n## Run-time sizes: one artifact for every M (issue #16)\n\n", out);
    fprintf(out, "matmul_gelu with `dim M in %d..%d = 512` (N = %d, K = %d, f32), texc's default "
                 "schedule (samples/matmul_gelu.te with its schedules stripped: "
                 "bench/gen-rt/matmul_gelu_rt.te), at %d sizes, against the static build of the "
                 "same file at each M (`-D M=m`) and oneDNN.  Written by `make bench` "
                 "(bench/bench_rtdims.c, whose header says what is measured and how).\n\n",
            BENCH_RT_M_MIN, BENCH_RT_M_MAX, N, K, NSIZES);
    fprintf(out, "- date: %s; machine: %s; load average (1, 5, 15 min) %s before, %s after\n", date,
            rep->cpu, rep->load_before, rep->load_after);
    fprintf(out, "- kernels: `%s`; builds (texc + the C compiler, wall): the dynamic artifact "
                 "%.2f s once; the %d static builds %.2f s in all\n",
            BENCH_KERNEL_CFLAGS, (double)BENCH_RT_BUILD_DYNAMIC_S, NSIZES,
            (double)BENCH_RT_BUILD_STATIC_S);
    fprintf(out, "- oneDNN: %s\n", rep->onednn);
    fprintf(out, "- method: bench_measure (measure.c): warm caches, >= 0.05 s warm-up, the median "
                 "of separately timed calls (>= %.2g s and >= 10 calls); dynamic and static, and "
                 "dynamic tuned and oracle, timed in turn (A B B A), each the faster of its two "
                 "medians; every texc row's w packed into a fresh buffer at each size; each row "
                 "checked against "
                 "naive.c's reference (max rel err <= %.0e); ratios are speeds (> 1: the first "
                 "faster); cpu: the least, over the line's rows, of the process's CPU time / (wall "
                 "× threads), ⚠ below %.0f%%\n",
            rep->min_time, BENCH_TOLERANCE, 100.0 * BENCH_CONTENDED);
    const Dispatch *dp = &rep->dispatch;
    fprintf(out, "- dispatch overhead: the whole of a call's dispatch, `mg_rt_variant(M)` (the size "
                 "checks, then the if-chain over the %d variants), in a tight loop (volatile M, the "
                 "call included): **%.1f ns** per call at M = %lld (variant %d), %.1f ns at M = %lld "
                 "(variant %d, the chain's last); M = %d and %d return MG_RT_ERANGE with z "
                 "untouched: %s\n",
            BENCH_RT_NVARIANTS, dp->check_ns[0], (long long)dp->m[0], dp->variant[0], dp->check_ns[1],
            (long long)dp->m[1], dp->variant[1], BENCH_RT_M_MIN - 1, BENCH_RT_M_MAX + 1,
            dp->erange_ok ? "yes" : "**NO**");
    const Tuning *t = &rep->tuning;
    double oracle_secs = 0.0;
    int oracle_records = 0;
    for (int si = 0; si < NSIZES; si++) {
        oracle_secs += t->static_secs[si];
        oracle_records += t->static_records[si];
    }
    fprintf(out, "- tuning: log %s (cache %s)%s; the tuner's recorded build + measurement seconds: "
                 "oracle %.1f s over %d records, dynamic artifact %.1f s over %d records\n",
            BENCH_RT_LOG, BENCH_RT_CACHE, t->have_log ? "" : ", not found", oracle_secs,
            oracle_records, t->dynamic_secs, t->dynamic_records);
    for (int ti = 0; ti < rep->nthread_counts; ti++)
        print_size_table(out, rep, ti);
    print_summary(out, rep);
    print_notes(out);
}

/* ---- main ------------------------------------------------------------------------------ */

static void usage(void)
{
    fputs("usage: bench_rtdims [--threads '1 2'] [--min-time S] [--out FILE.md]\n", stderr);
    exit(2);
}

static void set_threads(int threads)
{
    omp_set_num_threads(threads);
    if (omp_get_max_threads() != threads)
        bench_die("omp_set_num_threads(%d) left %d threads", threads, omp_get_max_threads());
}

/* The rows of one size at thread count TI. */
static void measure_size(const Report *rep, const Data *d, int si, int ti,
                         const DnnlMatmul *dnnl_rt, const char *dnnl_rt_why)
{
    const Size *s = &sizes[si];
    int threads = rep->thread_counts[ti];
    Row *r = rows[si][ti];

    snprintf(r[IMPL_DYNAMIC].note, sizeof r[IMPL_DYNAMIC].note,
             "w prepacked once for every M, untimed: %.2f ms", rep->dynamic_prepack_ms);
    /* the artifact's packing does not depend on M, but its buffer is
       packed again at each size, as each static kernel's is: a buffer
       kept for the whole run keeps one placement in memory and in the
       caches' sets, lucky or not, for every size */
    if (ti == 0) {
        BENCH_RT_DYNAMIC_PREPARE(d->w);
        if (tuned_prepare)
            tuned_prepare(d->w);
    }
    DynamicRun dyn = {dynamic_fn, s->m, d, 0};
    /* the static kernels pack w for their own M: once, at the first thread count */
    if (ti == 0)
        prepare_note(&r[IMPL_STATIC], s->static_prepare, d, "");
    else
        snprintf(r[IMPL_STATIC].note, sizeof r[IMPL_STATIC].note, "%s", rows[si][0][IMPL_STATIC].note);
    StaticRun st = {s->static_fn, d};
    measure_pair(&(Side){ &r[IMPL_DYNAMIC], IMPL_DYNAMIC, run_dynamic, &dyn },
                 &(Side){ &r[IMPL_STATIC], IMPL_STATIC, run_static, &st }, d, s->m, threads);
    if (dyn.failed) {
        r[IMPL_DYNAMIC].state = ROW_MISMATCH;
        snprintf(r[IMPL_DYNAMIC].note, sizeof r[IMPL_DYNAMIC].note, "a call returned nonzero");
    }

    DynamicRun tuned = {tuned_fn, s->m, d, 0};
    StaticRun oracle = {s->oracle, d};
    Side tuned_side = { &r[IMPL_TUNED], IMPL_TUNED, run_dynamic, &tuned };
    Side oracle_side = { &r[IMPL_ORACLE], IMPL_ORACLE, run_static, &oracle };
    if (tuned_fn) {
        snprintf(r[IMPL_TUNED].note, sizeof r[IMPL_TUNED].note, "%s", BENCH_RT_TUNED_NOTE);
    } else {
        r[IMPL_TUNED].state = ROW_NO_RECORD;
        snprintf(r[IMPL_TUNED].note, sizeof r[IMPL_TUNED].note, "%s", BENCH_RT_TUNED_NOTE);
    }
    if (s->oracle) {
        if (ti == 0)
            prepare_note(&r[IMPL_ORACLE], s->oracle_prepare, d, s->oracle_note);
        else
            snprintf(r[IMPL_ORACLE].note, sizeof r[IMPL_ORACLE].note, "%s",
                     rows[si][0][IMPL_ORACLE].note);
    } else {
        r[IMPL_ORACLE].state = ROW_NO_RECORD;
        snprintf(r[IMPL_ORACLE].note, sizeof r[IMPL_ORACLE].note, "%s", s->oracle_note);
    }
    if (tuned_fn && s->oracle)
        measure_pair(&tuned_side, &oracle_side, d, s->m, threads);
    else if (tuned_fn)
        measure_pair(&tuned_side, NULL, d, s->m, threads);
    else if (s->oracle)
        measure_pair(&oracle_side, NULL, d, s->m, threads);
    if (tuned.failed)
        r[IMPL_TUNED].state = ROW_MISMATCH;

#ifdef BENCH_HAVE_DNNL
    dnnl_row(&r[IMPL_DNNL_RT], IMPL_DNNL_RT, dnnl_rt, dnnl_rt_why, d, s->m, threads,
             "once for every M");
    DnnlMatmul per_m;
    char why[256];
    int ok = dnnl_matmul_new(&per_m, s->m, d, why, sizeof why);
    dnnl_row(&r[IMPL_DNNL_PER_M], IMPL_DNNL_PER_M, ok ? &per_m : NULL, why, d, s->m, threads,
             "for this M");
    dnnl_matmul_free(&per_m);
#else
    (void)dnnl_rt;
    (void)dnnl_rt_why;
    r[IMPL_DNNL_RT].state = r[IMPL_DNNL_PER_M].state = ROW_ABSENT;
    snprintf(r[IMPL_DNNL_RT].note, sizeof r[IMPL_DNNL_RT].note, "oneDNN not found by configure");
    snprintf(r[IMPL_DNNL_PER_M].note, sizeof r[IMPL_DNNL_PER_M].note, "oneDNN not found by configure");
#endif
}

int main(int argc, char **argv)
{
    static Report rep;
    rep.min_time = 0.3;
    const char *out_path = NULL, *threads_arg = "1 2";
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            usage();
        if (!strcmp(argv[i], "--threads"))
            threads_arg = argv[++i];
        else if (!strcmp(argv[i], "--min-time"))
            rep.min_time = atof(argv[++i]);
        else if (!strcmp(argv[i], "--out"))
            out_path = argv[++i];
        else
            usage();
    }
    for (const char *p = threads_arg; *p;) {
        char *end;
        long t = strtol(p, &end, 10);
        if (end == p)
            break;
        if (t < 1 || rep.nthread_counts == MAX_THREAD_COUNTS)
            bench_die("bad --threads '%s'", threads_arg);
        rep.thread_counts[rep.nthread_counts++] = (int)t;
        p = end;
    }
    if (rep.nthread_counts == 0 || NSIZES == 0)
        bench_die("no thread counts, or no sizes");
    cpu_model(rep.cpu, sizeof rep.cpu);
    bench_read_load(rep.load_before, sizeof rep.load_before);
    read_tuning(&rep.tuning, rep.cpu);

    /* the data, for the largest M; every M uses its first rows */
    Data d = {0};
    d.min_time = rep.min_time;
    int least = sizes[0].m;
    for (int si = 0; si < NSIZES; si++) {
        d.max_m = sizes[si].m > d.max_m ? sizes[si].m : d.max_m;
        least = sizes[si].m < least ? sizes[si].m : least;
    }
    size_t xs = (size_t)d.max_m * K, ws = (size_t)K * N, zs = (size_t)d.max_m * N;
    d.x = bench_xmalloc(sizeof *d.x * xs);
    d.w = bench_xmalloc(sizeof *d.w * ws);
    d.b = bench_xmalloc(sizeof *d.b * N);
    d.z = bench_xmalloc(sizeof *d.z * zs);
    d.ref = bench_xmalloc(sizeof *d.ref * zs);
    d.bias_dnnl = bench_xmalloc(sizeof *d.bias_dnnl * N);
    bench_fill_random(d.x, xs, 1);
    bench_fill_random(d.w, ws, 2);
    bench_fill_random(d.b, N, 3);
    for (int j = 0; j < N; j++)
        d.bias_dnnl[j] = d.b[j] / 0.125f;
    fprintf(stderr, "run-time sizes: the naive reference at M = %d...\n", d.max_m);
    bench_naive(d.max_m, N, K, d.x, d.w, d.b, d.ref);

#ifdef BENCH_HAVE_DNNL
    const dnnl_version_t *v = dnnl_version();
    if (dnnl_engine_create(&bench_dnnl_engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&bench_dnnl_stream, bench_dnnl_engine, dnnl_stream_default_flags) != dnnl_success)
        bench_die("oneDNN: no CPU engine");
    snprintf(rep.onednn, sizeof rep.onednn,
             "%d.%d.%d, CPU runtime %s, ISA %s; matmul primitive with bias, output scale 0.125 and "
             "an eltwise_gelu_erf post-op (as bench_matmul's onednn row), weights format any, "
             "reordered once per primitive outside the timed loop; two configurations: **rt-M**, one "
             "primitive for every M (src and dst M = DNNL_RUNTIME_DIM_VAL, plain row-major, since "
             "format any is not allowed with a run-time dim; memory objects of the actual M at "
             "each call), and **per-M**, a primitive created for each M (a framework's primitive "
             "cache); **oneDNN best** is the faster of the two at each M and thread count, and the "
             "ratios are against it",
             v->major, v->minor, v->patch, dnnl_runtime2str(v->cpu_runtime),
             dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa()));
#else
    snprintf(rep.onednn, sizeof rep.onednn, "not found by configure: its rows are skipped");
#endif

    rep.dynamic_prepack_ms = BENCH_RT_DYNAMIC_PREPARE(d.w) * 1e3;
    if (tuned_prepare)
        tuned_prepare(d.w);
    fprintf(stderr, "dispatch overhead...\n");
    set_threads(1);
    measure_dispatch(&rep.dispatch, &d, least, d.max_m);

    for (int ti = 0; ti < rep.nthread_counts; ti++) {
        set_threads(rep.thread_counts[ti]);
        const DnnlMatmul *dnnl_rt = NULL;
        char why[256] = "";
#ifdef BENCH_HAVE_DNNL
        DnnlMatmul rt;
        if (dnnl_matmul_new(&rt, DNNL_RUNTIME_DIM_VAL, &d, why, sizeof why))
            dnnl_rt = &rt;
        else
            fprintf(stderr, "  oneDNN rt-M: %s\n", why);
#endif
        for (int si = 0; si < NSIZES; si++)
            measure_size(&rep, &d, si, ti, dnnl_rt, why);
#ifdef BENCH_HAVE_DNNL
        if (dnnl_rt)
            dnnl_matmul_free(&rt);
#endif
    }

    bench_read_load(rep.load_after, sizeof rep.load_after);
    print_report(stdout, &rep);
    if (out_path) {
        FILE *f = fopen(out_path, "w");
        if (!f)
            bench_die("cannot write %s: %s", out_path, strerror(errno));
        print_report(f, &rep);
        if (fclose(f) != 0)
            bench_die("cannot write %s: %s", out_path, strerror(errno));
    }
    int bad = !rep.dispatch.erange_ok;
    for (int si = 0; si < NSIZES; si++)
        for (int ti = 0; ti < rep.nthread_counts; ti++)
            for (int i = 0; i < NIMPLS; i++)
                bad |= rows[si][ti][i].state == ROW_MISMATCH;
    if (bad) {
        fputs("bench_rtdims: *** some rows MISMATCH the naive reference, or a size outside the "
              "range was not refused (see the report) ***\n", stderr);
        return 1;
    }
    return 0;
}
