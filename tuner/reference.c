/* reference.c — the compiled reference: the outputs every candidate is
 * checked against, computed by texc's own C backend.
 *
 * The evaluator (lang/eval.c) says what a program means, but it is an
 * interpreter: at ~30 ns a multiply-add it took 35 of the 43 s of
 * `texc samples/matmul_gelu.te --tune`, and minutes per size of a
 * run-time-size bucket at M = 4096.  So the tuner compiles the program
 * once more, for itself, as the evaluator computes it:
 *   - in double: te_widen_floats (lang/widen.c) retypes every f32, f16
 *     and bf16 value to f64 and keeps the rounding of each cast, so that
 *     each value is te_eval's; inputs keep their dtype (the harness reads
 *     the .npy files the candidates read) and float outputs are written
 *     as f64, unrounded, as te_eval returns them;
 *   - naively: sch_naive (sched/default.c), each stage its own loop nest
 *     in its variables' order, no inlining, tiling or vectorizing, the
 *     outermost loop parallel; layouts off (nothing prepacked);
 *   - with the compiler and flags of every candidate (cg_kernel_cc_argv)
 *     plus -ffp-contract=off: no a * b + c fused into one rounding, which
 *     the evaluator (built for the baseline ISA) never does either.
 * With the same libm, that makes its outputs the evaluator's to the bit
 * on the samples; tests/reference.sh holds them to 1e-12 relative, and
 * integer outputs to exact equality.
 *
 * It is built once per tuning run, the first time a reference is asked
 * for, in a directory of its own (texc-tune.XXXXXX with a pid file, which
 * a later tuner removes if this one is killed: measure.c's remove_stale),
 * and for a program with run-time dims once for all its sizes (the one
 * variant of the whole ranges, whose harness takes the sizes first): the
 * buckets' runs share it through TuneOptions.reference.  The build runs
 * in a child process (the schedule work too, as a candidate's does) under
 * the candidates' compile limit; each run in a child under a limit of
 * 10 s plus 10 ns per innermost step (a third of the evaluator's pace),
 * so a crash or a hang costs its time, never the tuning run.
 *
 * Where the compiled reference cannot be had, the evaluator computes the
 * reference, for that call and every later one of the run: G holds what
 * the C backend cannot compute as te_eval does (te_widen_floats says why:
 * with -v), or the build failed, or a run crashed, failed, wrote
 * unreadable outputs or ran past its limit (said always, unless -q).
 *
 * Test hook: TEXC_TUNE_REFERENCE=evaluator uses the evaluator from the
 * start; =crash and =hang make each run raise SIGSEGV or spin (under a
 * 1 s limit), to test the fallback.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "tuner/tuner.h"

/* The exit status of a build child whose graph the C backend cannot
 * compute as the evaluator does (te_widen_floats said why, in the log). */
enum { REF_EXIT_SEMANTICS = 94 };

static const char ref_name[] = "texc_reference";

void tune_reference_init(Reference *r, const TuneOptions *o)
{
    memset(r, 0, sizeof *r);
    r->source = o->source_path;
    r->verbose = o->verbose;
    r->quiet = o->quiet;
    const char *hook = getenv("TEXC_TUNE_REFERENCE");
    if (hook && strcmp(hook, "evaluator") == 0)
        r->evaluator = true;
    else if (hook && (strcmp(hook, "crash") == 0 || strcmp(hook, "hang") == 0))
        r->plant = strcmp(hook, "crash") == 0 ? "crash" : "hang";
    else if (hook && *hook)
        fprintf(stderr, "texc: warning: TEXC_TUNE_REFERENCE: ignoring '%s'\n", hook);
}

void tune_reference_free(Reference *r)
{
    if (r->dir[0])
        tune_remove_tree(r->dir);
    r->dir[0] = '\0';
}

/* The build child: widens its copy of G, lowers it under the naive
 * schedule, writes the C and the harness, execs the compiler. */
