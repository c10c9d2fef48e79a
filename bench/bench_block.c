/* bench_block.c — make bench-block: texc's BERT-base layer against PyTorch.
 *
 * The layer is samples/transformer_block.te at D = 768, H = 12 (DH = 64),
 * F = 3072, for each sequence length S of bench/gen-block/block_kernels.h
 * (BENCH_BLOCKS, written by gen_block.sh from the Makefile's
 * BENCH_BLOCK_SIZES).  The rows, at each S and thread count:
 *
 *   texc-default   texc's default schedule, built without the tuning log;
 *                  the weights it reads packed are prepacked once,
 *                  untimed (NAME_prepack_args), as bench_matmul's are
 *   texc-tuned     the tuning log's winner for the layer where the log
 *                  has a record that applies, else "no tuning record"
 *   torch-eager    the same layer in PyTorch (bench/torch_block.py says
 *   torchscript    how it is written and run): eager, and traced, frozen
 *                  and optimize_for_inference'd; each the fastest of the
 *                  configurations torch_block.py tries (OpenMP wait policy
 *                  and OpenBLAS build), all of them in the note
 *
 * Method.  Inputs are scaled like a trained layer's: x ~ N(0, 1), weight
 * matrices and biases ~ N(0, 0.02^2), layer-norm gains 1 + N(0, 0.02^2),
 * from fixed seeds (bench_fill_random through Box-Muller), written to
 * DIR/in_S.f32 for PyTorch to read, so that both run on the same numbers.
 * Denormals are flushed in both (FTZ and DAZ in MXCSR, set here before any
 * OpenMP thread exists, which then inherit it; torch.set_flush_denormal
 * there).  texc's rows are timed by bench_measure, PyTorch's by its copy in
 * torch_block.py (the same rules).  Every output is compared with a
 * float64 PyTorch run of the layer: max|y - y64| / max|y64|; above 1e-4
 * (BENCH_TOLERANCE) a row is a mismatch and the exit status is 1.  texc's
 * output is also compared with PyTorch eager's in f32 at the same threads.
 * GFLOP/s counts the matmuls' 2 flops a multiply-add (the rest is a few
 * per cent).  The load on the machine is recorded before and after.
 *
 * The report (Markdown) goes to stdout and to --out; progress to stderr.
 * Without PyTorch there is no reference: make bench-block skips the layer
 * (configure says why) and this program is not run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xmmintrin.h>

#include "bench.h"
#include "block_kernels.h"

#ifndef BENCH_KERNEL_CFLAGS
#define BENCH_KERNEL_CFLAGS "?"
#endif

enum { D = 768, H = 12, F = 3072, NARGS = 15, MAX_THREAD_COUNTS = 8, MAX_ROWS = 128 };

typedef size_t BytesFn(void);
typedef void PrepackFn(void *const *args, void *packed);
typedef void PackedFn(void *const *args, const void *packed);

typedef struct Build {
    BytesFn *bytes;
    PrepackFn *prepack;
    PackedFn *run;
} Build;

typedef struct Block {
    int s;
    Build dflt, tuned;   /* tuned.run NULL: no tuning record */
    const char *tuned_note;
} Block;

#define BENCH_BLOCK_ENTRY(S, DB, DP, DR, TB, TP, TR, NOTE) {S, {DB, DP, DR}, {TB, TP, TR}, NOTE},
static const Block blocks[] = {BENCH_BLOCKS(BENCH_BLOCK_ENTRY)};
enum { NBLOCKS = sizeof blocks / sizeof blocks[0] };

/* The layer's arguments in texc's order (the .te file's inputs, then y):
 * rows (0: S) and columns, and how they are drawn. */
typedef enum Init { ACTIVATION, WEIGHT, GAIN, OUTPUT } Init;
static const struct {
    const char *name;
    int rows, cols;
    Init init;
} args_info[NARGS] = {
    {"x", 0, D, ACTIVATION},   {"ln1_g", 1, D, GAIN},   {"ln1_b", 1, D, WEIGHT},
    {"wq", D, D, WEIGHT},      {"wk", D, D, WEIGHT},    {"wv", D, D, WEIGHT},
    {"wo", D, D, WEIGHT},      {"bo", 1, D, WEIGHT},    {"ln2_g", 1, D, GAIN},
    {"ln2_b", 1, D, WEIGHT},   {"w1", D, F, WEIGHT},    {"b1", 1, F, WEIGHT},
    {"w2", F, D, WEIGHT},      {"b2", 1, D, WEIGHT},    {"y", 0, D, OUTPUT},
};

