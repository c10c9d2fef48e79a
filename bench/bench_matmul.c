/* bench_matmul.c — make bench: texc's matmul_gelu kernel against its peers.
 *
 * The operation is samples/matmul_gelu.te, z = gelu(x @ w * 0.125 + b) in
 * f32, row-major, at the shapes bench/gen/kernels.h lists (BENCH_KERNELS,
 * written by gen_kernels.sh from the Makefile's BENCH_SHAPES).  The rows:
 *
 *   naive          a plain triple loop + erff GELU, -O2, one thread
 *                  (naive.c); it is also the reference every row is
 *                  checked against
 *   openblas       cblas_sgemm with alpha = 0.125 (cblas_sgemv at M = 1),
 *                  then one bias + GELU pass vectorized through libmvec,
 *                  in a process of its own (openblas_peer.c, openblas_row
 *                  below) on OpenBLAS's OpenMP build where configure found
 *                  it, OPENBLAS_CORETYPE=SkylakeX, under each OpenMP wait
 *                  policy, the faster kept
 *   onednn         one matmul primitive: bias, output scale 0.125 and an
 *                  eltwise_gelu_erf post-op; weights in the layout the
 *                  primitive asks for (format any), reordered once,
 *                  outside the timed loop
 *   onednn-plain   the same primitive created on the weights as given
 *                  (row-major ab): what a caller without a prepacking
 *                  step gets, the peer of texc-plain
 *   halide         the same computation in Halide, scheduled by Halide's
 *                  Adams2019 autoscheduler for the shape, once for each
 *                  thread count of the run as its parallelism, and
 *                  compiled for the host, at build time (halide_gen.cc;
 *                  bench_halide.cc calls it); the row runs each schedule
 *                  on its threads and keeps the fastest (halide_row)
 *   texc-sched     texc's kernel with the file's own schedule cpu
 *   texc-default   texc's kernel with texc's default schedule
 *   texc-plain     the default build's plain entry point NAME(x, w, b,
 *                  z) on w as given: it packs w at every call, or reads
 *                  it in place where that pays (issue #17, ask 5)
 *   texc-tuned     texc's kernel with the tuning log's winner for the
 *                  shape, where the log has a record that applies (the
 *                  first two are built without the log); otherwise the
 *                  row says "no tuning record" and why
 *
 * For the matrix-vector shapes (M = 1), which are bound by reading w, the
 * table also gives each row's share of the read bandwidth the machine
 * gets on a buffer of w's size (bench_bandwidth in peak.c): bytes of w /
 * the median call / that bandwidth.  The targets of issue #7 are judged
 * at the end, from the table's own numbers (targets_* below).  Then the
 * other operations (bench_ops.c) add a section each.
 *
 * Method.  Inputs are uniform in [-1, 1) from a fixed seed.  Caches are
 * warm: each measurement runs the kernel for >= 0.05 s first, then times
 * every call separately until both MIN_TIME seconds (0.3 by default) and
 * ten calls (three for calls over 1 s) have passed, and reports the
 * median and the interquartile range.  Before its first call a row's
 * output buffer is filled with NaN, and after its last call the output is
 * compared with the naive one: error = max|z - z_naive| / max|z_naive|,
 * a mismatch above 1e-4 (or any NaN) marks the row and makes the exit
 * status 1.  Thread counts are set with omp_set_num_threads (texc,
 * oneDNN's OpenMP runtime), halide_set_num_threads (Halide's own thread
 * pool) and, in the OpenBLAS peer's process, openblas_set_num_threads and
 * omp_set_num_threads, and read back.
 * % peak is of the FMA loop's one-thread peak (peak.c) times the row's
 * threads.  The machine may be shared: each row also reports
 * the CPU time the process got over the wall time its threads had (the
 * cpu column), and the best call beside the median.
 *
 * The report (a Markdown table, with the machine, versions and date
 * above it) goes to stdout and to --out; progress goes to stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "kernels.h"

#ifndef BENCH_KERNEL_CFLAGS
#define BENCH_KERNEL_CFLAGS "?"
#endif

extern char **environ;

enum { MAX_THREAD_COUNTS = 8, MAX_ROWS = 256 };
static const double TOLERANCE = BENCH_TOLERANCE;
static const double CONTENDED = BENCH_CONTENDED;

/* ---- Shapes and kernels ------------------------------------------------ */

typedef void KernelFn(const float *x, const float *w, const float *b, float *z);
/* Puts w in the layout the kernel reads (NAME_prepack), once, outside the
 * timed loop; the seconds it took, or -1 if the kernel reads w as it is. */
typedef double PrepareFn(const float *w);

typedef struct Shape {
    int m, k, n;               /* z is m x n, the reduction runs over k */
    KernelFn *texc_sched;      /* the file's schedule */
    PrepareFn *sched_prepare;
    KernelFn *texc_default;    /* texc's default schedule */
    PrepareFn *default_prepare;
    KernelFn *texc_tuned;      /* the tuning log's winner, or NULL */
    PrepareFn *tuned_prepare;
    const char *tuned_note;    /* texc's words about the log */
    KernelFn *texc_plain;      /* the default build's plain entry point,
                                  NAME(x, w, b, z), on w as given */
} Shape;

#define BENCH_SHAPE_ENTRY(M, K, N, SCHED, SPREP, DEFAULT, DPREP, TUNED, TPREP, NOTE, PLAIN) \
    {M, K, N, SCHED, SPREP, DEFAULT, DPREP, TUNED, TPREP, NOTE, PLAIN},
static const Shape shapes[] = {BENCH_KERNELS(BENCH_SHAPE_ENTRY)};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };

/* One call of a kernel on one problem. */
typedef struct Problem {
    int m, k, n;
    const float *x, *w, *b;
    float *z;
} Problem;

/* ---- The peers ----------------------------------------------------------- */

static void run_naive(void *ctx)
{
    const Problem *p = ctx;
    bench_naive(p->m, p->n, p->k, p->x, p->w, p->b, p->z);
}

typedef struct TexcRun {
    KernelFn *kernel;
    const Problem *problem;
} TexcRun;

static void run_texc(void *ctx)
{
    const TexcRun *t = ctx;
    t->kernel(t->problem->x, t->problem->w, t->problem->b, t->problem->z);
}

#ifdef BENCH_HAVE_DNNL
typedef struct DnnlRun {
    dnnl_primitive_t matmul;
    dnnl_memory_t src, weights, bias, dst;
    dnnl_exec_arg_t args[4];
    float *bias_buf;           /* the bias as oneDNN's semantics need it */
    char impl[64];             /* the implementation oneDNN chose */
    char weights_note[96];     /* the weights' layout: packed or as given */
} DnnlRun;

static void run_dnnl(void *ctx)
{
    DnnlRun *d = ctx;
    dnnl_primitive_execute(d->matmul, bench_dnnl_stream, 4, d->args);
    dnnl_stream_wait(bench_dnnl_stream);
}

