/* measure.c — building and timing candidates, each in processes of its own.
 *
 * A Bench holds what every measurement of one tuning run shares: a
 * private directory (mkdtemp) with the seeded random inputs written once
 * as .npy files (named by position, never by the user's names), the
 * reference outputs (reference.c: the program compiled in double, or the
 * evaluator), and per-output tolerances.
 *
 * The directory holds a pid file: a later tuner removes the directories
 * of tuners that were killed before they could.
 *
 * Building (tune_build): each candidate gets a directory of its own
 * inside the Bench's.  A forked child (its own process group) runs the
 * build sequence texc's own build runs (sched/build.c: the layouts the
 * candidate's tiles want, its schedule, the default for the rest,
 * lowering), writes
 * KERNEL.c, KERNEL.h, harness.c (codegen/harness.c) and, for a planted
 * candidate, plant.c, and then execs the C compiler with an argument
 * vector (no shell), the one texc -c uses (codegen/kernel_cc.c) with the
 * candidate's files:  cc -std=gnu11 -O3 -march=native -fopenmp -o run
 * KERNEL.c harness.c [plant.c] -lm.  At most JOBS children run at once;
 * one that exceeds the compile time limit is killed with its whole
 * process group.  Doing the schedule work in the child as well means a
 * candidate that trips an internal error in texc costs that candidate,
 * not the tuning run.
 *
 * Measuring (tune_measure) happens one candidate at a time, with no build
 * running, so a timing never shares its cores (nor with another tuner's
 * work: the caller holds the machine lock, lock.c).  The harness poisons every
 * output with NaN (0x7f bytes for integers) in each process, runs the
 * kernel once as a warm-up and REPEATS timed times, and prints the median.
 * The first run is `-r 1`: its output is compared with the reference, and
 * its time sizes the second run, `-r R` with R chosen so that the timed
 * repeats last at least min_time (0.2 s); the second run's output is
 * compared again and its median is the candidate's time.  Inputs are
 * rotated between repeats: the harness keeps enough copies of the inputs
 * and outputs that together they exceed the last-level cache (within
 * bounds, see codegen/harness.c) and each run uses the next copy, so a
 * small kernel is not timed on inputs the previous repeat left in cache.
 * The harness prints how many copies it used; the record keeps it.
 *
 * Every run has a time limit (the caller's, from the best time so far):
 * a candidate past it is killed (status timeout).  A signal is a crash, a
 * non-zero exit a run_error, an output outside the tolerance a wrong
 * result; the search goes on after any of them.
 *
 * Tolerance: |got - ref| <= atol + rtol * |ref|, with rtol = atol per
 * dtype as tests/npycmp uses them (f64 1e-9, f32 1e-4, f16 1e-2, bf16
 * 5e-2, integers exact), multiplied for floats by max(1, sqrt(L / 256))
 * where L is the longest reduction in the graph: a reassociated sum of L
 * terms drifts like sqrt(L) roundings, and npycmp's values were set for
 * reductions of a few hundred terms.  matmul_gelu's K = 768 gives 1.7e-4
 * for f32, still far below what a real mistake produces (a missed or
 * doubled term is off by ~|x w| ~ 0.3).  NaN passes only where the
 * reference is NaN.  An integer output whose value goes through a cast of
 * an f32 (f16, bf16) value takes that float's relative tolerance and one
 * unit: the kernels compute the float in f32, the reference in double,
 * and the cast keeps the difference (narrowest_cast_to_int).
 *
 * CUDA candidates go through the same machinery: tune_build forks the
 * same children, in which NVRTC replaces the C compiler, and run_harness
 * the same runs, in which tune_cuda_run (cuda_measure.c) replaces the
 * harness; a kernel that faults exits TUNE_EXIT_FAULT and counts as a
 * crash.  With several devices, tune_measure_devices measures one
 * candidate per device at a time, each tune_measure in a child of its
 * own that sends the results back through a pipe.
 *
 * Test hooks: TEXC_TUNE_KEEP=DIR copies what each candidate built to
 * DIR/trialN/ before its directory is removed.
 * TEXC_TUNE_PLANT=KIND:N,... makes the candidate built as
 * trial N of this run misbehave: the entry point the harness calls
 * (NAME_packed_args) is renamed and wrapped (plant.c) by a function that
 * raises SIGSEGV (crash), spins forever
 * (hang), adds 1 to the first element of the first output (wrong), or
 * sleeps 20 ms before computing (slow); best:N slows every candidate but
 * trial N, so that the winner of an exhaustive search is known.  For
 * cuda the run child itself misbehaves: crash and hang before launching,
 * wrong after copying the outputs back, slow before each run.
 * TEXC_TUNE_MIN_TIME
 * sets min_time (seconds), so that tests on tiny kernels stay fast.
 *
 * This file forks and waits; what its children have in common with
 * cuda_measure.c's and space.c's (dying with the tuner, the clock, the
 * plant hook, removing a directory) is process.c's, so the calls between
 * the three go one way: measure.c -> cuda_measure.c -> process.c.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "tuner/tuner.h"

static const char *const status_names[] = { TUNE_STATUSES(TE_ENUM_NAME) };

const char *tune_status_name(TuneStatus s)
{
    return s < TS_COUNT ? status_names[s] : "not measured";
}

/* ------------------------------------------------------------------ */
/* The bench: inputs, reference, tolerances.                           */

static int64_t longest_reduction(const Expr *e)
{
    int64_t best = 1;
    if (e->kind == EX_REDUCE) {
        int64_t n = 1;
        for (int i = 0; i < e->naxes; i++)
            n *= e->axes[i]->extent;
        best = n;
    }
    for (int i = 0; i < e->nargs; i++) {
        int64_t inner = longest_reduction(e->args[i]);
        if (inner > best)
            best = inner;
    }
    return best;
}

/* The narrowest float dtype below f64 (f16, bf16, f32) whose value X, or
 * a stage it reads (SEEN marks the stages visited, by id), casts to an
 * integer or bool; DT_NONE if none does. */
static DType narrowest_cast_to_int(const Expr *x, bool *seen)
{
    if (!x)
        return DT_NONE;
    DType best = DT_NONE;
    if (x->kind == EX_OP && x->op == OP_CAST && !dtype_is_float(x->dtype) && x->nargs == 1 &&
        dtype_is_float(x->args[0]->dtype) && x->args[0]->dtype != DT_F64)
        best = x->args[0]->dtype;
    if (x->kind == EX_LOAD && x->tensor->kind == TK_STAGE && !seen[x->tensor->id]) {
        seen[x->tensor->id] = true;
        DType d = narrowest_cast_to_int(x->tensor->body, seen);
        if (d != DT_NONE && (best == DT_NONE || dtype_bytes(d) < dtype_bytes(best)))
            best = d;
    }
    for (int i = 0; i < x->nargs; i++) {
        DType d = narrowest_cast_to_int(x->args[i], seen);
        if (d != DT_NONE && (best == DT_NONE || dtype_bytes(d) < dtype_bytes(best)))
            best = d;
    }
    return best;
}