static size_t arg_count(int i, int s)
{
    return (size_t)(args_info[i].rows ? args_info[i].rows : s) * args_info[i].cols;
}

/* The matmuls' flops: q, k, v and the output projection, the scores and
 * the weighted sum of v, the MLP's two. */
static double block_gflop(int s)
{
    return (4.0 * 2 * s * D * D + 2.0 * 2 * s * s * D + 2.0 * 2 * s * D * F) * 1e-9;
}

/* N(MEAN, SD^2) by Box-Muller from bench_fill_random's uniform [-1, 1). */
static void fill_normal(float *buf, size_t count, unsigned long long seed, double mean, double sd)
{
    float *u = bench_xmalloc(sizeof *u * (count + 1));
    bench_fill_random(u, count + 1, seed);
    for (size_t i = 0; i < count; i += 2) {
        double u1 = 1.0 - (u[i] + 1.0) / 2.0, u2 = (u[i + 1] + 1.0) / 2.0; /* u1 in (0, 1] */
        double r = sqrt(-2.0 * log(u1));
        buf[i] = (float)(mean + sd * r * cos(2.0 * M_PI * u2));
        if (i + 1 < count)
            buf[i + 1] = (float)(mean + sd * r * sin(2.0 * M_PI * u2));
    }
    free(u);
}

static void write_file(const char *path, const float *const *bufs, const size_t *counts, int n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        bench_die("cannot write %s: %s", path, strerror(errno));
    for (int i = 0; i < n; i++)
        if (fwrite(bufs[i], sizeof *bufs[i], counts[i], f) != counts[i])
            bench_die("cannot write %s: %s", path, strerror(errno));
    if (fclose(f) != 0)
        bench_die("cannot write %s: %s", path, strerror(errno));
}

/* COUNT floats of PATH into BUF; 0 when it is missing or short. */
static int read_floats(const char *path, float *buf, size_t count)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t got = fread(buf, sizeof *buf, count, f);
    int extra = fgetc(f) != EOF;
    fclose(f);
    return got == count && !extra;
}

/* ---- Rows ------------------------------------------------------------------ */

typedef enum RowState { ROW_OK, ROW_MISMATCH, ROW_FAILED, ROW_NO_RECORD } RowState;

typedef struct Row {
    int s, threads;
    const char *impl;    /* texc-default, texc-tuned, torch-eager, torchscript */
    RowState state;
    Timing timing;
    double err64;        /* against the float64 run */
    double err_eager;    /* texc's against PyTorch eager in f32; < 0: not compared */
    char note[512];
} Row;

static Row rows[MAX_ROWS];
static int nrows;

static Row *new_row(int s, int threads, const char *impl)
{
    if (nrows == MAX_ROWS)
        bench_die("too many rows");
    Row *r = &rows[nrows++];
    memset(r, 0, sizeof *r);
    r->s = s;
    r->threads = threads;
    r->impl = impl;
    r->err_eager = -1.0;
    return r;
}

static Row *find_row(int s, int threads, const char *impl)
{
    for (int i = 0; i < nrows; i++)
        if (rows[i].s == s && rows[i].threads == threads && !strcmp(rows[i].impl, impl))
            return &rows[i];
    return NULL;
}

static int is_ok(const Row *r)
{
    return r && r->state == ROW_OK;
}

static void log_row(const Row *r)
{
    fprintf(stderr, "  S=%-4d %-13s %d thr %9.3f ms  err %.2e  cpu %3.0f%%%s\n", r->s, r->impl,
            r->threads, r->timing.median * 1e3, r->err64, 100.0 * r->timing.cpu_share,
            r->state == ROW_MISMATCH ? "  *** MISMATCH ***" : "");
}

/* ---- PyTorch ---------------------------------------------------------------- */

/* Runs TORCH (the Python and torch_block.py) on DIR's inputs, then makes a
 * row per S, mode and thread count from the fastest configuration (one
 * that mismatches wins, so that a wrong run cannot hide), every
 * configuration's median in the note; outputs checked against the float64
 * run, DIR/ref64_S.f32, read into REF64 (by block).  ABOUT: the script's
 * line about PyTorch.  0 when the script failed. */