/* Builds the primitive for P at the current thread count; with PLAIN, on
 * the weights as given (the primitive reads w row-major, no reorder
 * ahead of time); 0 and WHY on failure. */
static int dnnl_setup(DnnlRun *d, const Problem *p, int plain, char *why, size_t why_size)
{
    memset(d, 0, sizeof *d);
    BenchMatmulDescs md;
    dnnl_primitive_desc_t pd;
    if (!bench_dnnl_matmul_gelu(p->m, p->k, p->n, plain, &md, &pd, d->impl, sizeof d->impl, why,
                                why_size))
        return 0;
    dnnl_memory_desc_t src_md = md.src, user_weights_md = md.user_weights, bias_md = md.bias,
                       dst_md = md.dst;
    const float scale = 0.125f; /* the primitive's output scale (bench_dnnl_matmul_gelu) */
    DNNL_TRY(dnnl_primitive_create(&d->matmul, pd));

    d->bias_buf = bench_xmalloc(sizeof *d->bias_buf * p->n);
    for (int j = 0; j < p->n; j++)
        d->bias_buf[j] = p->b[j] / scale;
    DNNL_TRY(dnnl_memory_create(&d->src, &src_md, bench_dnnl_engine, (void *)p->x));
    DNNL_TRY(dnnl_memory_create(&d->bias, &bias_md, bench_dnnl_engine, d->bias_buf));
    DNNL_TRY(dnnl_memory_create(&d->dst, &dst_md, bench_dnnl_engine, p->z));
    char layout[48];
    if (!bench_dnnl_weights(pd, &user_weights_md, (void *)p->w, &d->weights, layout, sizeof layout,
                            why, why_size))
        return 0;
    snprintf(d->weights_note, sizeof d->weights_note, "weights %s%s",
             strcmp(layout, "as given (ab)") ? "pre-packed to " : "", layout);
    dnnl_primitive_desc_destroy(pd);
    d->args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, d->src};
    d->args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, d->weights};
    d->args[2] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, d->bias};
    d->args[3] = (dnnl_exec_arg_t){DNNL_ARG_DST, d->dst};
    return 1;
}

static void dnnl_teardown(DnnlRun *d)
{
    if (d->matmul)
        dnnl_primitive_destroy(d->matmul);
    dnnl_memory_t mems[] = {d->src, d->weights, d->bias, d->dst};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    free(d->bias_buf);
}
#endif

/* ---- Rows of the table --------------------------------------------------- */

typedef enum RowState {
    ROW_OK,          /* measured, output matches the reference */
    ROW_MISMATCH,    /* measured, output does not match */
    ROW_ABSENT,      /* the peer was not found by configure */
    ROW_FAILED,      /* the peer could not be set up (note says why) */
    ROW_NO_RECORD,   /* texc-tuned: the tuning log has no record for the shape */
} RowState;

typedef struct Row {
    const Shape *shape;
    int threads;
    const char *impl;          /* naive, openblas, onednn, halide, texc-sched, texc-default, texc-tuned */
    RowState state;
    Timing timing;
    double gflops;             /* at the median call */
    double cpu_gflops;         /* flops of all timed calls / the CPU time they took */
    double error;
    char note[320];
} Row;

static Row rows[MAX_ROWS];
static int nrows;

static Row *new_row(const Shape *s, int threads, const char *impl)
{
    if (nrows == MAX_ROWS)
        bench_die("too many rows");
    Row *r = &rows[nrows++];
    memset(r, 0, sizeof *r);
    r->shape = s;
    r->threads = threads;
    r->impl = impl;
    return r;
}

/* R's rates from its timing, and P's output checked against REF. */
static void finish_row(Row *r, const Problem *p, const float *ref)
{
    size_t count = (size_t)p->m * p->n;
    double gflop = 2.0 * p->m * p->n * p->k * 1e-9;
    r->gflops = gflop / r->timing.median;
    r->cpu_gflops = gflop * r->timing.reps / (r->timing.cpu_secs / r->threads);
    r->error = ref ? bench_rel_error(p->z, ref, count) : 0.0;
    r->state = r->error <= TOLERANCE ? ROW_OK : ROW_MISMATCH;
    fprintf(stderr, "  %-13s %2d thr %10.3f ms %9.2f GFLOP/s  err %.2e  cpu %3.0f%%%s\n", r->impl,
            r->threads, r->timing.median * 1e3, r->gflops, r->error, 100.0 * r->timing.cpu_share,
            r->state == ROW_MISMATCH ? "  *** MISMATCH ***" : "");
}

/* Times RUN on P and checks P's output against REF; fills R. */
static void measure_row(Row *r, RunFn *run, void *ctx, const Problem *p,
                        const float *ref, double min_time)
{
    bench_fill_nan(p->z, (size_t)p->m * p->n);
    r->timing = bench_measure(run, ctx, r->threads, min_time);
    finish_row(r, p, ref);
}

/* A texc row: w prepacked first where the kernel reads it packed (timed
 * once, reported in the row's note), then the timed calls. */
static void texc_row(Row *r, TexcRun *t, PrepareFn *prepare, const char *note, const Problem *p,
                     const float *ref, double min_time)
{
    double prep = prepare(p->w);
    if (prep >= 0)
        snprintf(r->note, sizeof r->note, "%s%sw prepacked once, untimed: %.3f ms", note,
                 note[0] ? "; " : "", prep * 1e3);
    else
        snprintf(r->note, sizeof r->note, "%s", note);
    measure_row(r, run_texc, t, p, ref, min_time);
}

static const Row *find_row(const Shape *s, int threads, const char *impl)
{
    for (int i = 0; i < nrows; i++)
        if (rows[i].shape == s && rows[i].threads == threads && !strcmp(rows[i].impl, impl))
            return &rows[i];
    return NULL;
}

/* A matrix-vector product: bound by reading w, judged against the bandwidth. */
static int is_gemv(const Shape *s)
{
    return s->m == 1;
}

/* The read bandwidth of a buffer of w's size, measured at one thread count. */
typedef struct Bandwidth {
    const Shape *shape;
    int threads;
    double gbps;
} Bandwidth;

enum { MAX_BANDWIDTHS = 64 };
static Bandwidth bandwidths[MAX_BANDWIDTHS];
static int nbandwidths;

/* Share of the read bandwidth of w that R got (bytes of w / median / the
 * bandwidth at R's threads); < 0 when not a GEMV shape or not measured. */
static double bandwidth_share(const Row *r)
{
    if (!is_gemv(r->shape) || (r->state != ROW_OK && r->state != ROW_MISMATCH))
        return -1.0;
    for (int i = 0; i < nbandwidths; i++)
        if (bandwidths[i].shape == r->shape && bandwidths[i].threads == r->threads) {
            double bytes = (double)r->shape->k * r->shape->n * sizeof(float);
            return bytes / r->timing.median * 1e-9 / bandwidths[i].gbps;
        }
    return -1.0;
}