static _Noreturn void build_child(const Reference *r, Graph *g)
{
    tune_build_child_enter(r->dir);
    Arena a = { 0 };
    const char *why = te_widen_floats(&a, g);
    if (why) {
        fprintf(stderr, "%s\n", why);
        _exit(REF_EXIT_SEMANTICS);
    }
    g->layouts = false;
    LoweredFunc fn = { 0 };
    SchedState *st = sch_build(&(SchedBuild){ .arena = &a, .g = g, .target = TARGET_CPU,
                                              .naive = true },
                               &fn);
    if (!st)
        _exit(TUNE_EXIT_SCHEDULE);
    FILE *fc = fopen("reference.c", "w"), *fh = fopen("texc_reference.h", "w");
    FILE *fm = fopen("harness.c", "w");
    if (!fc || !fh || !fm)
        _exit(TUNE_EXIT_WRITE);
    CodegenOptions co = { .name = ref_name, .header = "texc_reference.h", .source_path = r->source,
                          .target = TARGET_CPU,
                          .schedule_from = "the tuner's compiled reference: naive, in double" };
    CgVariant v = { st, &fn, NULL, NULL, NULL };
    bool ok = cg_emit_c_variants(&v, 1, &co, fc, fh) &&
              cg_emit_harness(&a, g, ref_name, "texc_reference.h", NULL, fm);
    ok = fclose(fc) == 0 && ok;
    ok = fclose(fh) == 0 && ok;
    ok = fclose(fm) == 0 && ok;
    if (!ok)
        _exit(TUNE_EXIT_WRITE);
    const char *words[] = { "-ffp-contract=off", "-o", "run", "reference.c", "harness.c", "-lm" };
    char **argv = cg_kernel_cc_argv(&a, words, (int)(sizeof words / sizeof words[0]));
    if (setenv("TMPDIR", ".", 1) != 0)
        _exit(TUNE_EXIT_EXEC);
    execvp(argv[0], argv);
    fprintf(stderr, "texc: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(TUNE_EXIT_EXEC);
}

/* Gives up the compiled reference for the rest of the run, saying why
 * (with -v only where G is what it cannot compute). */
static void give_up(Reference *r, bool always, const char *fmt, const char *what)
{
    r->compiled = false;
    r->evaluator = true;
    if (r->quiet || (!always && !r->verbose))
        return;
    fputs("texc: ", stderr);
    fprintf(stderr, fmt, what);
    fputs("; the evaluator computes the reference outputs instead\n", stderr);
}

/* Builds the compiled reference; false (after give_up) if it cannot. */
static bool build(Reference *r, Graph *g)
{
    r->tried = true;
    if (!tune_make_workdir(tune_tmp_root(), r->dir, sizeof r->dir)) {
        give_up(r, true, "cannot create a directory for the compiled reference (%s)", strerror(errno));
        return false;
    }
    fflush(NULL);
    double start = tune_now();
    pid_t pid = fork();
    if (pid == 0)
        build_child(r, g);
    if (pid < 0) {
        give_up(r, true, "cannot fork to build the compiled reference (%s)", strerror(errno));
        return false;
    }
    setpgid(pid, pid);
    int wstatus = 0;
    int waited = tune_wait(pid, 120, &wstatus);
    char why[300];
    if (waited == 2)
        return false; /* interrupted: tune_run says so */
    if (waited == 1) {
        give_up(r, true, "the compiled reference did not build in %s", "120 s");
        return false;
    }
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
        r->compiled = true;
        if (r->verbose && !r->quiet)
            fprintf(stderr, "texc: built the compiled reference in %.1f s\n", tune_now() - start);
        return true;
    }
    tune_first_error(r->dir, "build.log", why, sizeof why);
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == REF_EXIT_SEMANTICS)
        give_up(r, false, "the compiled reference cannot compute this program as the evaluator "
                          "does: %s", why);
    else if (WIFSIGNALED(wstatus))
        give_up(r, true, "texc crashed building the compiled reference (%s)",
                strsignal(WTERMSIG(wstatus)));
    else
        give_up(r, true, "the compiled reference did not build: %s", why[0] ? why : "(no message)");
    return false;
}

/* T's shape at DIMS, as a static tensor of the dtype the reference
 * writes it in (floats as f64), for npy_read. */
static Tensor written_as(const Tensor *t, const int64_t *dims)
{
    Tensor s = te_tensor_at(t, dims);
    if (dtype_is_float(t->dtype))
        s.dtype = DT_F64;
    return s;
}

/* The innermost steps of E's longest reduction (at the bounds). */
static double longest_reduction(const Expr *e)
{
    double best = 1, n = 1;
    for (int i = 0; i < e->naxes; i++)
        n *= (double)e->axes[i]->extent;
    if (e->kind == EX_REDUCE)
        best = n;
    for (int i = 0; i < e->nargs; i++) {
        double inner = longest_reduction(e->args[i]);
        if (inner > best)
            best = inner;
    }
    return best;
}

/* G's work as measure.c counts it: each stage's elements times its
 * longest reduction, at the bounds of its run-time dims. */
static double work_of(const Graph *g)
{
    double work = 0;
    for (int i = 0; i < g->ntensors; i++)
        if (g->tensors[i]->kind == TK_STAGE)
            work += (double)tensor_elems(g->tensors[i]) * longest_reduction(g->tensors[i]->body);
    return work;
}