static int torch_rows(const char *torch, const char *dir, const char *sizes, const char *threads,
                      double min_time, float *const *ref64, char *about, size_t about_size)
{
    enum { MAX_CANDIDATES = 256 };
    static Row cands[MAX_CANDIDATES]; /* a row per run; note: its configuration */
    int ncands = 0, have_refs = 0;
    char cmd[2048], line[1024];
    snprintf(cmd, sizeof cmd, "%s --dir '%s' --sizes '%s' --threads '%s' --min-time %.9g", torch,
             dir, sizes, threads, min_time);
    fprintf(stderr, "PyTorch: %s\n", cmd);
    FILE *f = popen(cmd, "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!strncmp(line, "about ", 6)) {
            snprintf(about, about_size, "%s", line + 6);
            continue;
        }
        int s, thr, bi = 0;
        char mode[32], config[64], path[512];
        Timing t;
        if (sscanf(line, "row %d %31s %d %63s %lf %lf %lf %lf %d %lf %lf %511s", &s, mode, &thr,
                   config, &t.median, &t.p25, &t.p75, &t.best, &t.reps, &t.cpu_secs,
                   &t.cpu_share, path) != 12)
            continue;
        while (bi < NBLOCKS && blocks[bi].s != s)
            bi++;
        if (bi == NBLOCKS || ncands == MAX_CANDIDATES)
            bench_die("torch_block.py: unexpected row: %s", line);
        if (!have_refs) { /* the script writes them before its first timed run */
            for (int i = 0; i < NBLOCKS; i++) {
                char ref_path[512];
                snprintf(ref_path, sizeof ref_path, "%s/ref64_%d.f32", dir, blocks[i].s);
                if (!read_floats(ref_path, ref64[i], arg_count(NARGS - 1, blocks[i].s)))
                    bench_die("%s: missing or of the wrong size", ref_path);
            }
            have_refs = 1;
        }
        size_t count = arg_count(NARGS - 1, s);
        float *y = bench_xmalloc(sizeof *y * count);
        Row *c = &cands[ncands++];
        memset(c, 0, sizeof *c);
        c->s = s;
        c->threads = thr;
        c->impl = !strcmp(mode, "eager") ? "torch-eager" : "torchscript";
        c->timing = t;
        c->err_eager = -1.0;
        c->err64 = read_floats(path, y, count) ? bench_rel_error(y, ref64[bi], count) : INFINITY;
        c->state = c->err64 <= BENCH_TOLERANCE ? ROW_OK : ROW_MISMATCH;
        snprintf(c->note, sizeof c->note, "%s", config);
        free(y);
        fprintf(stderr, "  (%s)", config);
        log_row(c);
    }
    if (pclose(f) != 0 || !have_refs)
        return 0;
    for (int i = 0; i < ncands; i++) {
        const Row *c = &cands[i];
        if (find_row(c->s, c->threads, c->impl))
            continue;
        const Row *best = c;
        char all[384] = "";
        for (int j = i; j < ncands; j++) {
            const Row *o = &cands[j];
            if (o->s != c->s || o->threads != c->threads || strcmp(o->impl, c->impl))
                continue;
            size_t used = strlen(all);
            snprintf(all + used, sizeof all - used, "%s%s %.3f ms", used ? ", " : "", o->note,
                     o->timing.median * 1e3);
            if (best->state != ROW_MISMATCH &&
                (o->state == ROW_MISMATCH || o->timing.median < best->timing.median))
                best = o;
        }
        Row *r = new_row(c->s, c->threads, c->impl);
        *r = *best;
        snprintf(r->note, sizeof r->note, "%.63s, the fastest of: %.400s", best->note, all);
    }
    return 1;
}

/* ---- texc -------------------------------------------------------------------- */

typedef struct TexcRun {
    PackedFn *run;
    void *const *args;
    const void *packed;
} TexcRun;

static void run_texc(void *ctx)
{
    const TexcRun *t = ctx;
    t->run(t->args, t->packed);
}

/* A texc row: BUILD's weights prepacked once, untimed (the time in the
 * note), then the timed calls on ARGS at R's threads; the output checked
 * against REF64 and, where there is one, PyTorch eager's f32 output at
 * the same threads (EAGER). */