static double base_tolerance(DType t)
{
    switch (t) {
    case DT_F64: return 1e-9;
    case DT_F32: return 1e-4;
    case DT_F16: return 1e-2;
    case DT_BF16: return 5e-2;
    default: return 0;
    }
}

/* Removes the directories of tuners that were killed (SIGKILL leaves no
 * chance to clean up): texc-tune.* directories of ours in TMP whose pid
 * file names a process that no longer exists. */
static void remove_stale(const char *tmp)
{
    DIR *d = opendir(tmp);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "texc-tune.", 10) != 0)
            continue;
        char *dir = NULL, *pidfile = NULL;
        if (asprintf(&dir, "%s/%s", tmp, e->d_name) < 0 ||
            asprintf(&pidfile, "%s/pid", dir) < 0) {
            free(dir);
            continue;
        }
        struct stat sb;
        FILE *f = lstat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) && sb.st_uid == getuid()
                      ? fopen(pidfile, "r") : NULL;
        long pid = 0;
        if (f && fscanf(f, "%ld", &pid) == 1 && pid > 0 && kill((pid_t)pid, 0) != 0 &&
            errno == ESRCH)
            tune_remove_tree(dir);
        if (f)
            fclose(f);
        free(pidfile);
        free(dir);
    }
    closedir(d);
}