/* ---- Facts about the machine and the tools ------------------------------ */

typedef struct Machine {
    char cpu[128];             /* model name from /proc/cpuinfo */
    int family, model;         /* cpu family, model */
    int logical_cpus;
    int avx512;                /* avx512f in the flags */
    long l1d, l2, l3;          /* cache sizes in bytes as sysconf reports them, <= 0: unknown */
    char os[160];              /* kernel release and Debian version */
} Machine;

static void read_machine(Machine *mc)
{
    memset(mc, 0, sizeof *mc);
    snprintf(mc->cpu, sizeof mc->cpu, "unknown");
    mc->logical_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    mc->l1d = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    mc->l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    mc->l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    struct utsname un;
    char debian[32] = "?";
    FILE *dv = fopen("/etc/debian_version", "r");
    if (dv) {
        if (fgets(debian, sizeof debian, dv))
            debian[strcspn(debian, "\n")] = '\0';
        fclose(dv);
    }
    snprintf(mc->os, sizeof mc->os, "Linux %s, Debian %s", uname(&un) == 0 ? un.release : "?", debian);
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[4096];
    int first = 1;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *value = colon + 1 + (colon[1] == ' ');
        value[strcspn(value, "\n")] = '\0';
        if (!strncmp(line, "processor", 9) && mc->family)
            first = 0;
        if (!first)
            continue;
        if (!strncmp(line, "model name", 10))
            snprintf(mc->cpu, sizeof mc->cpu, "%s", value);
        else if (!strncmp(line, "cpu family", 10))
            mc->family = atoi(value);
        else if (!strncmp(line, "model\t", 6))
            mc->model = atoi(value);
        else if (!strncmp(line, "flags", 5))
            mc->avx512 = strstr(value, " avx512f ") != NULL;
    }
    fclose(f);
}

/* The first line TEXC -V prints. */
static void texc_version(const char *texc, char *buf, size_t size)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' -V 2>&1", texc);
    snprintf(buf, size, "unknown");
    FILE *f = popen(cmd, "r");
    if (!f)
        return;
    if (fgets(buf, (int)size, f))
        buf[strcspn(buf, "\n")] = '\0';
    pclose(f);
}

/* Wall time of one `TEXC TE -o DIR/x`, process start to exit, and the CPU
 * time (user + system) it used in *CPU; < 0 on failure. */