static void texc_row(Row *r, const Build *build, void *const *args, const float *ref64,
                     const float *eager, double min_time)
{
    size_t count = arg_count(NARGS - 1, r->s), bytes = build->bytes();
    void *packed = bytes ? aligned_alloc(64, (bytes + 63) / 64 * 64) : NULL;
    if (bytes && !packed)
        bench_die("out of memory (%zu bytes)", bytes);
    double t0 = omp_get_wtime();
    build->prepack(args, packed);
    double prep = omp_get_wtime() - t0;
    float *y = args[NARGS - 1];
    bench_fill_nan(y, count);
    TexcRun t = {build->run, args, packed};
    r->timing = bench_measure(run_texc, &t, r->threads, min_time);
    r->err64 = bench_rel_error(y, ref64, count);
    r->err_eager = eager ? bench_rel_error(y, eager, count) : -1.0;
    r->state = r->err64 <= BENCH_TOLERANCE ? ROW_OK : ROW_MISMATCH;
    size_t used = strlen(r->note);
    snprintf(r->note + used, sizeof r->note - used, "%sweights prepacked once, untimed: %.1f ms "
             "(%.1f MB)", used ? "; " : "", prep * 1e3, bytes * 1e-6);
    free(packed);
    log_row(r);
}

/* ---- The report ---------------------------------------------------------------- */

typedef struct Report {
    char load_before[64], load_after[64];
    double busy_before, busy_after;
    char torch[512];
    int thread_counts[MAX_THREAD_COUNTS], nthread_counts;
    double min_time;
} Report;

static void print_ratio(FILE *out, const Row *texc, const Row *r)
{
    if (is_ok(texc) && is_ok(r))
        fprintf(out, " %.3g |", r->timing.median / texc->timing.median);
    else
        fputs(" — |", out);
}

/* The faster of PyTorch eager and TorchScript at S and THREADS, or NULL. */
static const Row *torch_best(int s, int threads)
{
    const Row *e = find_row(s, threads, "torch-eager"), *t = find_row(s, threads, "torchscript");
    if (is_ok(e) && (!is_ok(t) || e->timing.median <= t->timing.median))
        return e;
    return is_ok(t) ? t : NULL;
}

static void target_line(FILE *out, int *held, int *judged, const Row *texc, int s, int threads,
                        const char *who, double bound)
{
    const Row *peer = torch_best(s, threads);
    fprintf(out, "| %d | %d | %s ≥ %.1f× the faster of eager and TorchScript | ", s, threads, who,
            bound);
    if (!is_ok(texc) || !peer) {
        fprintf(out, "%s not measured | not judged |\n",
                !texc || texc->state == ROW_NO_RECORD ? who : !peer ? "PyTorch" : who);
        return;
    }
    double ratio = peer->timing.median / texc->timing.median;
    int ok = ratio >= bound;
    ++*judged;
    *held += ok;
    fprintf(out, "%.3g× (%.3f vs %s %.3f ms) | %s%s |\n", ratio, texc->timing.median * 1e3,
            peer->impl, peer->timing.median * 1e3, ok ? "holds" : "**does not hold**",
            texc->timing.cpu_share < BENCH_CONTENDED || peer->timing.cpu_share < BENCH_CONTENDED
                ? " ⚠" : "");
}