const char *tune_tmp_root(void)
{
    const char *tmp = getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

bool tune_make_workdir(const char *tmp, char *dir, size_t size)
{
    snprintf(dir, size, "%.4000s/texc-tune.XXXXXX", tmp);
    if (!mkdtemp(dir)) {
        int err = errno;
        dir[0] = '\0';
        errno = err;
        return false;
    }
    char pidpath[4200];
    snprintf(pidpath, sizeof pidpath, "%.4000s/pid", dir);
    FILE *pf = fopen(pidpath, "w");
    if (pf) {
        fprintf(pf, "%ld\n", (long)getpid());
        fclose(pf);
    }
    return true;
}

static void set_tolerances(Bench *b, Arena *a, Graph *g);
static bool bucket_bench_init(Bench *b, Arena *a, Graph *g, const TuneOptions *o);

bool tune_bench_init(Bench *b, Arena *a, Graph *g, const TuneOptions *o, const char *kernel)
{
    memset(b, 0, sizeof *b);
    b->g = g;
    b->arena = a;
    b->target = o->target;
    b->kernel = kernel;
    b->source = o->source_path;
    b->verbose = o->verbose;
    b->warm = o->warm;
    b->relative_atol = o->relative_atol;
    b->profile = o->profile;
    b->compile_limit = 120;
    b->min_time = 0.2;
    b->max_repeats = 1000000;
    const char *mt = getenv("TEXC_TUNE_MIN_TIME");
    if (mt && *mt)
        b->min_time = atof(mt);
    tune_plant_parse(b);
    const char *keep = getenv("TEXC_TUNE_KEEP");
    b->keep = keep && *keep ? keep : NULL;
    if (o->reference) {
        b->reference = o->reference;
    } else {
        tune_reference_init(&b->own_reference, o);
        b->reference = &b->own_reference;
    }
    if (o->target == TARGET_CUDA) {
        /* the devices were found by tune_run: the same architecture and
           name as device 0, measured on all at once */
        const CudaDevices *d = tune_cuda_devices();
        b->cuda = true;
        b->sm = d->sm;
        snprintf(b->arch, sizeof b->arch, "sm_%d", d->sm);
        b->ndevices = d->nused;
        memcpy(b->devices, d->used, sizeof b->devices);
        /* one CUDA event per repeat */
        b->max_repeats = 20000;
        b->host_inputs = arena_alloc(a, sizeof *b->host_inputs * (size_t)(g->ninputs + 1));
        b->input_bytes = arena_alloc(a, sizeof *b->input_bytes * (size_t)(g->ninputs + 1));
    }
    const char *tmp = tune_tmp_root();
    remove_stale(tmp);
    if (!tune_make_workdir(tmp, b->workdir, sizeof b->workdir)) {
        fprintf(stderr, "texc: cannot create a directory for tuning in %s: %s\n", tmp,
                strerror(errno));
        return false;
    }
    if (o->bucket)
        return bucket_bench_init(b, a, g, o);
    /* the inputs, written once */
    double **in = arena_alloc(a, sizeof *in * (size_t)(g->ninputs + 1));
    b->input_paths = arena_alloc(a, sizeof *b->input_paths * (size_t)(g->ninputs + 1));
    bool ok = true;
    for (int i = 0; i < g->ninputs && ok; i++) {
        const Tensor *t = g->inputs[i];
        in[i] = malloc(sizeof(double) * (size_t)tensor_elems(t));
        if (!in[i]) {
            fprintf(stderr, "texc: out of memory for input '%s'\n", t->name);
            ok = false;
            break;
        }
        te_random_input(t, o->seed, in[i]);
        if (b->cuda && !(b->host_inputs[i] = tune_cuda_host_bytes(t, in[i], &b->input_bytes[i]))) {
            fprintf(stderr, "texc: out of memory for input '%s'\n", t->name);
            ok = false;
            break;
        }
        b->input_paths[i] = arena_printf(a, "%s/in%d.npy", b->workdir, i);
        /* (a CUDA run child has the inputs in memory; the compiled
           reference reads the file) */
        if (npy_write(b->input_paths[i], t, in[i]) != 0) {
            fprintf(stderr, "texc: cannot write %s: %s\n", b->input_paths[i], strerror(errno));
            ok = false;
        }
    }
    /* the reference */
    b->ref = arena_alloc(a, sizeof *b->ref * (size_t)(g->noutputs + 1));
    if (ok) {
        int64_t work = 0;
        for (int i = 0; i < g->ntensors; i++)
            if (g->tensors[i]->kind == TK_STAGE)
                work += tensor_elems(g->tensors[i]) * longest_reduction(g->tensors[i]->body);
        double start = tune_now();
        bool compiled;
        ok = tune_reference_outputs(b->reference, g, NULL, in, b->input_paths, b->ref, &compiled);
        b->reference_s = tune_now() - start;
        if (ok && !o->quiet && (o->verbose || work > 50000000))
            fprintf(stderr, "texc: the reference took %.1f s (%s)\n", tune_now() - start,
                    compiled ? "compiled reference" : "evaluator");
    }
    for (int i = 0; i < g->ninputs; i++)
        free(in[i]);
    if (!ok)
        return false;
    set_tolerances(b, a, g);
    return true;
}

/* Each output's tolerance: its dtype's, grown with the longest
 * reduction. */
static void set_tolerances(Bench *b, Arena *a, Graph *g)
{
    int64_t red = 1;
    for (int i = 0; i < g->ntensors; i++)
        if (g->tensors[i]->kind == TK_STAGE) {
            int64_t r = longest_reduction(g->tensors[i]->body);
            if (r > red)
                red = r;
        }
    double scale = fmax(1.0, sqrt((double)red / 256.0));
    b->rtol = arena_alloc(a, sizeof *b->rtol * (size_t)(g->noutputs + 1));
    b->atol = arena_alloc(a, sizeof *b->atol * (size_t)(g->noutputs + 1));
    bool *seen = calloc((size_t)g->ntensors + 1, sizeof *seen);
    for (int i = 0; i < g->noutputs; i++) {
        const Tensor *t = g->outputs[i];
        double tol = base_tolerance(t->dtype);
        b->rtol[i] = b->atol[i] = tol * (dtype_is_float(t->dtype) ? scale : 1);
        /* a task's inputs stand for intermediates (tasks.c), and a whole
           program's outputs come out of chains of long sums: an element
           near 0 is the difference of partial sums as large as the
           output's largest, whose roundings it keeps, so the absolute
           term is relative to the largest |ref| (a missed or doubled term
           still moves an element by far more).  So is one of a long sum
           (over 256 terms) in a single kernel: on an H200 one element in
           2^26 of a bf16 matmul with k = 8192, -0.0903 for the reference's
           -0.0897, failed every candidate, the default schedule too */
        if ((b->relative_atol || red > 256) && dtype_is_float(t->dtype)) {
            double big = 0;
            int64_t n = b->nsizes ? te_elems_at(t, b->sizes[0]) : tensor_elems(t);
            for (int64_t k = 0; k < n; k++)
                if (isfinite(b->ref[i][k]) && fabs(b->ref[i][k]) > big)
                    big = fabs(b->ref[i][k]);
            b->atol[i] *= fmax(1.0, big);
        }
        /* an integer computed from a narrow float through a cast carries
           the float's rounding: the kernels compute that float in f32,
           the reference in double, so x * 4294962875.0 truncates to
           integers some units apart.  Such an output is compared with the
           float's relative tolerance, and one unit for the truncation */
        if (seen)
            memset(seen, 0, sizeof *seen * (size_t)g->ntensors);
        DType from = t->kind == TK_STAGE && seen ? narrowest_cast_to_int(t->body, seen) : DT_NONE;
        if (!dtype_is_float(t->dtype) && from != DT_NONE) {
            b->rtol[i] = base_tolerance(from) * scale;
            b->atol[i] = 1;
        }
    }
    free(seen);
}

/* The representative sizes of bucket B along each run-time dim: its
 * smallest, largest and hint, and a size no tile divides (odd, off the
 * hint); every combination across the dims, at most 8. */
static void bucket_sizes(Bench *b, Arena *a, const Graph *g, const Bucket *bk)
{
    int64_t cand[TE_MAX_RANK][4];
    int ncand[TE_MAX_RANK] = { 0 };
    int nrt = 0, rt[TE_MAX_RANK];
    for (int d = 0; d < g->ndims && nrt < TE_MAX_RANK; d++) {
        if (!g->dims[d].runtime || !g->dims[d].declared)
            continue;
        int k = nrt++;
        rt[k] = d;
        int64_t lo = bk->lo[d], hi = bk->hi[d], h = bk->hint[d];
        int64_t odd[4] = { h + 1, h - 1, lo + 1, hi - 1 };
        int64_t pick[4] = { lo, hi, h, 0 };
        for (int i = 0; i < 4 && !pick[3]; i++)
            if (odd[i] >= lo && odd[i] <= hi && odd[i] % 2 && odd[i] != lo && odd[i] != hi && odd[i] != h)
                pick[3] = odd[i];
        for (int i = 0; i < 4; i++) {
            bool dup = !pick[i];
            for (int j = 0; j < ncand[k] && !dup; j++)
                dup = cand[k][j] == pick[i];
            if (!dup)
                cand[k][ncand[k]++] = pick[i];
        }
        if (nrt > 1) /* a second dim: its hint only, so that the sizes stay few */
            ncand[k] = 1, cand[k][0] = h;
    }
    b->nsizes = 0;
    b->sizes = arena_alloc(a, sizeof *b->sizes * 8);
    int at[TE_MAX_RANK] = { 0 };
    for (;;) {
        int64_t *v = arena_alloc(a, sizeof *v * (size_t)(g->ndims + 1));
        for (int d = 0; d < g->ndims; d++)
            v[d] = bk->hint[d];
        for (int k = 0; k < nrt; k++)
            v[rt[k]] = cand[k][at[k]];
        b->sizes[b->nsizes++] = v;
        int k = 0;
        while (k < nrt && ++at[k] == ncand[k])
            at[k++] = 0;
        if (k == nrt || b->nsizes == 8)
            break;
    }
}

/* tune_bench_init for a bucket: inputs and a reference at each of its
 * representative sizes. */
static bool bucket_bench_init(Bench *b, Arena *a, Graph *g, const TuneOptions *o)
{
    b->bucket = o->bucket;
    b->layout_fixed = o->layout_fixed;
    b->layout_sched = o->layout_sched;
    bucket_sizes(b, a, g, o->bucket);
    b->size_inputs = arena_alloc(a, sizeof *b->size_inputs * (size_t)b->nsizes);
    b->size_ref = arena_alloc(a, sizeof *b->size_ref * (size_t)b->nsizes);
    b->size_weight = arena_alloc(a, sizeof *b->size_weight * (size_t)b->nsizes);
    /* a size's time is scaled to the work at the hint, so that each size
       counts alike: work ~ the product of the run-time sizes */
    double hint_work = 1;
    for (int d = 0; d < g->ndims; d++)
        if (g->dims[d].runtime && g->dims[d].declared)
            hint_work *= (double)o->bucket->hint[d];
    bool ok = true;
    int ncompiled = 0;
    double start = tune_now();
    for (int s = 0; s < b->nsizes && ok; s++) {
        const int64_t *dims = b->sizes[s];
        double work = 1;
        for (int d = 0; d < g->ndims; d++)
            if (g->dims[d].runtime && g->dims[d].declared)
                work *= (double)dims[d];
        b->size_weight[s] = hint_work / work / b->nsizes;
        double **in = arena_alloc(a, sizeof *in * (size_t)(g->ninputs + 1));
        b->size_inputs[s] = arena_alloc(a, sizeof **b->size_inputs * (size_t)(g->ninputs + 1));
        for (int i = 0; i < g->ninputs && ok; i++) {
            const Tensor *t = g->inputs[i];
            /* the bound's values, of which the size's are the first */
            in[i] = malloc(sizeof(double) * (size_t)(tensor_elems(t) + 1));
            if (!in[i]) {
                fprintf(stderr, "texc: out of memory for input '%s'\n", t->name);
                ok = false;
                break;
            }
            te_random_input(t, o->seed, in[i]);
            Tensor at = te_tensor_at(t, dims);
            b->size_inputs[s][i] = arena_printf(a, "%s/s%d_in%d.npy", b->workdir, s, i);
            if (npy_write(b->size_inputs[s][i], &at, in[i]) != 0) {
                fprintf(stderr, "texc: cannot write %s: %s\n", b->size_inputs[s][i], strerror(errno));
                ok = false;
            }
        }
        b->size_ref[s] = arena_alloc(a, sizeof **b->size_ref * (size_t)(g->noutputs + 1));
        if (ok) {
            bool compiled;
            double at = tune_now();
            ok = tune_reference_outputs(b->reference, g, dims, in, b->size_inputs[s], b->size_ref[s],
                                        &compiled);
            b->reference_s += tune_now() - at;
            ncompiled += compiled;
        }
        for (int i = 0; i < g->ninputs; i++)
            free(in[i]);
    }
    if (ok && !o->quiet && o->verbose)
        fprintf(stderr, "texc: the references at %d size%s took %.1f s (%s)\n", b->nsizes,
                b->nsizes == 1 ? "" : "s", tune_now() - start,
                ncompiled == b->nsizes ? "compiled reference"
                : ncompiled ? "compiled reference, then the evaluator" : "evaluator");
    if (!ok)
        return false;
    b->input_paths = b->size_inputs[0];
    b->ref = b->size_ref[0];
    set_tolerances(b, a, g);
    return true;
}

void tune_bench_free(Bench *b)
{
    for (int s = 0; s < b->nsizes; s++)
        for (int i = 0; b->size_ref[s] && i < b->g->noutputs; i++)
            free(b->size_ref[s][i]);
    if (b->nsizes)
        b->ref = NULL;
    for (int i = 0; b->ref && i < b->g->noutputs; i++)
        free(b->ref[i]);
    b->ref = NULL;
    for (int i = 0; b->host_inputs && i < b->g->ninputs; i++)
        free(b->host_inputs[i]);
    b->host_inputs = NULL;
    if (b->workdir[0])
        tune_remove_tree(b->workdir);
    b->workdir[0] = '\0';
    if (b->reference == &b->own_reference)
        tune_reference_free(b->reference);
    b->reference = NULL;
}

/* ------------------------------------------------------------------ */
/* Building.                                                           */

/* plant.c: the kernel renamed to texc_planted_KERNEL, wrapped. */
static bool write_plant(FILE *f, const Bench *b, const char *how)
{
    const Graph *g = b->g;
    const char *k = b->kernel;
    fprintf(f, "/* plant.c — TEXC_TUNE_PLANT test hook: this candidate is made to %s. */\n"
               "#define _POSIX_C_SOURCE 200809L\n"
               "#include <signal.h>\n#include <stdint.h>\n#include <time.h>\n\n",
            how);
    /* the harness's entry point (codegen/harness.c), wrapped */
    fprintf(f, "void texc_planted_%s_packed_args(void *const *args, const void *packed);\n\n"
               "void %s_packed_args(void *const *args, const void *packed)\n{\n", k, k);
    if (strcmp(how, "crash") == 0) {
        fputs("    raise(SIGSEGV);\n", f);
    } else if (strcmp(how, "hang") == 0) {
        fputs("    for (;;)\n        ;\n", f);
    } else {
        if (strcmp(how, "slow") == 0)
            fputs("    struct timespec ts = { 0, 20000000 };\n    nanosleep(&ts, NULL);\n", f);
        fprintf(f, "    texc_planted_%s_packed_args(args, packed);\n", k);
        const Tensor *t = g->outputs[0];
        int o = g->ninputs;
        if (strcmp(how, "slow") == 0)
            ;
        else if (t->dtype == DT_BOOL)
            fprintf(f, "    ((_Bool *)args[%d])[0] = !((_Bool *)args[%d])[0];\n", o, o);
        else if (t->dtype == DT_BF16)
            fprintf(f, "    ((uint16_t *)args[%d])[0] ^= 0x4000;\n", o);
        else
            fprintf(f, "    ((%s *)args[%d])[0] += 1;\n", dtype_ctype(t->dtype), o);
    }
    fputs("}\n", f);
    return !ferror(f);
}

void tune_build_child_enter(const char *dir)
{
    setpgid(0, 0);
    tune_die_with_parent();
    if (chdir(dir) != 0)
        _exit(TUNE_EXIT_WRITE);
    int log = open("build.log", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) {
        dup2(log, 1);
        dup2(log, 2);
        close(log);
    }
    diag_stream = stderr;
    diag_quiet = true;
}

/* The build child: never returns.  With HARNESS_ONLY, C is the default
 * schedule and only the harness is compiled, to harness.o. */
static _Noreturn void build_child(Bench *b, Candidate *c, bool harness_only)
{
    tune_build_child_enter(c->dir);
    Arena a = { 0 };
    /* texc's own build sequence (sched/build.c), on this child's copy of
       the graph: its layouts are this candidate's, or those a build gives
       every variant (the hint bucket's schedule's: driver/main.c) */
    if (b->layout_fixed)
        sch_build_layout(&(SchedBuild){ .arena = &a, .g = b->g, .target = b->target,
                                        .sched = b->layout_sched });
    LoweredFunc fn = { 0 };
    SchedState *st = sch_build(&(SchedBuild){ .arena = &a, .g = b->g, .target = b->target,
                                              .sched = c->sched, .bucket = b->bucket,
                                              .keep_layout = b->layout_fixed, .sm = b->sm },
                               &fn);
    if (!st)
        _exit(TUNE_EXIT_SCHEDULE);
    FILE *trace = fopen("schedule.txt", "w");
    if (!trace)
        _exit(TUNE_EXIT_WRITE);
    sch_print_trace(trace, st);
    if (b->cuda) {
        if (fclose(trace) != 0)
            _exit(TUNE_EXIT_WRITE);
        tune_cuda_build(b, st, &fn, &a);
    }
    const char *plant = harness_only ? NULL : tune_plant_of(b, c->trial);
    const char *c_path = arena_printf(&a, "%s.c", b->kernel);
    const char *h_path = arena_printf(&a, "%s.h", b->kernel);
    /* (a profiled build's harness prints the table: it reads the
       kernel's header, which says the kernel is profiled) */
    bool own_harness = harness_only || !b->harness_obj[0] || b->profile;
    FILE *fc = fopen(c_path, "w"), *fh = fopen(h_path, "w");
    FILE *fm = own_harness ? fopen("harness.c", "w") : NULL;
    FILE *fp = plant ? fopen("plant.c", "w") : NULL;
    if (!fc || !fh || (own_harness && !fm) || (plant && !fp))
        _exit(TUNE_EXIT_WRITE);
    if (plant)
        fprintf(fc, "#define %s_packed_args texc_planted_%s_packed_args /* TEXC_TUNE_PLANT */\n",
                b->kernel, b->kernel);
    CodegenOptions co = { .name = b->kernel, .source_path = b->source, .target = b->target,
                          .profile = b->profile };
    CgVariant v = { st, &fn, b->bucket, NULL, NULL };
    bool ok = cg_emit_c_variants(&v, 1, &co, fc, fh) &&
              (!own_harness || cg_emit_harness(&a, b->g, b->kernel, b->profile ? h_path : NULL, NULL, fm)) &&
              (!plant || write_plant(fp, b, plant));
    ok = fclose(trace) == 0 && ok;
    ok = fclose(fc) == 0 && ok;
    ok = fclose(fh) == 0 && ok;
    if (fm)
        ok = fclose(fm) == 0 && ok;
    if (fp)
        ok = fclose(fp) == 0 && ok;
    if (!ok)
        _exit(TUNE_EXIT_WRITE);
    /* the compiler and flags of texc -c (codegen/kernel_cc.c), then the
       candidate's files */
    const char *words[8];
    int n = 0;
    if (harness_only) {
        words[n++] = "-c";
        words[n++] = "harness.c";
    } else {
        words[n++] = "-o";
        words[n++] = "run";
        words[n++] = c_path;
        words[n++] = own_harness ? "harness.c" : b->harness_obj;
        if (plant)
            words[n++] = "plant.c";
        words[n++] = "-lm";
    }
    char **argv = cg_kernel_cc_argv(&a, words, n);
    /* the compiler's own temporary files (ccXXXXXX.s) in the candidate's
       folder, the cwd: a tuner killed mid-build leaves them where the next
       run's cleanup of its folders removes them, not in $TMPDIR */
    if (setenv("TMPDIR", ".", 1) != 0)
        _exit(TUNE_EXIT_EXEC);
    execvp(argv[0], argv);
    fprintf(stderr, "texc: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(TUNE_EXIT_EXEC);
}

/* Compiles the harness once (it is the same for every candidate), into
 * the Bench's directory; candidates link harness.o.  If that fails, each
 * candidate compiles its own. */
static void build_harness(Bench *b)
{
    b->harness_tried = true;
    Candidate c = { 0 };
    Schedule none = { 0 };
    none.target = b->target;
    c.sched = &none;
    if (snprintf(c.dir, sizeof c.dir, "%s/harness", b->workdir) >= (int)sizeof c.dir - 16)
        return;
    if (mkdir(c.dir, 0700) != 0)
        return;
    fflush(NULL);
    double start = tune_now();
    pid_t pid = fork();
    if (pid == 0)
        build_child(b, &c, true);
    if (pid < 0)
        return;
    setpgid(pid, pid);
    int wstatus;
    for (;;) {
        pid_t r = waitpid(pid, &wstatus, WNOHANG);
        if (r == pid)
            break;
        if ((r < 0 && errno != EINTR) || tune_now() - start > b->compile_limit || tune_interrupted) {
            kill(-pid, SIGKILL);
            while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
                ;
            return;
        }
        tune_sleep_ms(5);
    }
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
        snprintf(b->harness_obj, sizeof b->harness_obj, "%.4000s/harness.o", c.dir);
}

static void copy_text(char *out, size_t size, const char *text)
{
    size_t n = strlen(text);
    if (n >= size)
        n = size - 1;
    memcpy(out, text, n);
    out[n] = '\0';
}

void tune_first_error(const char *dir, const char *file, char *out, size_t size)
{
    char path[4300];
    snprintf(path, sizeof path, "%.4000s/%s", dir, file);
    FILE *f = fopen(path, "r");
    out[0] = '\0';
    if (!f)
        return;
    char line[512];
    bool found = false;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!out[0] && line[0])
            copy_text(out, size, line);
        if (!found && (strstr(line, "error") || strstr(line, "internal"))) {
            copy_text(out, size, line);
            found = true;
        }
    }
    fclose(f);
}