/* One run of the compiled reference at DIMS; false after give_up. */
static bool run(Reference *r, const Graph *g, const int64_t *dims, char *const *input_paths,
                double **out)
{
    int nargs = g->ndims + g->ninputs + g->noutputs + 2;
    char **argv = calloc((size_t)nargs, sizeof *argv);
    char **owned = calloc((size_t)nargs, sizeof *owned);
    if (!argv || !owned) {
        free(argv);
        free(owned);
        give_up(r, true, "out of memory for %s", "the compiled reference");
        return false;
    }
    int n = 0, nowned = 0;
    argv[n++] = "./run";
    for (int d = 0; dims && d < g->ndims; d++)
        if (g->dims[d].runtime && g->dims[d].declared &&
            asprintf(&owned[nowned++], "%s=%lld", g->dims[d].name, (long long)dims[d]) >= 0)
            argv[n++] = owned[nowned - 1];
    for (int i = 0; i < g->ninputs; i++)
        argv[n++] = input_paths[i];
    for (int i = 0; i < g->noutputs; i++)
        if (asprintf(&owned[nowned++], "out%d.npy", i) >= 0)
            argv[n++] = owned[nowned - 1];
    argv[n] = NULL;
    double limit = r->plant && strcmp(r->plant, "hang") == 0 ? 1.0 : 10.0 + 1e-8 * work_of(g);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        tune_die_with_parent();
        int log = chdir(r->dir) == 0 ? open("run.log", O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;
        if (log < 0)
            _exit(TUNE_EXIT_WRITE);
        dup2(log, 1);
        dup2(log, 2);
        close(log);
        struct rlimit none = { 0, 0 };
        setrlimit(RLIMIT_CORE, &none);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (r->plant && strcmp(r->plant, "crash") == 0) {
            signal(SIGSEGV, SIG_DFL); /* not a sanitizer's report: a crash */
            raise(SIGSEGV);
        }
        while (r->plant && strcmp(r->plant, "hang") == 0)
            ;
        execv(argv[0], argv);
        _exit(TUNE_EXIT_EXEC);
    }
    bool ok = false;
    if (pid < 0) {
        give_up(r, true, "cannot fork to run the compiled reference (%s)", strerror(errno));
        goto done;
    }
    setpgid(pid, pid);
    int wstatus = 0;
    int waited = tune_wait(pid, limit, &wstatus);
    char why[300];
    if (waited == 2)
        goto done; /* interrupted: tune_run says so */
    if (waited == 1) {
        snprintf(why, sizeof why, "%.0f s", limit);
        give_up(r, true, "the compiled reference ran past its limit of %s", why);
        goto done;
    }
    if (WIFSIGNALED(wstatus)) {
        give_up(r, true, "the compiled reference crashed (%s)", strsignal(WTERMSIG(wstatus)));
        goto done;
    }
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
        tune_first_error(r->dir, "run.log", why, sizeof why);
        give_up(r, true, "the compiled reference failed: %s", why[0] ? why : "(no message)");
        goto done;
    }
    ok = true;
    for (int i = 0; i < g->noutputs && ok; i++) {
        const Tensor *t = g->outputs[i];
        Tensor as = written_as(t, dims);
        char path[4200];
        snprintf(path, sizeof path, "%.4000s/out%d.npy", r->dir, i);
        out[i] = malloc(sizeof(double) * (size_t)(tensor_elems(&as) + 1));
        ok = out[i] && npy_read(path, &as, out[i]) == 0;
        unlink(path);
    }
    if (!ok) {
        for (int i = 0; i < g->noutputs; i++) {
            free(out[i]);
            out[i] = NULL;
        }
        give_up(r, true, "the compiled reference's outputs %s", "could not be read");
    }
done:
    for (int i = 0; i < nowned; i++)
        free(owned[i]);
    free(owned);
    free(argv);
    return ok;
}

bool tune_reference_outputs(Reference *r, Graph *g, const int64_t *dims, double *const *in,
                            char *const *input_paths, double **out, bool *compiled)
{
    bool ok = !r->evaluator && (r->tried || build(r, g)) && r->compiled &&
              run(r, g, dims, input_paths, out);
    *compiled = ok;
    if (ok || tune_interrupted)
        return ok;
    if (!r->quiet && work_of(g) > 50000000)
        fprintf(stderr, "texc: computing the reference outputs with the evaluator "
                        "(it runs every stage naively in double: slow at this size)...\n");
    return te_eval_at(g, dims, in, out) == 0;
}