static void print_report(FILE *out, const Report *rep)
{
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    fputs("\n## The BERT-base layer against PyTorch\n\n"
          "samples/transformer_block.te at D = 768, H = 12, F = 3072 (`make bench-block`, "
          "bench/bench_block.c, bench/torch_block.py): pre-norm layer norms, 12-head attention, "
          "a GELU MLP, both residuals; GFLOP/s counts the matmuls' 2 flops a multiply-add.\n\n", out);
    fprintf(out, "- date: %s\n", date);
    fprintf(out, "- other load: load average (1, 5, 15 min) %s before, %s after; CPU time used by "
                 "other processes in a 1 s sample: %.0f%% before, %.0f%% after\n",
            rep->load_before, rep->load_after, 100.0 * rep->busy_before, 100.0 * rep->busy_after);
    fprintf(out, "- texc: default schedule, built without the tuning log, `%s`; texc-tuned: the "
                 "tuning log's winner where it has a record for the layer\n", BENCH_KERNEL_CFLAGS);
    fprintf(out, "- PyTorch: %s; the layer with F.layer_norm, F.linear (weights as nn.Linear "
                 "holds them), torch.matmul, torch.softmax and F.gelu (erf); torchscript = "
                 "torch.jit.trace, freeze, optimize_for_inference; every configuration with "
                 "OPENBLAS_CORETYPE=SkylakeX, OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = the row's "
                 "threads and torch.set_num_threads, in a process of its own; the row is the "
                 "fastest, all of them in its note\n", rep->torch);
    fprintf(out, "- inputs: x ~ N(0, 1), weights and biases ~ N(0, 0.02²), layer-norm gains "
                 "1 + N(0, 0.02²), fixed seeds, the same arrays for every row; denormals flushed "
                 "(FTZ + DAZ) in both texc's and PyTorch's processes\n");
    fprintf(out, "- method: as the tables above: >= 0.05 s warm-up, then the median of separately "
                 "timed calls (>= %.2g s and >= 10 calls); cpu = process CPU time / (wall time × "
                 "threads), ⚠ below %.0f%%\n", rep->min_time, 100.0 * BENCH_CONTENDED);
    fprintf(out, "- check: err64 = max|y − y64| / max|y64| against the same layer in PyTorch "
                 "float64, a mismatch above %.0e; err eager = texc's against PyTorch eager f32 "
                 "at the same threads; \"texc ÷ this\" = this row's median / texc's (> 1: texc "
                 "faster)\n\n", BENCH_TOLERANCE);
    fputs("| S | thr | impl | median ms | IQR ms | GFLOP/s | texc-default ÷ this | texc-tuned ÷ this "
          "| err64 | err eager | check | cpu | notes |\n"
          "|--:|--:|---|--:|---|--:|--:|--:|--:|--:|---|--:|---|\n", out);
    for (int i = 0; i < nrows; i++) {
        const Row *r = &rows[i];
        fprintf(out, "| %d | %d | %s |", r->s, r->threads, r->impl);
        if (r->state == ROW_FAILED || r->state == ROW_NO_RECORD) {
            fprintf(out, " — | — | — | — | — | — | — | %s | — | %s |\n",
                    r->state == ROW_FAILED ? "FAILED" : "no tuning record", r->note);
            continue;
        }
        fprintf(out, " %.3f | %.3f–%.3f | %.1f |", r->timing.median * 1e3, r->timing.p25 * 1e3,
                r->timing.p75 * 1e3, block_gflop(r->s) / r->timing.median);
        print_ratio(out, find_row(r->s, r->threads, "texc-default"), r);
        print_ratio(out, find_row(r->s, r->threads, "texc-tuned"), r);
        fprintf(out, " %.1e |", r->err64);
        if (r->err_eager >= 0)
            fprintf(out, " %.1e |", r->err_eager);
        else
            fputs(" — |", out);
        fprintf(out, " %s | %.0f%%%s | %s, %d reps |\n", r->state == ROW_OK ? "ok" : "**MISMATCH**",
                100.0 * r->timing.cpu_share, r->timing.cpu_share < BENCH_CONTENDED ? " ⚠" : "",
                r->note, r->timing.reps);
    }
    fputs("\nTargets of issue #17 for the layer, judged on this run (⚠: a row compared ran "
          "below its threads' CPU time):\n\n| S | thr | target | measured | verdict |\n"
          "|--:|--:|---|---|---|\n", out);
    int held = 0, judged = 0, total = 0;
    for (int bi = 0; bi < NBLOCKS; bi++)
        for (int ti = 0; ti < rep->nthread_counts; ti++) {
            int s = blocks[bi].s, thr = rep->thread_counts[ti];
            target_line(out, &held, &judged, find_row(s, thr, "texc-default"), s, thr,
                        "texc-default", 1.1);
            target_line(out, &held, &judged, find_row(s, thr, "texc-tuned"), s, thr, "texc-tuned",
                        1.3);
            total += 2;
        }
    fprintf(out, "\n**%d of %d targets hold**; %d do not hold; %d not judged.\n", held, total,
            judged - held, total - judged);
}

/* ---- main ------------------------------------------------------------------------ */