static char *read_text(Arena *a, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    char chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + got + 1 > cap) {
            cap = (len + got + 1) * 2;
            char *nb = realloc(buf, cap);
            if (!nb)
                break;
            buf = nb;
        }
        memcpy(buf + len, chunk, got);
        len += got;
    }
    fclose(f);
    char *text = buf ? arena_strndup(a, buf, len) : arena_strdup(a, "");
    free(buf);
    return text;
}

static void build_done(Bench *b, Candidate *c, int wstatus, bool killed, Arena *a)
{
    c->build_s = tune_now() - c->started;
    c->pid = 0;
    if (killed) {
        c->status = TS_COMPILE_TIMEOUT;
        snprintf(c->detail, sizeof c->detail, "the compiler ran past %.0f s", b->compile_limit);
    } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
        c->status = TS_OK;
    } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == TUNE_EXIT_SCHEDULE) {
        c->status = TS_INVALID;
        tune_first_error(c->dir, "build.log", c->detail, sizeof c->detail);
    } else if (WIFSIGNALED(wstatus)) {
        /* NVRTC runs in the build child itself (cuda_measure.c): its
           crash is the compiler's, not a bug in texc */
        char marker[4300], why[200];
        snprintf(marker, sizeof marker, "%s/nvrtc.started", c->dir);
        bool nvrtc = b->cuda && access(marker, F_OK) == 0;
        c->status = nvrtc ? TS_COMPILE_ERROR : TS_INVALID;
        tune_first_error(c->dir, "build.log", why, sizeof why);
        snprintf(c->detail, sizeof c->detail, "%s crashed building it (%s)%s%s",
                 nvrtc ? "NVRTC" : "texc", strsignal(WTERMSIG(wstatus)), why[0] ? ": " : "", why);
    } else {
        c->status = TS_COMPILE_ERROR;
        tune_first_error(c->dir, "build.log", c->detail, sizeof c->detail);
    }
    char path[4300];
    snprintf(path, sizeof path, "%s/schedule.txt", c->dir);
    c->schedule_text = read_text(a, path);
    if (b->verbose && c->status != TS_OK)
        fprintf(stderr, "texc: candidate %d: %s: %s\n", c->trial, tune_status_name(c->status),
                c->detail);
}