static double time_texc_once(const char *texc, const char *te, const char *prefix, double *cpu)
{
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    char *argv[] = {(char *)texc, (char *)te, "-o", (char *)prefix, NULL};
    double start = bench_now();
    pid_t pid;
    int status;
    struct rusage ru;
    int err = posix_spawn(&pid, texc, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (err != 0 || wait4(pid, &status, 0, &ru) != pid)
        return -1.0;
    double secs = bench_now() - start;
    *cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? secs : -1.0;
}

typedef struct CompileTime {
    double median_ms, min_ms, max_ms;  /* wall */
    double cpu_median_ms;              /* user + system */
    int runs;
} CompileTime;

static int compile_time(const char *texc, const char *te, CompileTime *ct)
{
    char dir[] = "/tmp/texc-bench-XXXXXX";
    if (!mkdtemp(dir))
        return 0;
    char prefix[64], path[80];
    snprintf(prefix, sizeof prefix, "%s/x", dir);
    enum { RUNS = 10 };
    double ms[RUNS], cpu_ms[RUNS], cpu;
    int ok = time_texc_once(texc, te, prefix, &cpu) >= 0.0; /* warm-up: page cache */
    for (int i = 0; ok && i < RUNS; i++) {
        ms[i] = time_texc_once(texc, te, prefix, &cpu) * 1e3;
        cpu_ms[i] = cpu * 1e3;
        ok = ms[i] >= 0.0;
    }
    snprintf(path, sizeof path, "%s.c", prefix);
    unlink(path);
    snprintf(path, sizeof path, "%s.h", prefix);
    unlink(path);
    rmdir(dir);
    if (!ok)
        return 0;
    qsort(ms, RUNS, sizeof ms[0], bench_cmp_double);
    qsort(cpu_ms, RUNS, sizeof cpu_ms[0], bench_cmp_double);
    *ct = (CompileTime){bench_percentile(ms, RUNS, 0.5), ms[0], ms[RUNS - 1],
                        bench_percentile(cpu_ms, RUNS, 0.5), RUNS};
    return 1;
}

/* ---- The report ---------------------------------------------------------- */

typedef struct Report {
    Machine machine;
    char load_before[64], load_after[64];  /* /proc/loadavg around the run */
    double busy_before, busy_after;        /* share of the CPUs others used, < 0: unknown */
    char texc_version[128];
    CompileTime compile;
    int have_compile;
    int thread_counts[MAX_THREAD_COUNTS], nthread_counts;
    double peak_core;                /* FMA peak of one thread: one core */
    double peak[MAX_THREAD_COUNTS];  /* FMA loop measured with thread_counts[i] threads */
    double min_time;
    char openblas[512];              /* what was found, or "not found" */
    char onednn[256];
    char halide[1024];
    const char *asm_file;
} Report;

/* The peak of THREADS cores: the per-core peak times THREADS. */
static double peak_for(const Report *rep, int threads)
{
    return rep->peak_core * threads;
}

static void print_ratio(FILE *out, const Row *texc, const Row *r)
{
    if (texc && texc->state == ROW_OK && r->state == ROW_OK)
        fprintf(out, " %.3g |", texc->gflops / r->gflops);
    else
        fputs(" — |", out);
}

/* ---- The targets of issue #7 ------------------------------------------------
 *
 * "texc tuned" is the texc-tuned row where the tuning log had a record for
 * the shape, else texc-sched (the file's schedule: what a build without a
 * log gets) stands in for it, and the summary says so.  The targets:
 *   every shape but GEMV: tuned >= 1.0x oneDNN, >= 1.2x OpenBLAS + GELU pass,
 *     >= 70% of peak; texc-default >= 40% of peak
 *   GEMV (M = 1): tuned >= 90% of w's read bandwidth, >= 1.0x oneDNN
 *   every shape: tuned >= 3x Halide scheduled by its Adams2019 autoscheduler
 */

typedef enum Verdict {
    HOLDS,          /* the target holds in this run */
    FAILS,          /* it does not */
    UNJUDGED,       /* a row it needs was not measured, or mismatched */
} Verdict;

static const char *const verdict_text[] = {"holds", "**does not hold**", "not judged"};

static const Row *tuned_row(const Shape *s, int threads)
{
    const Row *t = find_row(s, threads, "texc-tuned");
    return t && t->state != ROW_NO_RECORD ? t : find_row(s, threads, "texc-sched");
}

static int is_measured(const Row *r)
{
    return r && (r->state == ROW_OK || r->state == ROW_MISMATCH);
}

/* The bound the "target" column holds R to: its value and the bound in
 * percent, and what they are a percentage of; 0 when no target is R's. */
static int row_target(const Report *rep, const Row *r, double *value, double *bound,
                      const char **of)
{
    if (!is_measured(r))
        return 0;
    if (r == tuned_row(r->shape, r->threads)) {
        if (is_gemv(r->shape)) {
            *value = 100.0 * bandwidth_share(r);
            *bound = 90.0;
            *of = "bw";
            return *value >= 0.0;
        }
        *bound = 70.0;
    } else if (!strcmp(r->impl, "texc-default") && !is_gemv(r->shape)) {
        *bound = 40.0;
    } else {
        return 0;
    }
    *value = 100.0 * r->gflops / peak_for(rep, r->threads);
    *of = "peak";
    return 1;
}

static Verdict verdict(const Row *r, double value, double bound)
{
    if (!r || r->state != ROW_OK)
        return UNJUDGED;
    return value >= bound ? HOLDS : FAILS;
}

typedef struct Tally {
    int count[3];  /* by Verdict */
} Tally;

/* One line of the summary: WHO's TARGET, the value measured, the verdict. */
static void target_line(FILE *out, Tally *tally, const Shape *s, int threads, const char *who,
                        const char *target, const char *measured, Verdict v, int contended)
{
    tally->count[v]++;
    fprintf(out, "| %d×%d×%d | %d | %s %s | %s | %s%s |\n", s->m, s->k, s->n, threads, who, target,
            measured, verdict_text[v], contended && v != UNJUDGED ? " ⚠" : "");
}

static int contended_row(const Row *r)
{
    return is_measured(r) && r->timing.cpu_share < CONTENDED;
}

/* TEXC's speed over PEER's against BOUND (x). */
static void ratio_line(FILE *out, Tally *tally, const Shape *s, int threads, const char *who,
                       const Row *texc, const Row *peer, const char *peer_name, double bound)
{
    char target[96], measured[64];
    snprintf(target, sizeof target, "≥ %.1f× %s", bound, peer_name);
    Verdict v = UNJUDGED;
    if (texc && peer && texc->state == ROW_OK && peer->state == ROW_OK) {
        double ratio = texc->gflops / peer->gflops;
        snprintf(measured, sizeof measured, "%.3g× (%.1f vs %.1f GFLOP/s)", ratio, texc->gflops,
                 peer->gflops);
        v = ratio >= bound ? HOLDS : FAILS;
    } else {
        snprintf(measured, sizeof measured, "%s not measured", !peer || peer->state != ROW_OK
                                                                   ? peer_name : "texc");
    }
    target_line(out, tally, s, threads, who, target, measured, v,
                contended_row(texc) || contended_row(peer));
}

static void percent_line(FILE *out, Tally *tally, const Report *rep, const Shape *s, int threads,
                         const char *who, const Row *r)
{
    double value, bound;
    const char *of;
    char target[64], measured[64] = "not measured";
    Verdict v = UNJUDGED;
    if (row_target(rep, r, &value, &bound, &of)) {
        snprintf(measured, sizeof measured, "%.1f%%", value);
        v = verdict(r, value, bound);
    } else {
        bound = is_gemv(s) ? 90.0 : !strcmp(who, "texc-default") ? 40.0 : 70.0;
        of = is_gemv(s) ? "bw" : "peak";
    }
    snprintf(target, sizeof target, "≥ %.0f%% of %s", bound,
             !strcmp(of, "bw") ? "w's read bandwidth" : "FMA peak");
    target_line(out, tally, s, threads, who, target, measured, v, contended_row(r));
}

static void print_targets(FILE *out, const Report *rep)
{
    fputs("\n## Targets of issue #7, judged on this run\n\n"
          "\"texc tuned\" is the texc-tuned row where the tuning log had a record for the shape; "
          "where it had none, texc-sched (the file's schedule, what a build without a log gets) "
          "stands in and the line says so.  ⚠: a row it compares ran below its threads' CPU time "
          "(the machine was loaded: the verdict may understate texc or its peer).\n\n"
          "| M×K×N | thr | target | measured | verdict |\n|---|--:|---|---|---|\n", out);
    Tally tally = {{0}};
    for (int si = 0; si < NSHAPES; si++) {
        const Shape *s = &shapes[si];
        for (int ti = 0; ti < rep->nthread_counts; ti++) {
            int threads = rep->thread_counts[ti];
            const Row *tuned = tuned_row(s, threads);
            const char *who = tuned && !strcmp(tuned->impl, "texc-tuned")
                                  ? "texc-tuned" : "texc-sched (no tuning record)";
            const Row *onednn = find_row(s, threads, "onednn");
            const Row *halide = find_row(s, threads, "halide");
            if (is_gemv(s)) {
                percent_line(out, &tally, rep, s, threads, who, tuned);
                ratio_line(out, &tally, s, threads, who, tuned, onednn, "oneDNN", 1.0);
                ratio_line(out, &tally, s, threads, "texc-plain", find_row(s, threads, "texc-plain"),
                           find_row(s, threads, "onednn-plain"), "oneDNN on plain weights", 1.0);
                ratio_line(out, &tally, s, threads, who, tuned, halide, "Halide Adams2019", 3.0);
                continue;
            }
            ratio_line(out, &tally, s, threads, who, tuned, onednn, "oneDNN", 1.0);
            ratio_line(out, &tally, s, threads, "texc-plain", find_row(s, threads, "texc-plain"),
                       find_row(s, threads, "onednn-plain"), "oneDNN on plain weights", 1.0);
            ratio_line(out, &tally, s, threads, who, tuned, find_row(s, threads, "openblas"),
                       "OpenBLAS + GELU", 1.2);
            ratio_line(out, &tally, s, threads, who, tuned, halide, "Halide Adams2019", 3.0);
            percent_line(out, &tally, rep, s, threads, who, tuned);
            percent_line(out, &tally, rep, s, threads, "texc-default",
                         find_row(s, threads, "texc-default"));
        }
    }
    fprintf(out, "\n**%d of %d targets hold**; %d do not hold; %d not judged.\n",
            tally.count[HOLDS], tally.count[HOLDS] + tally.count[FAILS] + tally.count[UNJUDGED],
            tally.count[FAILS], tally.count[UNJUDGED]);
}

static void print_table(FILE *out, const Report *rep)
{
    fputs("| M×K×N | thr | impl | median ms | IQR ms | GFLOP/s | best GFLOP/s | GFLOP/s per CPU-s | % peak | % bw | target | sched ÷ this | default ÷ this | tuned ÷ this | max rel err | check | cpu | notes |\n"
          "|---|--:|---|--:|---|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|---|--:|---|\n", out);
    for (int i = 0; i < nrows; i++) {
        const Row *r = &rows[i];
        const Shape *s = r->shape;
        fprintf(out, "| %d×%d×%d | %d | %s |", s->m, s->k, s->n, r->threads, r->impl);
        if (!is_measured(r)) {
            fprintf(out, " — | — | — | — | — | — | — | — | — | — | — | — | %s | — | %s |\n",
                    r->state == ROW_ABSENT ? "not found"
                    : r->state == ROW_NO_RECORD ? "no tuning record" : "FAILED", r->note);
            continue;
        }
        double peak = peak_for(rep, r->threads);
        fprintf(out, " %.3f | %.3f–%.3f | %.1f | %.1f | %.1f | %.1f |", r->timing.median * 1e3,
                r->timing.p25 * 1e3, r->timing.p75 * 1e3, r->gflops,
                r->gflops * r->timing.median / r->timing.best, r->cpu_gflops,
                peak > 0.0 ? 100.0 * r->gflops / peak : 0.0);
        double share = bandwidth_share(r), value, bound;
        const char *of;
        if (share >= 0.0)
            fprintf(out, " %.1f |", 100.0 * share);
        else
            fputs(" — |", out);
        if (row_target(rep, r, &value, &bound, &of))
            fprintf(out, " ≥ %.0f%% %s: %s |", bound, of, verdict_text[verdict(r, value, bound)]);
        else
            fputs(" — |", out);
        print_ratio(out, find_row(s, r->threads, "texc-sched"), r);
        print_ratio(out, find_row(s, r->threads, "texc-default"), r);
        print_ratio(out, find_row(s, r->threads, "texc-tuned"), r);
        fprintf(out, " %.1e | %s | %.0f%%%s | %s%s%d reps |\n", r->error,
                r->state == ROW_OK ? "ok" : "**MISMATCH**", 100.0 * r->timing.cpu_share,
                r->timing.cpu_share < CONTENDED ? " ⚠" : "", r->note, r->note[0] ? ", " : "",
                r->timing.reps);
    }
}

static void print_report(FILE *out, const Report *rep)
{
    const Machine *mc = &rep->machine;
    char date[64];
    time_t t = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&t));

    fputs("# texc benchmark\n\n", out);
    fputs("matmul_gelu first: z = gelu(x @ w * 0.125 + b), f32, row-major (samples/matmul_gelu.te); "
          "GFLOP/s counts 2·M·N·K flops.  Then the targets of issue #7 judged on this run, then "
          "batched matmul, conv2d, softmax and layer norm.  Written by `make bench` "
          "(bench/bench_matmul.c, bench/bench_ops.c).\n\n", out);
    fprintf(out, "- date: %s\n", date);
    fprintf(out, "- machine: %s (cpu family %d, model %d), %d logical CPUs, AVX-512F %s; "
                 "caches as sysconf reports them (a virtual machine may report the host's): "
                 "L1d %ld KiB, L2 %ld KiB, L3 %ld KiB; %s\n",
            mc->cpu, mc->family, mc->model, mc->logical_cpus, mc->avx512 ? "yes" : "no",
            mc->l1d / 1024, mc->l2 / 1024, mc->l3 / 1024, mc->os);
    fprintf(out, "- other load: load average (1, 5, 15 min) %s before the run, %s after; "
                 "CPU time used by other processes in a 1 s sample: %.0f%% before, %.0f%% after",
            rep->load_before, rep->load_after, 100.0 * rep->busy_before, 100.0 * rep->busy_after);
    int contended, mismatched;
    int measured = bench_ops_count(&contended, &mismatched);
    for (int i = 0; i < nrows; i++)
        if (is_measured(&rows[i])) {
            measured++;
            contended += rows[i].timing.cpu_share < CONTENDED;
        }
    if (contended)
        fprintf(out, "; **%d of %d rows ran below %.0f%% of their threads' CPU time (⚠): "
                     "their numbers understate the code**", contended, measured, 100.0 * CONTENDED);
    fputs("\n", out);