static void usage(void)
{
    fputs("usage: bench_block --dir DIR --torch 'PYTHON torch_block.py' [--threads '1 2']\n"
          "                   [--min-time S] [--out FILE]\n", stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    Report rep;
    memset(&rep, 0, sizeof rep);
    rep.min_time = 0.3;
    const char *dir = NULL, *torch = NULL, *out_path = NULL, *threads_arg = "1 2";
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            usage();
        if (!strcmp(argv[i], "--dir"))
            dir = argv[++i];
        else if (!strcmp(argv[i], "--torch"))
            torch = argv[++i];
        else if (!strcmp(argv[i], "--threads"))
            threads_arg = argv[++i];
        else if (!strcmp(argv[i], "--min-time"))
            rep.min_time = atof(argv[++i]);
        else if (!strcmp(argv[i], "--out"))
            out_path = argv[++i];
        else
            usage();
    }
    if (!dir || !torch)
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

    /* FTZ and DAZ before the first parallel region: OpenMP's threads
     * inherit this thread's MXCSR when they are created */
    _mm_setcsr(_mm_getcsr() | 0x8040);
    bench_read_load(rep.load_before, sizeof rep.load_before);
    rep.busy_before = bench_others_busy();

    /* the inputs, written for PyTorch */
    float *args[NBLOCKS][NARGS], *ref64[NBLOCKS];
    char sizes[256] = "";
    for (int bi = 0; bi < NBLOCKS; bi++) {
        int s = blocks[bi].s;
        size_t counts[NARGS];
        for (int i = 0; i < NARGS; i++) {
            counts[i] = arg_count(i, s);
            args[bi][i] = bench_xmalloc(sizeof(float) * counts[i]);
            unsigned long long seed = 100 + (unsigned long long)i;
            switch (args_info[i].init) {
            case ACTIVATION: fill_normal(args[bi][i], counts[i], seed, 0.0, 1.0); break;
            case WEIGHT: fill_normal(args[bi][i], counts[i], seed, 0.0, 0.02); break;
            case GAIN: fill_normal(args[bi][i], counts[i], seed, 1.0, 0.02); break;
            case OUTPUT: bench_fill_nan(args[bi][i], counts[i]); break;
            }
        }
        ref64[bi] = bench_xmalloc(sizeof(float) * counts[NARGS - 1]);
        char path[512];
        snprintf(path, sizeof path, "%s/in_%d.f32", dir, s);
        write_file(path, (const float *const *)args[bi], counts, NARGS - 1);
        size_t used = strlen(sizes);
        snprintf(sizes + used, sizeof sizes - used, "%s%d", used ? " " : "", s);
    }

    if (!torch_rows(torch, dir, sizes, threads_arg, rep.min_time, ref64, rep.torch,
                    sizeof rep.torch))
        bench_die("torch_block.py failed (its messages are above): no reference, no PyTorch rows");

    int failed = 0;
    for (int bi = 0; bi < NBLOCKS; bi++) {
        const Block *b = &blocks[bi];
        size_t count = arg_count(NARGS - 1, b->s);
        float *eager = bench_xmalloc(sizeof *eager * count);
        for (int ti = 0; ti < rep.nthread_counts; ti++) {
            int thr = rep.thread_counts[ti];
            omp_set_num_threads(thr);
            if (omp_get_max_threads() != thr)
                bench_die("omp_set_num_threads(%d) left %d threads", thr, omp_get_max_threads());
            const Row *e = find_row(b->s, thr, "torch-eager");
            /* the eager row's own output: torch_block.py's file of its configuration */
            int have_eager = 0;
            if (e) {
                char cfg[64], path[512];
                snprintf(cfg, sizeof cfg, "%.*s", (int)strcspn(e->note, ","), e->note);
                snprintf(path, sizeof path, "%s/torch_eager_%d_t%d_%s.f32", dir, b->s, thr, cfg);
                have_eager = read_floats(path, eager, count);
            }
            fprintf(stderr, "S=%d, %d thread%s\n", b->s, thr, thr > 1 ? "s" : "");
            texc_row(new_row(b->s, thr, "texc-default"), &b->dflt, (void *const *)args[bi],
                     ref64[bi], have_eager ? eager : NULL, rep.min_time);
            Row *r = new_row(b->s, thr, "texc-tuned");
            if (b->tuned.run) {
                snprintf(r->note, sizeof r->note, "%s", b->tuned_note);
                texc_row(r, &b->tuned, (void *const *)args[bi], ref64[bi],
                         have_eager ? eager : NULL, rep.min_time);
            } else {
                r->state = ROW_NO_RECORD;
                snprintf(r->note, sizeof r->note, "%s", b->tuned_note);
            }
        }
        free(eager);
    }
    for (int i = 0; i < nrows; i++)
        failed += rows[i].state == ROW_MISMATCH;

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
    for (int bi = 0; bi < NBLOCKS; bi++) {
        for (int i = 0; i < NARGS; i++)
            free(args[bi][i]);
        free(ref64[bi]);
    }
    if (failed) {
        fputs("bench_block: *** some rows MISMATCH the float64 reference (see the table) ***\n",
              stderr);
        return 1;
    }
    return 0;
}