void tune_build(Bench *b, Candidate **cands, int n, int jobs)
{
    Arena *a = b->arena; /* schedule texts live as long as the run */
    int next = 0, running = 0;
    if (jobs < 1)
        jobs = 1;
    if (!b->harness_tried && !b->cuda && !b->profile)
        build_harness(b);
    while (next < n || running > 0) {
        while (running < jobs && next < n && !tune_interrupted) {
            Candidate *c = cands[next++];
            snprintf(c->dir, sizeof c->dir, "%s/c%d.XXXXXX", b->workdir, c->trial);
            if (!mkdtemp(c->dir)) {
                c->status = TS_COMPILE_ERROR;
                snprintf(c->detail, sizeof c->detail, "cannot create a directory: %s",
                         strerror(errno));
                c->dir[0] = '\0';
                continue;
            }
            fflush(NULL);
            c->started = tune_now();
            pid_t pid = fork();
            if (pid == 0)
                build_child(b, c, false);
            if (pid < 0) {
                c->status = TS_COMPILE_ERROR;
                snprintf(c->detail, sizeof c->detail, "cannot fork: %s", strerror(errno));
                continue;
            }
            setpgid(pid, pid);
            c->pid = pid;
            running++;
        }
        if (running == 0)
            break;
        tune_sleep_ms(5);
        for (int i = 0; i < n; i++) {
            Candidate *c = cands[i];
            if (c->pid <= 0)
                continue;
            int wstatus;
            pid_t r = waitpid(c->pid, &wstatus, WNOHANG);
            bool late = tune_now() - c->started > b->compile_limit;
            if (r == 0 && (late || tune_interrupted)) {
                kill(-c->pid, SIGKILL);
                while (waitpid(c->pid, &wstatus, 0) < 0 && errno == EINTR)
                    ;
                r = c->pid;
                if (tune_interrupted && !late) {
                    c->pid = 0;
                    c->status = TS_COUNT;
                    running--;
                    continue;
                }
            }
            if (r == c->pid) {
                build_done(b, c, wstatus, late, a);
                running--;
            }
        }
    }
    for (int i = next; i < n; i++)
        cands[i]->status = TS_COUNT; /* interrupted before it was built */
}