#if defined(__clang__)
    fprintf(out, "- compiler: clang %s", __clang_version__);
#elif defined(__GNUC__)
    fprintf(out, "- compiler: gcc %s", __VERSION__);
#else
    fputs("- compiler: unknown", out);
#endif
    fprintf(out, "; texc kernels, peers' glue and FMA loop: `%s`; naive: `-O2`\n", BENCH_KERNEL_CFLAGS);
    fprintf(out, "- texc: %s; compile time of matmul_gelu.te (`texc samples/matmul_gelu.te -o DIR/x`, "
                 "process start to exit, parse to written .c): ", rep->texc_version);
    if (rep->have_compile)
        fprintf(out, "**median %.1f ms** wall of %d runs (min %.1f, max %.1f); "
                     "median CPU time (user + system) %.1f ms\n", rep->compile.median_ms,
                rep->compile.runs, rep->compile.min_ms, rep->compile.max_ms,
                rep->compile.cpu_median_ms);
    else
        fputs("could not be measured\n", out);
    fprintf(out, "- FMA peak (%s, 16 independent accumulators, flops per thread CPU-second, "
                 "best of 20 runs of >= 20 ms): **%.1f GFLOP/s per core**; %% peak is of that "
                 "times the row's threads.  Per core with every thread running at once:",
            bench_fma_isa, rep->peak_core);
    for (int i = 0; i < rep->nthread_counts; i++)
        if (rep->thread_counts[i] > 1)
            fprintf(out, " %d threads %.1f GFLOP/s (%.0f%%)", rep->thread_counts[i], rep->peak[i],
                    100.0 * rep->peak[i] / rep->peak_core);
    fputs(" (below 100%: the virtual CPUs share a physical core's FMA units)\n", out);
    for (int i = 0; i < nbandwidths; i++) {
        const Bandwidth *bw = &bandwidths[i];
        if (i == 0 || bw->shape != bandwidths[i - 1].shape)
            fprintf(out, "%s- read bandwidth of a buffer of w's size at %d×%d×%d (%.2f MB; a vectorized "
                         "read-sum loop, 8 independent sums, bench_bandwidth in peak.c, bytes per "
                         "thread CPU-second of the slowest thread, best of 20 runs of >= 20 ms):",
                    i ? "\n" : "", bw->shape->m, bw->shape->k, bw->shape->n,
                    (double)bw->shape->k * bw->shape->n * sizeof(float) * 1e-6);
        fprintf(out, " %d thr **%.1f GB/s**", bw->threads, bw->gbps);
    }
    if (nbandwidths)
        fputs("; % bw = bytes of w / the median call / the bandwidth at the row's threads\n", out);
    fprintf(out, "- OpenBLAS: %s\n", rep->openblas);
    fprintf(out, "- oneDNN: %s\n", rep->onednn);
    fprintf(out, "- Halide: %s\n", rep->halide);
    fprintf(out, "- method: inputs uniform in [-1, 1), fixed seed; warm caches; >= 0.05 s warm-up, "
                 "then the median of separately timed calls (>= %.2g s and >= 10 calls; >= 3 for calls over 1 s); "
                 "IQR = 25th–75th percentile; GFLOP/s is at the median, best GFLOP/s at the fastest call, "
                 "GFLOP/s per CPU-s = all timed calls' flops / (the process's CPU time / threads), "
                 "an estimate of the speed when not preempted (idle OpenMP threads spinning count as busy); threads set with omp_set_num_threads, "
                 "halide_set_num_threads and (in the OpenBLAS peer's process) openblas_set_num_threads, "
                 "each read back (OMP_NUM_THREADS and HL_NUM_THREADS hold the maximum); "
                 "naive runs on one thread only\n", rep->min_time);
    fprintf(out, "- check: every row's output against naive's, max|z − z_naive| / max|z_naive| <= %.0e; "
                 "%% peak is of the per-core FMA peak times the row's threads; "
                 "\"sched ÷ this\", \"default ÷ this\" and \"tuned ÷ this\" are texc's GFLOP/s over the row's (> 1: texc faster); "
                 "target: the row's %% peak (or %% bw) target of issue #7, holds or not (see the targets below); "
                 "cpu = the process's CPU time / (wall time × the row's threads) over the timed calls, "
                 "⚠ below %.0f%%: the row's threads were not all running (other load on the machine, "
                 "or a kernel with fewer parallel iterations than threads)\n\n",
            TOLERANCE, 100.0 * CONTENDED);
    print_table(out, rep);

    if (rep->asm_file) {
        fputs("\nAssembly check (bench/asm_check.sh: objdump -d of each texc kernel object, "
              "the kernel function and its outlined OpenMP bodies):\n\n", out);
        FILE *f = fopen(rep->asm_file, "r");
        char line[512];
        while (f && fgets(line, sizeof line, f))
            fprintf(out, "    %s", line);
        if (f)
            fclose(f);
        else
            fprintf(out, "    (%s could not be read)\n", rep->asm_file);
    }
    int mismatches = 0;
    for (int i = 0; i < nrows; i++)
        mismatches += rows[i].state == ROW_MISMATCH;
    if (mismatches) {
        fprintf(out, "\n**%d row%s MISMATCH the naive reference:**\n", mismatches, mismatches > 1 ? "s" : "");
        for (int i = 0; i < nrows; i++)
            if (rows[i].state == ROW_MISMATCH)
                fprintf(out, "- %s at %d×%d×%d, %d threads: max rel err %.3e\n", rows[i].impl,
                        rows[i].shape->m, rows[i].shape->k, rows[i].shape->n, rows[i].threads,
                        rows[i].error);
    }
    print_targets(out, rep);
    bench_ops_print(out);
}