/* ------------------------------------------------------------------ */
/* Running.                                                            */

/* Runs C's harness with -r REPEATS under LIMIT seconds.  Returns the
 * status; on TS_OK *SECONDS is the median it printed and C's copies the
 * number of input copies it rotated through. */
static TuneStatus run_harness(Bench *b, Candidate *c, int repeats, double limit, double *seconds)
{
    const Graph *g = b->g;
    int nargs = g->ninputs + g->noutputs;
    char **argv = calloc((size_t)nargs + 7 + (size_t)g->ndims, sizeof *argv);
    char count[32];
    snprintf(count, sizeof count, "%d", repeats);
    int n = 0;
    argv[n++] = "./run";
    /* a bucket's variant: the run-time sizes first (the harness's) */
    int first_size = n;
    for (int d = 0; b->nsizes && d < g->ndims; d++)
        if (g->dims[d].runtime && g->dims[d].declared)
            if (asprintf(&argv[n++], "%s=%lld", g->dims[d].name, (long long)b->sizes[b->cur][d]) < 0)
                argv[n - 1] = NULL;
    int last_size = n;
    for (int i = 0; i < g->ninputs; i++)
        argv[n++] = b->input_paths[i];
    for (int i = 0; i < g->noutputs; i++) {
        char *p = NULL;
        if (asprintf(&p, "out%d.npy", i) < 0)
            p = NULL;
        argv[n++] = p;
    }
    argv[n++] = "-r";
    argv[n++] = count;
    if (b->warm) { /* one copy: each call finds the last one's data in cache */
        argv[n++] = "-c";
        argv[n++] = "1";
    }
    argv[n] = NULL;
    char stdout_path[4300];
    snprintf(stdout_path, sizeof stdout_path, "%s/time.txt", c->dir);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        tune_die_with_parent();
        if (chdir(c->dir) != 0)
            _exit(126);
        int out = open("time.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int err = open("run.log", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out < 0 || err < 0)
            _exit(126);
        dup2(out, 1);
        dup2(err, 2);
        close(out);
        close(err);
        /* a crash is a status here, not a core file */
        struct rlimit none = { 0, 0 };
        setrlimit(RLIMIT_CORE, &none);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (b->cuda)
            tune_cuda_run(b, c, repeats); /* this process runs it: see cuda_measure.c */
        execv(argv[0], argv);
        _exit(127);
    }
    for (int i = 0; i < g->noutputs; i++)
        free(argv[last_size + g->ninputs + i]);
    for (int i = first_size; i < last_size; i++)
        free(argv[i]);
    free(argv);
    if (pid < 0) {
        snprintf(c->detail, sizeof c->detail, "cannot fork: %s", strerror(errno));
        return TS_RUN_ERROR;
    }
    setpgid(pid, pid);
    double start = tune_now();
    int wstatus = 0, ms = 1;
    for (;;) {
        pid_t r = waitpid(pid, &wstatus, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            snprintf(c->detail, sizeof c->detail, "lost the child: %s", strerror(errno));
            return TS_RUN_ERROR;
        }
        if (tune_now() - start > limit || tune_interrupted) {
            kill(-pid, SIGKILL);
            while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
                ;
            if (tune_interrupted)
                return TS_COUNT;
            snprintf(c->detail, sizeof c->detail, "killed after %.1f s (-r %d)", limit, repeats);
            return TS_TIMEOUT;
        }
        tune_sleep_ms(ms);
        if (ms < 20)
            ms++;
    }
    if (WIFSIGNALED(wstatus)) {
        snprintf(c->detail, sizeof c->detail, "%s", strsignal(WTERMSIG(wstatus)));
        return TS_CRASH;
    }
    if (b->cuda && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == TUNE_EXIT_FAULT) {
        char why[200];
        tune_first_error(c->dir, "run.log", why, sizeof why);
        snprintf(c->detail, sizeof c->detail, "the kernel faulted: %s", why);
        return TS_CRASH;
    }
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
        char why[200];
        tune_first_error(c->dir, "run.log", why, sizeof why);
        snprintf(c->detail, sizeof c->detail, "exit status %d%s%s", WEXITSTATUS(wstatus),
                 why[0] ? ": " : "", why);
        return TS_RUN_ERROR;
    }
    FILE *f = fopen(stdout_path, "r");
    double t = -1;
    int copies = 0;
    if (!f || fscanf(f, "%lf %d", &t, &copies) != 2 || !(t >= 0) || copies < 1) {
        if (f)
            fclose(f);
        snprintf(c->detail, sizeof c->detail, "the harness printed no time");
        return TS_RUN_ERROR;
    }
    fclose(f);
    *seconds = t;
    c->copies = copies;
    return TS_OK;
}

/* Reads output I as the harness wrote it (its own dtypes: bf16 as '<u2'
 * bits) into DATA.  Returns false with C's detail set. */
static bool read_output(Bench *b, Candidate *c, int i, double *data)
{
    const Tensor *t = b->g->outputs[i];
    char path[4300];
    snprintf(path, sizeof path, "%s/out%d.npy", c->dir, i);
    FILE *f = fopen(path, "rb");
    unsigned char head[10];
    if (!f || fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) != 0 ||
        fseek(f, (long)(head[8] | head[9] << 8), SEEK_CUR) != 0) {
        if (f)
            fclose(f);
        snprintf(c->detail, sizeof c->detail, "output %d was not written", i);
        return false;
    }
    int64_t n = b->nsizes ? te_elems_at(t, b->sizes[b->cur]) : tensor_elems(t);
    int size = dtype_bytes(t->dtype);
    unsigned char *raw = malloc((size_t)(n * size) + 1);
    bool ok = raw && fread(raw, (size_t)size, (size_t)n, f) == (size_t)n;
    fclose(f);
    for (int64_t k = 0; ok && k < n; k++) {
        const unsigned char *p = raw + k * size;
        switch (t->dtype) {
        case DT_BOOL: data[k] = p[0] != 0; break;
        case DT_I32: { int32_t v; memcpy(&v, p, 4); data[k] = v; break; }
        case DT_U8: data[k] = p[0]; break;
        case DT_I8: { int8_t v; memcpy(&v, p, 1); data[k] = v; break; }
        case DT_F16: { uint16_t v; memcpy(&v, p, 2); data[k] = dtype_f16_value(v); break; }
        case DT_BF16: {
            uint16_t v;
            memcpy(&v, p, 2);
            uint32_t bits = (uint32_t)v << 16;
            float fv;
            memcpy(&fv, &bits, 4);
            data[k] = fv;
            break;
        }
        case DT_F32: { float v; memcpy(&v, p, 4); data[k] = v; break; }
        case DT_F64: { double v; memcpy(&v, p, 8); data[k] = v; break; }
        default: ok = false; break;
        }
    }
    free(raw);
    if (!ok)
        snprintf(c->detail, sizeof c->detail, "output %d is short", i);
    return ok;
}

/* Compares every output with the reference; false (wrong) with the
 * worst element in C's detail. */
static bool outputs_match(Bench *b, Candidate *c, bool *readable)
{
    const Graph *g = b->g;
    *readable = true;
    c->max_err = 0;
    c->worst_ratio = 0;
    bool match = true;
    for (int i = 0; i < g->noutputs; i++) {
        const Tensor *t = g->outputs[i];
        int64_t n = b->nsizes ? te_elems_at(t, b->sizes[b->cur]) : tensor_elems(t);
        double *got = malloc(sizeof *got * (size_t)n + 1);
        if (!got || !read_output(b, c, i, got)) {
            free(got);
            *readable = false;
            return false;
        }
        const double *ref = b->ref[i];
        int64_t bad = 0, first_bad = 0;
        double worst_ratio = 0;
        for (int64_t k = 0; k < n; k++) {
            double r = ref[k], v = got[k];
            double err = fabs(v - r);
            double tol = b->atol[i] + b->rtol[i] * fabs(r);
            bool ok;
            if (isnan(r))
                ok = isnan(v);
            else if (isinf(r))
                ok = v == r;
            else
                ok = !isnan(v) && err <= tol;
            if (isnan(v) && !isnan(r))
                c->max_err = NAN;
            else if (!isinf(r) && err > c->max_err)
                c->max_err = err;
            if (!ok) {
                if (bad++ == 0)
                    first_bad = k;
            } else if (tol > 0 && !isnan(r) && !isinf(r) && err / tol > worst_ratio) {
                worst_ratio = err / tol;
            }
        }
        if (worst_ratio > c->worst_ratio)
            c->worst_ratio = worst_ratio;
        if (bad) {
            match = false;
            snprintf(c->detail, sizeof c->detail,
                     "%lld of %lld elements of '%s' differ; first at %lld: ref %.9g, got %.9g",
                     (long long)bad, (long long)n, t->name, (long long)first_bad, ref[first_bad],
                     got[first_bad]);
        }
        free(got);
        if (!match)
            break;
    }
    return match;
}

static void measure_one(Bench *b, Candidate *c, double run_limit);

void tune_measure(Bench *b, Candidate *c, double run_limit)
{
    if (!b->nsizes) {
        measure_one(b, c, run_limit);
        return;
    }
    /* a bucket: each representative size, the weighted sum */
    double time = 0, first = 0;
    int repeats = 0;
    for (int s = 0; s < b->nsizes; s++) {
        b->cur = s;
        b->input_paths = b->size_inputs[s];
        b->ref = b->size_ref[s];
        measure_one(b, c, run_limit);
        if (c->status != TS_OK) {
            char at[256];
            snprintf(at, sizeof at, "%s", c->detail);
            char *sz = "";
            for (int d = 0; d < b->g->ndims; d++)
                if (b->g->dims[d].runtime && b->g->dims[d].declared)
                    sz = arena_printf(b->arena, "%s%s%s=%lld", sz, *sz ? " " : "", b->g->dims[d].name,
                                      (long long)b->sizes[s][d]);
            snprintf(c->detail, sizeof c->detail, "at %.60s: %.180s", sz, at);
            break;
        }
        time += b->size_weight[s] * c->time_s;
        first += b->size_weight[s] * c->first_s;
        repeats += c->repeats;
    }
    b->cur = 0;
    b->input_paths = b->size_inputs[0];
    b->ref = b->size_ref[0];
    if (c->status == TS_OK) {
        c->time_s = time;
        c->first_s = first;
        c->repeats = repeats;
    }
}