/* ---- The openblas row ---------------------------------------------------- */

/* The inputs' seeds (bench_fill_random), passed to the OpenBLAS peer too. */
enum { SEED_X = 1, SEED_W = 2, SEED_B = 3 };

/* The openblas row: bench/openblas_peer (openblas_peer.c) run on P's shape
 * and the row's threads, in its own process so that its OpenBLAS build's
 * OpenMP runtime and these variables are its alone:
 * OPENBLAS_CORETYPE=SkylakeX (OpenBLAS 0.3.21 takes this CPU for Haswell,
 * AVX2 kernels at half the speed) and OMP_WAIT_POLICY, once PASSIVE and
 * once ACTIVE, the faster kept and both medians in the note (a peer gets
 * its best configuration).  Its output is checked here against REF.  A
 * run that mismatches becomes the row, so that a wrong build cannot hide. */
static void openblas_row(Row *r, Report *rep, const char *peer, const Problem *p, const float *ref)
{
    static const char *const policies[] = {"PASSIVE", "ACTIVE"};
    Row best = *r;
    best.state = ROW_FAILED;
    char times[96] = "", config[sizeof rep->openblas] = "";
    for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++) {
        char out[] = "/tmp/texc-openblas-XXXXXX", cmd[1024], line[512];
        int fd = mkstemp(out);
        if (fd < 0)
            bench_die("mkstemp: %s", strerror(errno));
        close(fd);
        snprintf(cmd, sizeof cmd,
                 "env OPENBLAS_CORETYPE=SkylakeX OMP_WAIT_POLICY=%s OMP_NUM_THREADS=%d "
                 "OPENBLAS_NUM_THREADS=%d '%s' %d %d %d %d %.9g %d %d %d '%s'",
                 policies[i], r->threads, r->threads, peer, p->m, p->k, p->n, r->threads,
                 rep->min_time, SEED_X, SEED_W, SEED_B, out);
        FILE *f = popen(cmd, "r");
        Row candidate = *r;
        int got = 0;
        while (f && fgets(line, sizeof line, f)) {
            Timing *t = &candidate.timing;
            if (sscanf(line, "timing %lf %lf %lf %lf %d %lf %lf", &t->median, &t->p25, &t->p75,
                       &t->best, &t->reps, &t->cpu_secs, &t->cpu_share) == 7)
                got = 1;
            else if (!strncmp(line, "config ", 7))
                snprintf(config, sizeof config, "%.*s", (int)strcspn(line + 7, "\n"), line + 7);
        }
        int status = f ? pclose(f) : -1;
        size_t count = (size_t)p->m * p->n;
        FILE *zf = got && status == 0 ? fopen(out, "rb") : NULL;
        bench_fill_nan(p->z, count);
        int read_all = zf && fread(p->z, sizeof *p->z, count, zf) == count;
        if (zf)
            fclose(zf);
        unlink(out);
        if (!read_all) {
            r->state = ROW_FAILED;
            snprintf(r->note, sizeof r->note, "bench/openblas_peer failed (OMP_WAIT_POLICY=%s): "
                     "see the messages above the report", policies[i]);
            fprintf(stderr, "  openblas: %s\n", r->note);
            return;
        }
        fprintf(stderr, "  openblas: OMP_WAIT_POLICY=%s\n", policies[i]);
        finish_row(&candidate, p, ref);
        snprintf(candidate.note, sizeof candidate.note, "OMP_WAIT_POLICY=%s", policies[i]);
        size_t used = strlen(times);
        snprintf(times + used, sizeof times - used, "%s%s %.3f ms", i ? ", " : "", policies[i],
                 candidate.timing.median * 1e3);
        if (best.state == ROW_MISMATCH)
            continue;
        if (candidate.state == ROW_MISMATCH || best.state == ROW_FAILED ||
            candidate.timing.median < best.timing.median)
            best = candidate;
    }
    *r = best;
    char note[sizeof r->note];
    snprintf(note, sizeof note, "own process; %s; %s + bias/GELU pass through libmvec "
             "(_ZGVeN16v_erff); OPENBLAS_CORETYPE=SkylakeX, %s (median %s); "
             "openblas_set_num_threads(%d)", config, p->m == 1 ? "sgemv" : "sgemm", best.note,
             times, r->threads);
    snprintf(r->note, sizeof r->note, "%s", note);
    snprintf(rep->openblas, sizeof rep->openblas,
             "found — %s, run by bench/openblas_peer in its own process (the OpenMP build where "
             "configure found it), with OPENBLAS_CORETYPE=SkylakeX, under OMP_WAIT_POLICY PASSIVE "
             "and ACTIVE (the faster kept); sgemm, or sgemv at M = 1, then a bias + GELU pass "
             "vectorized through glibc's libmvec (bench/gelu_mvec.c, -ffast-math: _ZGVeN16v_erff)",
             config);
}