static void measure_one(Bench *b, Candidate *c, double run_limit)
{
    double t1 = 0;
    /* run 1: a warm-up and one timed run; the output is checked */
    TuneStatus s = run_harness(b, c, 1, 1.0 + 2 * run_limit, &t1);
    if (s != TS_OK) {
        c->status = s;
        return;
    }
    bool readable;
    if (!outputs_match(b, c, &readable)) {
        c->status = readable ? TS_WRONG : TS_RUN_ERROR;
        return;
    }
    c->first_s = t1;
    c->time_s = t1;
    c->repeats = 1;
    /* run 2: enough repeats to last min_time, the median; when run 1 was
       an outlier (a time slice lost on a busy machine), the repeats were
       too few: once more, sized by run 2's median */
    for (int round = 0; round < 2 && t1 < 1.0; round++) {
        double per = t1 > 1e-7 ? t1 : 1e-7;
        double want = ceil(b->min_time / per);
        int r = want < 5 ? 5 : want > b->max_repeats ? b->max_repeats : (int)want;
        double t = 0;
        /* generous: a busy machine can stretch short repeats a lot */
        double limit = fmax(10.0, 2.0 + 20 * (r + 1) * per);
        if (limit > 1.0 + (r + 1) * run_limit)
            limit = 1.0 + (r + 1) * run_limit;
        s = run_harness(b, c, r, limit, &t);
        if (s != TS_OK) {
            c->status = s;
            return;
        }
        if (!outputs_match(b, c, &readable)) {
            c->status = readable ? TS_WRONG : TS_RUN_ERROR;
            return;
        }
        c->time_s = t;
        c->repeats = r;
        if (t * r >= 0.5 * b->min_time)
            break;
        t1 = t;
    }
    c->status = TS_OK;
}

/* TEXC_TUNE_KEEP=DIR: what candidate C built, copied to DIR/trialN/
 * (a test hook: tests/tune_cuda.sh checks every cubin of a space). */
static void keep_build(const Bench *b, const Candidate *c)
{
    char dest[4300];
    snprintf(dest, sizeof dest, "%s/trial%d", b->keep, c->trial);
    if (mkdir(b->keep, 0755) != 0 && errno != EEXIST)
        return;
    if (mkdir(dest, 0755) != 0 && errno != EEXIST)
        return;
    char c_file[300];
    snprintf(c_file, sizeof c_file, "%s.c", b->kernel);
    const char *const files[] = { "kernel.cubin", "launch.txt", "kernel.cu", c_file,
                                  "schedule.txt", "build.log", "run.log" };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char from[4400], to[4400];
        snprintf(from, sizeof from, "%s/%s", c->dir, files[i]);
        snprintf(to, sizeof to, "%s/%s", dest, files[i]);
        FILE *in = fopen(from, "rb");
        FILE *out = in ? fopen(to, "wb") : NULL;
        char buf[8192];
        size_t n;
        while (out && (n = fread(buf, 1, sizeof buf, in)) > 0)
            if (fwrite(buf, 1, n, out) != n)
                break;
        if (out)
            fclose(out);
        if (in)
            fclose(in);
    }
}

void tune_discard(Bench *b, Candidate *c)
{
    if (c->dir[0] && b->keep)
        keep_build(b, c);
    if (c->dir[0])
        tune_remove_tree(c->dir);
    c->dir[0] = '\0';
}

/* ------------------------------------------------------------------ */
/* Several devices.                                                    */

/* What a measuring child sends its parent: the results of tune_measure. */
typedef struct Measured {
    TuneStatus status;
    char detail[256];
    double time_s, first_s, max_err, worst_ratio;
    int repeats, copies;
} Measured;

/* The measuring child of one candidate on one device. */
static _Noreturn void measure_child(Bench *b, Candidate *c, double run_limit, int fd)
{
    tune_die_with_parent();
    tune_measure(b, c, run_limit);
    Measured m = { c->status, "", c->time_s, c->first_s, c->max_err, c->worst_ratio,
                   c->repeats, c->copies };
    memcpy(m.detail, c->detail, sizeof m.detail);
    /* smaller than PIPE_BUF: one write, never interleaved or short */
    _exit(write(fd, &m, sizeof m) == (ssize_t)sizeof m ? 0 : 1);
}

void tune_measure_devices(Bench *b, Candidate **cands, int n, double run_limit)
{
    int slots = b->ndevices > 0 ? b->ndevices : 1;
    pid_t pid[TUNE_MAX_DEVICES] = { 0 };
    int fd[TUNE_MAX_DEVICES];
    Candidate *on[TUNE_MAX_DEVICES] = { 0 };
    int next = 0, running = 0;
    while (next < n || running > 0) {
        for (int s = 0; s < slots && next < n; s++) {
            if (on[s])
                continue;
            Candidate *c = cands[next++];
            if (tune_interrupted) {
                c->status = TS_COUNT;
                continue;
            }
            c->device = b->devices[s];
            int fds[2];
            if (pipe(fds) != 0) {
                c->status = TS_RUN_ERROR;
                snprintf(c->detail, sizeof c->detail, "cannot make a pipe: %s", strerror(errno));
                continue;
            }
            fflush(NULL);
            pid_t p = fork();
            if (p == 0) {
                close(fds[0]);
                measure_child(b, c, run_limit, fds[1]);
            }
            close(fds[1]);
            if (p < 0) {
                close(fds[0]);
                c->status = TS_RUN_ERROR;
                snprintf(c->detail, sizeof c->detail, "cannot fork: %s", strerror(errno));
                continue;
            }
            pid[s] = p;
            fd[s] = fds[0];
            on[s] = c;
            running++;
        }
        if (running == 0)
            break;
        tune_sleep_ms(5);
        for (int s = 0; s < slots; s++) {
            if (!on[s])
                continue;
            if (tune_interrupted)
                kill(pid[s], SIGTERM); /* it stops its run, reports it unmeasured */
            int wstatus;
            pid_t r = waitpid(pid[s], &wstatus, WNOHANG);
            if (r == 0 || (r < 0 && errno == EINTR))
                continue;
            Candidate *c = on[s];
            Measured m;
            ssize_t got;
            while ((got = read(fd[s], &m, sizeof m)) < 0 && errno == EINTR)
                ;
            close(fd[s]);
            if (got == (ssize_t)sizeof m) {
                c->status = m.status;
                memcpy(c->detail, m.detail, sizeof c->detail);
                c->detail[sizeof c->detail - 1] = '\0';
                c->time_s = m.time_s;
                c->first_s = m.first_s;
                c->max_err = m.max_err;
                c->worst_ratio = m.worst_ratio;
                c->repeats = m.repeats;
                c->copies = m.copies;
            } else {
                c->status = TS_RUN_ERROR;
                snprintf(c->detail, sizeof c->detail, "the process measuring it on device %d died",
                         c->device);
            }
            on[s] = NULL;
            running--;
        }
    }
}