/* ---- The halide row ------------------------------------------------------ */

#ifdef BENCH_HAVE_HALIDE
/* The halide row: each pipeline Adams2019 scheduled for the shape (one per
 * parallelism, the run's thread counts), measured on the row's threads,
 * the fastest kept and the others' times in the note.  Not only the one
 * for the row's count: at parallelism 1 Adams2019 hardly searches (its
 * passes end in a millisecond with a register tile and no cache tiling),
 * and its parallelism-2 schedule runs 2-3x faster on one thread at the
 * larger shapes; a peer gets its best configuration.  A candidate that
 * mismatches becomes the row, so that a wrong build cannot hide. */
static void halide_row(Row *r, const Report *rep, const Problem *p, const float *ref)
{
    Row best = *r;
    char times[160] = "";
    best.state = ROW_FAILED;
    for (int i = 0; i < rep->nthread_counts; i++) {
        int parallelism = rep->thread_counts[i];
        char why[256];
        HalideRun *h = bench_halide_new(p->m, p->k, p->n, parallelism, p->x, p->w, p->b, p->z,
                                        why, sizeof why);
        if (!h) {
            r->state = ROW_FAILED;
            snprintf(r->note, sizeof r->note, "%s", why);
            fprintf(stderr, "  halide: %s\n", why);
            return;
        }
        Row candidate = *r;
        fprintf(stderr, "  halide: Adams2019's schedule for parallelism %d\n", parallelism);
        measure_row(&candidate, bench_halide_run, h, p, ref, rep->min_time);
        snprintf(candidate.note, sizeof candidate.note, "Adams2019 for parallelism %d: %s",
                 parallelism, bench_halide_note(h));
        bench_halide_free(h);
        size_t used = strlen(times);
        snprintf(times + used, sizeof times - used, "%s%d: %.3f ms", i ? ", " : "", parallelism,
                 candidate.timing.median * 1e3);
        if (best.state == ROW_MISMATCH)
            continue;
        if (candidate.state == ROW_MISMATCH || best.state == ROW_FAILED ||
            candidate.timing.median < best.timing.median)
            best = candidate;
    }
    *r = best;
    char note[sizeof r->note];
    snprintf(note, sizeof note, "%s; median by parallelism %s; thread pool %d (halide_set_num_threads)",
             best.note, times, r->threads);
    snprintf(r->note, sizeof r->note, "%s", note);
}
#endif

/* ---- main ---------------------------------------------------------------- */

static void usage(void)
{
    fputs("usage: bench_matmul --texc TEXC --te FILE.te [--threads '1 2'] [--min-time S]\n"
          "                    [--asm FILE] [--out results.md] [--openblas-peer PROGRAM]\n", stderr);
    exit(2);
}

static void set_threads(int threads)
{
    omp_set_num_threads(threads);
#ifdef BENCH_HAVE_HALIDE
    int halide_threads = bench_halide_set_threads(threads);
    if (halide_threads != threads)
        bench_die("halide_set_num_threads(%d) left %d threads", threads, halide_threads);
#endif
    if (omp_get_max_threads() != threads)
        bench_die("omp_set_num_threads(%d) left %d threads", threads, omp_get_max_threads());
}

int main(int argc, char **argv)
{
    Report rep;
    memset(&rep, 0, sizeof rep);
    rep.min_time = 0.3;
    const char *texc = NULL, *te = NULL, *out_path = NULL, *threads_arg = "1 2";
    const char *openblas_peer = NULL; /* bench/openblas_peer, where configure found OpenBLAS */
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            usage();
        if (!strcmp(argv[i], "--texc"))
            texc = argv[++i];
        else if (!strcmp(argv[i], "--te"))
            te = argv[++i];
        else if (!strcmp(argv[i], "--threads"))
            threads_arg = argv[++i];
        else if (!strcmp(argv[i], "--min-time"))
            rep.min_time = atof(argv[++i]);
        else if (!strcmp(argv[i], "--asm"))
            rep.asm_file = argv[++i];
        else if (!strcmp(argv[i], "--out"))
            out_path = argv[++i];
        else if (!strcmp(argv[i], "--openblas-peer"))
            openblas_peer = argv[++i];
        else
            usage();
    }
    if (!texc || !te)
        usage();
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
    if (rep.nthread_counts == 0)
        bench_die("bad --threads '%s'", threads_arg);

    /* Facts first: they do not depend on the measurements. */
    read_machine(&rep.machine);
    bench_read_load(rep.load_before, sizeof rep.load_before);
    rep.busy_before = bench_others_busy();
    texc_version(texc, rep.texc_version, sizeof rep.texc_version);
    fprintf(stderr, "texc compile time (10 runs)...\n");
    rep.have_compile = compile_time(texc, te, &rep.compile);
    snprintf(rep.openblas, sizeof rep.openblas, "%s",
             openblas_peer ? "found, but no row ran" : "not found by configure: rows skipped");
#ifdef BENCH_HAVE_DNNL
    {
        const dnnl_version_t *v = dnnl_version();
        if (dnnl_engine_create(&bench_dnnl_engine, dnnl_cpu, 0) != dnnl_success ||
            dnnl_stream_create(&bench_dnnl_stream, bench_dnnl_engine, dnnl_stream_default_flags) != dnnl_success)
            bench_die("oneDNN: no CPU engine");
        snprintf(rep.onednn, sizeof rep.onednn,
                 "found — %d.%d.%d, CPU runtime %s, ISA %s; matmul primitive with bias, output scale 0.125, "
                 "eltwise_gelu_erf post-op; weights format any, reordered once outside the timed loop",
                 v->major, v->minor, v->patch, dnnl_runtime2str(v->cpu_runtime),
                 dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa()));
    }
#else
    snprintf(rep.onednn, sizeof rep.onednn, "not found by configure: rows skipped");
#endif
#ifdef BENCH_HAVE_HALIDE
    snprintf(rep.halide, sizeof rep.halide,
             "found — %s; z(j, i) = gelu(sum over r of x(r, i) * w(j, r) * 0.125 + b(j)) with "
             "Halide's erf, buffers constrained to the shape and 64-byte aligned; one pipeline per "
             "shape and parallelism, built by halide_gen with Halide's runtime linked in; a row "
             "runs each of its shape's pipelines on the row's threads and keeps the fastest "
             "(Adams2019 hardly searches at parallelism 1); the thread pool set per row with "
             "halide_shutdown_thread_pool and halide_set_num_threads", bench_halide_about);
#else
    snprintf(rep.halide, sizeof rep.halide, "not found by configure: rows skipped");
#endif
    fprintf(stderr, "FMA peak...\n");
    rep.peak_core = bench_fma_peak(1);
    for (int i = 0; i < rep.nthread_counts; i++)
        rep.peak[i] = rep.thread_counts[i] == 1 ? rep.peak_core : bench_fma_peak(rep.thread_counts[i]);

    for (int si = 0; si < NSHAPES; si++) {
        const Shape *s = &shapes[si];
        size_t xs = (size_t)s->m * s->k, ws = (size_t)s->k * s->n, zs = (size_t)s->m * s->n;
        float *x = bench_xmalloc(sizeof *x * xs), *w = bench_xmalloc(sizeof *w * ws);
        float *b = bench_xmalloc(sizeof *b * s->n), *z = bench_xmalloc(sizeof *z * zs);
        float *ref = bench_xmalloc(sizeof *ref * zs);
        bench_fill_random(x, xs, SEED_X);
        bench_fill_random(w, ws, SEED_W);
        bench_fill_random(b, s->n, SEED_B);
        Problem p = {s->m, s->k, s->n, x, w, b, z};
        fprintf(stderr, "%d×%d×%d\n", s->m, s->k, s->n);
        if (is_gemv(s)) {
            /* the bound of a matrix-vector product: reading w, at each row's thread count */
            for (int ti = -1; ti < rep.nthread_counts; ti++) {
                int threads = ti < 0 ? 1 : rep.thread_counts[ti];
                if (ti >= 0 && threads == 1)
                    continue;
                if (nbandwidths == MAX_BANDWIDTHS)
                    bench_die("too many bandwidths");
                bandwidths[nbandwidths++] = (Bandwidth){s, threads, bench_bandwidth(w, NULL, ws, threads)};
                fprintf(stderr, "  read bandwidth of w (%.2f MB) %2d thr %.1f GB/s\n",
                        ws * sizeof(float) * 1e-6, threads, bandwidths[nbandwidths - 1].gbps);
            }
        }

        /* the reference, and the naive row (one thread whatever the count) */
        Problem ref_problem = p;
        ref_problem.z = ref;
        run_naive(&ref_problem);
        for (int ti = 0; ti < rep.nthread_counts; ti++) {
            int threads = rep.thread_counts[ti];
            set_threads(threads);
            if (ti == 0) {
                Row *r = new_row(s, 1, "naive");
                snprintf(r->note, sizeof r->note, "1 thread, -O2");
                measure_row(r, run_naive, &p, &p, ref, rep.min_time);
            }

            Row *r = new_row(s, threads, "openblas");
            if (openblas_peer)
                openblas_row(r, &rep, openblas_peer, &p, ref);
            else
                r->state = ROW_ABSENT;

            /* oneDNN on weights reordered once, then on the weights as
               given (the plain entry points' peer) */
            for (int plain = 0; plain < 2; plain++) {
                r = new_row(s, threads, plain ? "onednn-plain" : "onednn");
#ifdef BENCH_HAVE_DNNL
                DnnlRun d;
                char why[256];
                if (dnnl_setup(&d, &p, plain, why, sizeof why)) {
                    snprintf(r->note, sizeof r->note, "%s, %s", d.impl, d.weights_note);
                    measure_row(r, run_dnnl, &d, &p, ref, rep.min_time);
                } else {
                    r->state = ROW_FAILED;
                    snprintf(r->note, sizeof r->note, "%s", why);
                    fprintf(stderr, "  %s: %s\n", r->impl, why);
                }
                dnnl_teardown(&d);
#else
                r->state = ROW_ABSENT;
#endif
            }

            r = new_row(s, threads, "halide");
#ifdef BENCH_HAVE_HALIDE
            halide_row(r, &rep, &p, ref);
#else
            r->state = ROW_ABSENT;
#endif

            TexcRun sched = {s->texc_sched, &p}, dflt = {s->texc_default, &p};
            TexcRun tuned = {s->texc_tuned, &p};
            texc_row(new_row(s, threads, "texc-sched"), &sched, s->sched_prepare, "", &p, ref,
                     rep.min_time);
            texc_row(new_row(s, threads, "texc-default"), &dflt, s->default_prepare, "", &p, ref,
                     rep.min_time);
            /* NAME(x, w, b, z) on w as given: packing at every call, or
               reading w in place where that pays (texc's plain_pays) */
            TexcRun plain = {s->texc_plain, &p};
            r = new_row(s, threads, "texc-plain");
            snprintf(r->note, sizeof r->note, "the default build's NAME(x, w, b, z), w as given");
            measure_row(r, run_texc, &plain, &p, ref, rep.min_time);
            r = new_row(s, threads, "texc-tuned");
            if (s->texc_tuned) {
                texc_row(r, &tuned, s->tuned_prepare, s->tuned_note, &p, ref, rep.min_time);
            } else {
                snprintf(r->note, sizeof r->note, "%s", s->tuned_note);
                r->state = ROW_NO_RECORD;
                fprintf(stderr, "  texc-tuned: %s\n", s->tuned_note);
            }
        }
        free(x);
        free(w);
        free(b);
        free(z);
        free(ref);
    }

    OpsConfig ops = {rep.thread_counts, rep.nthread_counts, rep.min_time, rep.peak_core};
    bench_ops_run(&ops, set_threads);

    bench_read_load(rep.load_after, sizeof rep.load_after);
    rep.busy_after = bench_others_busy();
    print_report(stdout, &rep);
    if (out_path) {
        FILE *f = fopen(out_path, "w");
        if (!f)
            bench_die("cannot write %s: %s", out_path, strerror(errno));
        print_report(f, &rep);
        if (fclose(f) != 0)
            bench_die("cannot write %s: %s", out_path, strerror(errno));
    }
    int ops_contended, mismatches;
    bench_ops_count(&ops_contended, &mismatches);
    for (int i = 0; i < nrows; i++)
        mismatches += rows[i].state == ROW_MISMATCH;
    if (mismatches) {
        fputs("bench_matmul: *** some rows MISMATCH the naive reference (see the table) ***\n", stderr);
        return 1;
    }
    return 0;
}
