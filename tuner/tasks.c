/* tasks.c — --tune of a program of several kernels: one task per kernel,
 * a task scheduler for the budget, and the build from the tasks' records.
 *
 * A task is a kernel of the program (a stage --dump=kernels lists that
 * the default schedule gives loops of its own: not inlined into its
 * readers, not a packing stage) cut out as a program of its own
 * (task_graph): the kernel, the stages the default inlines into it, and
 * as inputs what it reads, the program's inputs (weights stay const, so
 * their layouts are the ones the program gives them) and the other
 * kernels' outputs (plain inputs, of the shapes and dtypes they have in
 * the program).  Its tensors are named by position (in0, in1, ...; s0,
 * s1, ...; the kernel itself "out"), so that its workload hash (the
 * canonical graph, log.c), its space (space.c, whose parameters carry
 * the stage's name) and its random inputs (seeded by name) are the same
 * wherever the same computation appears: the q, k and v projections of a
 * transformer block are one task, tuned once, and another program with
 * the same kernel finds its records in the log.
 *
 * Each task is tuned by tune.c's tuner as a program of its own (records,
 * resumption, the cost model, the machine lock: all as for one kernel),
 * kept open across rounds (tune_task_round).  Its candidates are checked
 * against the compiled reference of the task's program with tolerances
 * whose absolute term grows with the output's largest |ref|
 * (TuneOptions.relative_atol, measure.c): the inputs are uniform in
 * [-1, 1), not the values the program would hand the kernel.
 *
 * The scheduler (after Ansor's, Zheng et al., OSDI 2020, section 6):
 *   1. a first round for every task: the default schedule and half a
 *      batch of candidates (at least one), so that every task has at
 *      least one measured candidate of its space, and a time;
 *   2. then, while trials and time are left, a round (one batch) for the
 *      task of the largest expected gain
 *        g_i = w_i * (a * back_i + (1 - a) * fwd_i),  a = 0.2
 *      where w_i is the task's time in the program (its best time times
 *      the kernels it stands for), back_i the relative improvement of its
 *      best over its last 3 rounds per candidate measured in them (the
 *      backward gradient), and fwd_i = 1 / (candidates measured), the
 *      optimistic forward estimate of what one more trial gives;
 *      tasks whose search ended (space exhausted, no improvement for a
 *      while) drop out;
 *   3. the table of the tasks, then the end-to-end time of the whole
 *      program under the default schedule and under the tasks' winners
 *      (tune_best_tasks), built and measured in the same run, five
 *      rounds in turns (default, tuned; tuned, default; ...), judged by
 *      the median of the rounds' ratios (measure_pair); with -v
 *      the per-kernel profile (--profile's timers) of both.
 *
 * The build (tune_best_tasks) cuts the same tasks out of the program,
 * asks tune_best for each one's winner, and renames its statements back
 * to the kernel's stage names: one schedule for the whole program; the
 * default schedules the kernels without a record.
 *
 * A program with run-time dims is tuned bucket by bucket (tune.c's
 * tune_buckets), and each bucket as tasks: the task programs keep the
 * dims, so each task is measured at the bucket's representative sizes
 * and logged as a workload of that bucket.  In a bucket whose layouts the
 * hint bucket decides (TuneOptions.layout_fixed), a task's candidates
 * read the layouts of its own winner in the hint bucket (task_layouts):
 * a build lays each kernel out by its statements in the hint bucket's
 * schedule, which is the tasks' winners there, renamed.  The build
 * (driver/main.c, build_variants) asks tune_best_tasks for each bucket.
 *
 * Not tasks: a program with a schedule for the target in the file (its
 * statements and knobs name the program's stages: tuned whole, as
 * before), for the cuda target, or with a single kernel.
 */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "tuner/tuner.h"

/* The canonical name of the kernel in its task's program. */
#define TASK_OUT "out"

typedef struct Task {
    const char *label;       /* "FILE:KERNEL" of its first kernel */
    Tensor **kernels;        /* the program's kernels it stands for */
    Graph **graphs;          /* ... each one's program: one workload, but
                                each with its kernel's loop names, which
                                a schedule of it names */
    int nkernels;
    Graph *g;                /* the first one's program (task_graph) */
    char hash[33];
    TuneOptions o;
    Tuner *tuner;
    /* the scheduler's */
    double best[64];         /* its best time after each round (ring) */
    int measured[64];        /* candidates measured after each round */
    int rounds;
    double gain;
} Task;

/* ------------------------------------------------------------------ */
/* The kernels and their programs.                                     */

/* The id of G's tensor NAME, or -1. */
static int tensor_named(const Graph *g, const char *name)
{
    for (int i = 0; name && i < g->ntensors; i++)
        if (strcmp(g->tensors[i]->name, name) == 0)
            return i;
    return -1;
}

/* The stages of G the default schedule inlines into their readers
 * (INLINED, by id; also the stages of an attention chain it computes in
 * one flash kernel), and those of the rows it computes in one pass
 * (ROW: a row statistic computed at its reader's row, and that reader):
 * a row is one loop nest of the default's, which a task of each of its
 * stages would break up (a tuned row statistic is a kernel of its own,
 * and a tuned reader leaves no row loop to compute it at), so its
 * stages are no tasks and keep the default's schedule. */
static bool *default_inlined(Arena *a, Graph *g, Target target, bool **row)
{
    bool *inl = arena_alloc(a, sizeof *inl * (size_t)(g->ntensors + 1));
    *row = arena_alloc(a, sizeof **row * (size_t)(g->ntensors + 1));
    Arena scratch = { 0 };
    SchedState *st = sch_state_new(&scratch, g, target);
    Schedule *d = sch_default(st, NULL);
    for (int k = 0; d && k < d->nstmts; k++) {
        const SchedStmt *s = d->stmts[k];
        int i = tensor_named(g, s->stage);
        if (i < 0)
            continue; /* (a cache stage's: the micro-kernel's tile) */
        if (strcmp(s->prim, "compute_inline") == 0) {
            inl[i] = true;
        } else if (strcmp(s->prim, "flash") == 0) {
            /* an attention chain in one kernel: its stages are members of
               the task of its last stage (inlined, as it were), whose
               space offers flash or not (tuner/space.c) */
            SchFlash f = { .bk = 64 };
            const char *why;
            SStage *c = sch_find_stage(st, s->stage);
            if (c && sch_flash_match(st, c, &f, &why))
                for (int m = 0; m < 4; m++) {
                    int t = tensor_named(g, f.stages[m]->name);
                    if (t >= 0)
                        inl[t] = true;
                }
        } else if (strcmp(s->prim, "compute_at") == 0 && s->nargs > 0) {
            int c = tensor_named(g, s->args[0].name);
            (*row)[i] = true;
            if (c >= 0)
                (*row)[c] = true;
        }
    }
    arena_free(&scratch);
    return inl;
}

/* Is T a kernel of its own, tuned as a task: a stage, not a packing
 * stage, not inlined, not part of a row the default computes in one
 * pass? */
static bool is_kernel(const Tensor *t, const bool *inlined, const bool *row)
{
    return t->kind == TK_STAGE && !t->packs && !inlined[t->id] && !row[t->id];
}

typedef struct Cut {
    Arena *a;
    const Graph *g;
    const bool *inlined;
    bool *member;            /* by id: in the task's program */
    Tensor **map;            /* by id: its copy there */
    PtrVec inputs;
} Cut;

static void mark_members(Cut *c, const Expr *e)
{
    if (e->kind == EX_LOAD && e->tensor->kind == TK_STAGE && c->inlined[e->tensor->id] &&
        !e->tensor->packs && !c->member[e->tensor->id]) {
        c->member[e->tensor->id] = true;
        mark_members(c, e->tensor->body);
    }
    for (int i = 0; i < e->nargs; i++)
        mark_members(c, e->args[i]);
}

/* E with its loads retargeted at the copies, the inputs made as met. */
static Expr *copy_expr(Cut *c, const Expr *e)
{
    Expr **args = arena_alloc(c->a, sizeof *args * (size_t)(e->nargs + 1));
    if (e->kind == EX_LOAD) {
        Tensor *t = e->tensor;
        if (!c->map[t->id]) {
            /* not a member: an input, named by its position */
            Tensor *in = arena_alloc(c->a, sizeof *in);
            *in = *t;
            in->name = arena_printf(c->a, "in%d", c->inputs.len);
            in->kind = TK_INPUT;
            in->is_const = t->kind == TK_INPUT && t->is_const;
            in->is_output = false;
            in->vars = NULL;
            in->body = NULL;
            in->aliases = NULL;
            in->alias_pass = NULL;
            in->naliases = 0;
            in->anchor = NULL;
            in->fuse_notes = (PtrVec){ 0 };
            in->packs = NULL;
            c->map[t->id] = in;
            vec_push(c->a, &c->inputs, in);
        }
        for (int i = 0; i < e->nargs; i++)
            args[i] = copy_expr(c, e->args[i]);
        return ex_load(c->a, e->span, c->map[t->id], args, e->nargs);
    }
    if (e->kind == EX_CONST || e->kind == EX_VAR)
        return (Expr *)e; /* leaves: shared, nothing changes them */
    for (int i = 0; i < e->nargs; i++)
        args[i] = copy_expr(c, e->args[i]);
    return te_rebuild(c->a, e, args);
}

/* Kernel K of G as a program of its own (see the top of the file). */
static Graph *task_graph(Arena *a, Graph *g, Tensor *k, const bool *inlined)
{
    Cut c = { a, g, inlined, NULL, NULL, { 0 } };
    c.member = arena_alloc(a, sizeof *c.member * (size_t)(g->ntensors + 1));
    c.map = arena_alloc(a, sizeof *c.map * (size_t)(g->ntensors + 1));
    c.member[k->id] = true;
    mark_members(&c, k->body);
    /* the members first (their names by position), in G's order, which
       is dependency order; then their bodies, meeting the inputs */
    int nstages = 0;
    for (int i = 0; i < g->ntensors; i++) {
        if (!c.member[i])
            continue;
        Tensor *t = g->tensors[i], *s = arena_alloc(a, sizeof *s);
        *s = *t;
        s->name = t == k ? TASK_OUT : arena_printf(a, "s%d", nstages++);
        s->is_output = t == k;
        s->aliases = NULL;
        s->alias_pass = NULL;
        s->naliases = 0;
        s->fuse_notes = (PtrVec){ 0 };
        c.map[i] = s;
    }
    for (int i = 0; i < g->ntensors; i++)
        if (c.member[i])
            c.map[i]->body = copy_expr(&c, g->tensors[i]->body);
    Graph *sub = arena_alloc(a, sizeof *sub);
    sub->src = g->src;
    sub->dims = g->dims;
    sub->ndims = g->ndims;
    sub->nvars = g->nvars;
    sub->layouts = g->layouts;
    sub->strict_fp = g->strict_fp;
    sub->inputs = (Tensor **)c.inputs.items;
    sub->ninputs = c.inputs.len;
    sub->outputs = arena_alloc(a, sizeof *sub->outputs);
    sub->outputs[0] = c.map[k->id];
    sub->noutputs = 1;
    te_graph_compact(a, sub);
    return sub;
}

/* The tasks of G, same workloads merged, into *OUT (their number). */
static int make_tasks(Arena *a, Graph *g, const TuneOptions *o, Task **out)
{
    bool *row;
    bool *inlined = default_inlined(a, g, o->target, &row);
    const char *base = o->source_path ? strrchr(o->source_path, '/') : NULL;
    base = base ? base + 1 : o->source_path ? o->source_path : "program";
    size_t blen = strlen(base);
    if (blen > 3 && strcmp(base + blen - 3, ".te") == 0)
        blen -= 3;
    Task *tasks = arena_alloc(a, sizeof *tasks * (size_t)(g->ntensors + 1));
    int n = 0;
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *t = g->tensors[i];
        if (!is_kernel(t, inlined, row))
            continue;
        Graph *sub = task_graph(a, g, t, inlined);
        char hash[33];
        te_hash(sub, hash);
        Task *same = NULL;
        for (int k = 0; k < n && !same; k++)
            if (strcmp(tasks[k].hash, hash) == 0)
                same = &tasks[k];
        if (!same) {
            same = &tasks[n++];
            same->g = sub;
            memcpy(same->hash, hash, sizeof hash);
            same->label = arena_printf(a, "%.*s:%s", (int)blen, base, t->name);
            same->kernels = arena_alloc(a, sizeof *same->kernels * (size_t)(g->ntensors + 1));
            same->graphs = arena_alloc(a, sizeof *same->graphs * (size_t)(g->ntensors + 1));
        }
        same->graphs[same->nkernels] = sub;
        same->kernels[same->nkernels++] = t;
    }
    *out = tasks;
    return n;
}

/* Is G tuned as tasks?  (See the top of the file.) */
static bool tasks_apply(Graph *g, const TuneOptions *o)
{
    if (o->whole || o->target != TARGET_CPU || (!o->bucket && sch_has_runtime_dims(g)) ||
        sch_file_schedule(g, o->target))
        return false;
    for (int i = 0; i < g->nschedules; i++)
        if (g->schedules[i]->target == o->target)
            return false; /* (one with 'when' clauses, say) */
    return true;
}

bool tune_tasks_apply(Graph *g, const TuneOptions *o)
{
    return tasks_apply(g, o);
}

/* In a bucket of a program with run-time dims whose layouts another
 * bucket decides (O->layout_fixed): the layouts task T's candidates read
 * are those of T's winner in the hint bucket, as a build lays out each
 * kernel's operands by its own statements in the hint bucket's schedule
 * (the tasks' winners there, renamed); NULL: the default's. */
static const Schedule *task_layouts(Arena *a, Task *t, const TuneOptions *o)
{
    if (!o->bucket || !o->layout_fixed || !o->hint_bucket)
        return NULL;
    TuneOptions oh = *o;
    oh.bucket = o->hint_bucket;
    oh.layout_fixed = false;
    oh.layout_sched = NULL;
    oh.quiet = true;
    oh.task = t->label;
    const char *from = NULL;
    const Schedule *best = tune_best(a, t->g, NULL, &oh, &from);
    return from ? best : NULL;
}

/* ------------------------------------------------------------------ */
/* The build: the tasks' winners as one schedule of G's names.          */

/* NAME of the task's program as the kernel K names it: "out" is K, and
 * the names a point makes from it ("out_acc") are K's ("q_acc"); any
 * other name is returned as it is. */
static const char *rename_stage(Arena *a, const char *name, const Tensor *k)
{
    size_t n = strlen(TASK_OUT);
    if (!name)
        return NULL;
    if (strcmp(name, TASK_OUT) == 0)
        return k->name;
    if (strncmp(name, TASK_OUT "_", n + 1) == 0)
        return arena_printf(a, "%s%s", k->name, name + n);
    return name;
}

/* The statements of S (a task's schedule) with K's names, appended to
 * INTO.  Statements on other stages than the kernel's own (an inlined
 * member's) are left to the program's default. */
static void add_renamed(Arena *a, Schedule *into, const Schedule *s, const Tensor *k)
{
    for (int i = 0; i < s->nstmts; i++) {
        const SchedStmt *st = s->stmts[i];
        const char *stage = rename_stage(a, st->stage, k);
        if (stage == st->stage)
            continue;
        SchedStmt *c = arena_alloc(a, sizeof *c);
        *c = *st;
        c->stage = stage;
        c->result = rename_stage(a, st->result, k);
        c->args = arena_alloc(a, sizeof *c->args * (size_t)(st->nargs + 1));
        Prim p = prim_lookup(st->prim);
        for (int j = 0; j < st->nargs; j++) {
            c->args[j] = st->args[j];
            /* the stage arguments: compute_at's first, cache_read's
               second */
            if (st->args[j].kind == SA_NAME &&
                ((p == PR_COMPUTE_AT && j == 0) || (p == PR_CACHE_READ && j == 1)))
                c->args[j].name = rename_stage(a, st->args[j].name, k);
        }
        sch_add_stmt(a, into, c);
    }
}

/* Is NAME one of KEEP[0..n)? */
static bool kept(const char *name, const char *const *keep, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(keep[i], name) == 0)
            return true;
    return false;
}

/* The tasks' winners as one schedule of G's names, but for the kernels
 * named in KEEP[0..nkeep) (the default's); NULL when no other kernel has
 * a record.  *FOUND and *KERNELS count the kernels with a record used,
 * and all of them. */
static const Schedule *best_tasks(Arena *a, Graph *g, const TuneOptions *o, const char *const *keep,
                                  int nkeep, int *found, int *kernels, PtrVec *with)
{
    *found = *kernels = 0;
    /* no log, no records: the kernels are not cut out (a program of
       thousands of kernels would cut out each one for nothing) */
    const char *path = tune_log_path(a, o);
    struct stat log;
    if (!path || stat(path, &log) != 0 || log.st_size == 0)
        return NULL;
    Task *tasks;
    int n = make_tasks(a, g, o, &tasks);
    if (n < 1)
        return NULL;
    Schedule *s = arena_alloc(a, sizeof *s);
    s->target = o->target;
    for (int i = 0; i < n; i++) {
        Task *t = &tasks[i];
        TuneOptions ot = *o;
        ot.quiet = true;
        ot.task = t->label;
        ot.layout_sched = task_layouts(a, t, o);
        *kernels += t->nkernels;
        for (int k = 0; k < t->nkernels; k++) {
            if (kept(t->kernels[k]->name, keep, nkeep))
                continue;
            /* the record's configuration as a schedule of this kernel's
               own program (its loops' names) */
            const char *got = NULL;
            const Schedule *best = tune_best(a, t->graphs[k], NULL, &ot, &got);
            if (!got || !best)
                continue;
            ++*found;
            if (with)
                vec_push(a, with, (void *)t->kernels[k]->name);
            add_renamed(a, s, best, t->kernels[k]);
        }
    }
    return *found ? s : NULL;
}

const Schedule *tune_best_tasks(Arena *a, Graph *g, const TuneOptions *o, const char **from)
{
    if (!tasks_apply(g, o))
        return NULL;
    /* the last tuning run's verdict on the whole program: the kernels
       whose winners were not faster in it keep the default */
    json_t *prog = o->bucket ? NULL : tune_program_record(a, g, o);
    json_t *names = json_object_get(json_object_get(prog, "config"), "default_kernels");
    int nkeep = (int)json_array_size(names);
    const char **keep = arena_alloc(a, sizeof *keep * (size_t)(nkeep + 1));
    for (int i = 0; i < nkeep; i++) {
        const char *k = json_string_value(json_array_get(names, (size_t)i));
        keep[i] = arena_strdup(a, k ? k : "");
    }
    char date[32] = "";
    bool recorded = prog != NULL;
    if (recorded)
        tune_record_date(prog, date, sizeof date);
    json_decref(prog);
    int found, kernels;
    const Schedule *s = best_tasks(a, g, o, keep, nkeep, &found, &kernels, NULL);
    if (!s && !recorded)
        return NULL;
    if (!s) {
        /* the end-to-end check found no tuned kernel faster in the program */
        Schedule *none = arena_alloc(a, sizeof *none);
        none->target = o->target;
        *from = arena_printf(a, "the default schedule for all %d kernels: the tuning log's end-to-end "
                                "record of %s found none faster tuned in the program",
                             kernels, date);
        return none;
    }
    *from = arena_printf(a, "the tuning log's records for %d of its %d kernels (tasks), the "
                            "default for the rest",
                         found, kernels);
    if (nkeep)
        *from = arena_printf(a, "%s (%d of them by the end-to-end record of %s: not faster tuned "
                                "in the program)",
                             *from, nkeep, date);
    return s;
}

/* ------------------------------------------------------------------ */
/* The scheduler.                                                      */

enum { WINDOW = 3 };
#define ALPHA 0.2

static double task_time(const Task *t)
{
    TuneTaskState s = tune_task_state(t->tuner);
    double one = s.best_s > 0 ? s.best_s : s.default_s;
    return one * t->nkernels;
}

static void note_round(Task *t)
{
    TuneTaskState s = tune_task_state(t->tuner);
    t->best[t->rounds % 64] = s.best_s;
    t->measured[t->rounds % 64] = s.measured;
    t->rounds++;
}

/* The expected gain of one more round of T (see the top of the file). */
static double task_gain(const Task *t)
{
    TuneTaskState s = tune_task_state(t->tuner);
    if (s.done || s.failed || s.best_s <= 0)
        return -1;
    double back = 0;
    if (t->rounds > WINDOW) {
        int now = (t->rounds - 1) % 64, then = (t->rounds - 1 - WINDOW) % 64;
        int trials = t->measured[now] - t->measured[then];
        if (trials > 0 && t->best[then] > 0)
            back = (t->best[then] - t->best[now]) / t->best[then] / trials;
    } else if (t->rounds > 1) {
        back = 1.0 / (s.measured > 0 ? s.measured : 1); /* too young to tell */
    }
    double fwd = 1.0 / (s.measured > 0 ? s.measured : 1);
    return task_time(t) * (ALPHA * back + (1 - ALPHA) * fwd);
}

static void ms_text(char *out, size_t size, double s)
{
    if (s <= 0)
        snprintf(out, size, "-");
    else
        snprintf(out, size, "%.4g ms", s * 1e3);
}

static void print_table(FILE *out, Task *tasks, int n)
{
    double total_default = 0, total_best = 0;
    for (int i = 0; i < n; i++) {
        TuneTaskState s = tune_task_state(tasks[i].tuner);
        total_default += s.default_s * tasks[i].nkernels;
        total_best += (s.best_s > 0 ? s.best_s : s.default_s) * tasks[i].nkernels;
    }
    fprintf(out, "texc: %-28s %7s %6s %12s %12s %7s %6s\n", "task", "kernels", "trials", "default",
            "best", "speedup", "share");
    for (int i = 0; i < n; i++) {
        TuneTaskState s = tune_task_state(tasks[i].tuner);
        char d[32], b[32];
        ms_text(d, sizeof d, s.default_s);
        ms_text(b, sizeof b, s.best_s);
        double share = total_best > 0 ? task_time(&tasks[i]) / total_best * 100 : 0;
        fprintf(out, "texc: %-28s %7d %6d %12s %12s %6.2fx %5.1f%%\n", tasks[i].label,
                tasks[i].nkernels, s.measured, d, b,
                s.default_s > 0 && s.best_s > 0 ? s.default_s / s.best_s : 1.0, share);
    }
    char d[32], b[32];
    ms_text(d, sizeof d, total_default);
    ms_text(b, sizeof b, total_best);
    fprintf(out, "texc: the kernels' times added up: default %s, tuned %s\n", d, b);
    /* (measured at different times: a drifting clock shows in the ratio) */
    fprintf(out, "texc: (each task alone, on inputs of its own; its default timed once, in its "
                 "first round, the candidates later: the comparison in the program below, in "
                 "turns, is the one that decides)\n");
}

/* ------------------------------------------------------------------ */
/* The whole program: its kernels in it, the choice, the end to end.   */

/* The pair of programs (default, tuned) is measured in PAIR_ROUNDS
 * rounds, in turns, the order swapped each round (default first, then
 * tuned first, ...), so that a clock drifting through the comparison
 * favours neither.  A verdict is the median over the rounds of the ratio
 * of the two runs in the round (default / tuned): on a machine whose
 * clock moves by 10% between runs, the fastest run of each (as before)
 * told a 6% gain from noise no better than a coin. */
#define PAIR_ROUNDS 5

/* the median of the N values V (sorted in place); 0 when N is 0 */
static double median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Times of the pair, round by round: run[i][r] under the default (i = 0)
 * and the tuned schedule (1), 0 where not measured; s[i] the medians of
 * each, ratio the median of run[0][r] / run[1][r] over the rounds that
 * have both (0: none), lo and hi the least and the most of those. */
typedef struct PairTime {
    double run[2][PAIR_ROUNDS];
    double s[2];
    double ratio, lo, hi;
} PairTime;

static void pair_summary(PairTime *p)
{
    double v[PAIR_ROUNDS];
    int n;
    for (int i = 0; i < 2; i++) {
        n = 0;
        for (int r = 0; r < PAIR_ROUNDS; r++)
            if (p->run[i][r] > 0)
                v[n++] = p->run[i][r];
        p->s[i] = median(v, n);
    }
    n = 0;
    for (int r = 0; r < PAIR_ROUNDS; r++)
        if (p->run[0][r] > 0 && p->run[1][r] > 0)
            v[n++] = p->run[0][r] / p->run[1][r];
    p->ratio = median(v, n); /* (sorts V) */
    p->lo = n ? v[0] : 0;
    p->hi = n ? v[n - 1] : 0;
}

/* A kernel of the program and its time per call in it, from the
 * profiles, each round of the pair. */
typedef struct KernelTime {
    const char *name;
    PairTime t;
} KernelTime;

/* Takes each kernel's mean time per call from the profile table C's last
 * run left in its run.log ("NAME CALLS TOTAL_MS MEAN_US SHARE%" lines)
 * into KT[..].t.run[WHICH][ROUND]; with SHOW prints the table. */
static void read_profile(const Candidate *c, KernelTime *kt, int nkt, int which, int round,
                         const char *show)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/run.log", c->dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        if (show)
            fprintf(stderr, "texc: no profile of %s\n", show);
        return;
    }
    if (show)
        fprintf(stderr, "texc: profile of %s (each kernel step, the timed calls):\n", show);
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (show)
            fprintf(stderr, "texc:   %s", line);
        char name[256];
        unsigned long long calls;
        double total_ms, mean_us;
        if (sscanf(line, "%255s %llu %lf %lf", name, &calls, &total_ms, &mean_us) != 4 || !calls ||
            !(mean_us > 0))
            continue;
        for (int i = 0; i < nkt; i++)
            if (strcmp(kt[i].name, name) == 0)
                kt[i].t.run[which][round] = mean_us * 1e-6;
    }
    fclose(f);
}

/* Builds B's program under the default schedule ([0]) and SCHED ([1]),
 * with --profile's timers if PROFILE, and measures them PAIR_ROUNDS
 * times each, in turns (the top of this section): *PT the times (0
 * where none, WHY[i] says why).  A profiled pair fills KT's times, and
 * with SHOW prints each one's last table. */
static void measure_pair(Arena *a, Bench *b, const TuneOptions *o, const Schedule *sched, bool profile,
                         KernelTime *kt, int nkt, bool show, PairTime *pt, const char *why[2])
{
    Schedule *none = arena_alloc(a, sizeof *none);
    none->target = o->target;
    Candidate cands[2], *pc[2];
    memset(pt, 0, sizeof *pt);
    for (int i = 0; i < 2; i++) {
        memset(&cands[i], 0, sizeof cands[i]);
        cands[i].sched = i == 0 ? none : (Schedule *)sched;
        cands[i].predicted = NAN;
        cands[i].trial = i + 1;
        pc[i] = &cands[i];
        why[i] = NULL;
    }
    b->profile = profile;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    tune_build(b, pc, 2, o->jobs > 0 ? o->jobs : cores > 0 ? (int)cores : 1);
    for (int r = 0; r < PAIR_ROUNDS; r++)
        for (int turn = 0; turn < 2; turn++) {
            int i = r % 2 ? 1 - turn : turn;
            Candidate *c = pc[i];
            if (c->status == TS_OK)
                tune_measure(b, c, 600);
            if (c->status != TS_OK) {
                if (!why[i])
                    why[i] = arena_printf(a, "%s (%s)", tune_status_name(c->status), c->detail);
                continue;
            }
            pt->run[i][r] = c->time_s;
            if (profile)
                read_profile(c, kt, nkt, i, r,
                             show && r == PAIR_ROUNDS - 1 ? (i ? "the tuned program" : "the default program")
                                                          : NULL);
        }
    pair_summary(pt);
    for (int k = 0; k < nkt && profile; k++)
        pair_summary(&kt[k].t);
    for (int i = 0; i < 2; i++)
        tune_discard(b, pc[i]);
    b->profile = false;
}

/* "end to end: default D, tuned T: Rx the default schedule (...)" */
static void say_end_to_end(const PairTime *pt, const char *const why[2])
{
    char d[64], t[64];
    ms_text(d, sizeof d, pt->s[0]);
    ms_text(t, sizeof t, pt->s[1]);
    fprintf(stderr, "texc: end to end: default %s, tuned %s", d, t);
    if (pt->ratio > 0) {
        fprintf(stderr, ": %.2fx the default schedule (the medians of %d runs each, in turns; the "
                        "rounds' ratios %.2f to %.2f)\n",
                pt->ratio, PAIR_ROUNDS, pt->lo, pt->hi);
    } else {
        fprintf(stderr, " (%s)\n", why[0] ? why[0] : why[1] ? why[1] : "not measured");
    }
}

/* Step 3 (the top of the file): G under the default schedule and under
 * the tasks' winners, in this run.  A static program is first measured
 * with --profile's timers, both ways, and each kernel keeps its winner
 * only where it was faster in the program than the default's kernel
 * (its task measured it alone, on inputs of its own: in the program its
 * operands come from the kernel before, in the layouts the program
 * gives them); then the program so chosen against the default, without
 * timers.  Both comparisons are the median ratio of rounds in turns
 * (measure_pair).  A program record in the log says which kernels keep
 * the default, for later builds (tune_best_tasks), and all of them do
 * when the chosen program was not faster end to end.  Returns 0, or 1
 * after a message. */
static int whole_program(Arena *a, Graph *g, const TuneOptions *o, Task *tasks, int n)
{
    TuneOptions ob = *o;
    ob.quiet = true;
    int found, kernels;
    PtrVec won = { 0 }; /* the kernels with a record: the others run the default both ways */
    const Schedule *tuned = best_tasks(a, g, &ob, NULL, 0, &found, &kernels, &won);
    if (!tuned) {
        if (!o->quiet)
            fprintf(stderr, "texc: no task has a valid record: the default schedule stays\n");
        return 0;
    }
    TuneOptions oe = *o;
    oe.task = NULL;
    oe.relative_atol = true;
    oe.profile = false;
    oe.quiet = true;
    Bench b;
    memset(&b, 0, sizeof b);
    if (!tune_bench_init(&b, a, g, &oe, "texc_kernel")) {
        tune_bench_free(&b);
        return 1;
    }
    bool show = o->verbose && !o->quiet;
    bool choose = !o->bucket; /* (a bucket's program: all winners, as before) */
    KernelTime *kt = arena_alloc(a, sizeof *kt * (size_t)(kernels + 1));
    int nkt = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < tasks[i].nkernels; k++) {
            memset(&kt[nkt], 0, sizeof kt[nkt]);
            kt[nkt++].name = tasks[i].kernels[k]->name;
        }
    PairTime pt;
    const char *why[2];
    const char **keep = arena_alloc(a, sizeof *keep * (size_t)(nkt + 1));
    int nkeep = 0;
    const Schedule *chosen = tuned;
    if (choose)
        measure_pair(a, &b, o, tuned, true, kt, nkt, show, &pt, why);
    if (choose && !(pt.ratio > 0)) {
        if (!o->quiet)
            fprintf(stderr, "texc: the profiled programs could not be measured (%s): every kernel "
                            "keeps its winner\n",
                    why[0] ? why[0] : why[1] ? why[1] : "no time");
        choose = false;
    }
    if (choose) {
        for (int i = 0; i < nkt; i++) {
            /* faster tuned: the median of the rounds' ratios above 1; a
               kernel without a record ran the default both ways, and its
               ratio is noise */
            bool none = !kept(kt[i].name, (const char *const *)won.items, won.len);
            bool slower = none || (kt[i].t.ratio > 0 && kt[i].t.ratio <= 1);
            if (slower)
                keep[nkeep++] = kt[i].name;
            if (show || (slower && !none && !o->quiet)) {
                char d[32], t[32];
                ms_text(d, sizeof d, kt[i].t.s[0]);
                ms_text(t, sizeof t, kt[i].t.s[1]);
                fprintf(stderr,
                        "texc: in the program, %s takes %s a call by default, %s tuned (%.3fx): %s\n",
                        kt[i].name, d, t, kt[i].t.ratio,
                        none     ? "it keeps the default (no record: the default both ways)"
                        : slower ? "it keeps the default"
                                 : "it takes the tuned schedule");
            }
        }
        if (nkeep)
            chosen = nkeep < nkt ? best_tasks(a, g, &ob, keep, nkeep, &found, &kernels, NULL) : NULL;
        /* what the profiles expect of the choice (the line after it is
           read against this): each kernel at the ratio that chose it
           (the median of the rounds' ratios, above 1), not the
           difference of the two medians, which can have the other sign */
        double saved = 0;
        for (int i = 0; i < nkt; i++)
            if (!kept(kt[i].name, keep, nkeep) && kt[i].t.ratio > 0)
                saved += kt[i].t.s[0] * (1 - 1 / kt[i].t.ratio);
        if (chosen && !o->quiet) {
            char sv[32], d[32];
            ms_text(sv, sizeof sv, saved);
            ms_text(d, sizeof d, pt.s[0]);
            fprintf(stderr, "texc: the kernels that take their tuned schedule save %s a call in the "
                            "profiles: %.1f%% of the default program's %s\n",
                    sv, pt.s[0] > 0 ? saved / pt.s[0] * 100 : 0.0, d);
        }
    }
    /* (all winners when none is kept: the line says what tuning gave) */
    measure_pair(a, &b, o, chosen ? chosen : tuned, false, NULL, 0, false, &pt, why);
    if (!o->quiet)
        say_end_to_end(&pt, why);
    if (chosen) {
        if (choose && pt.ratio > 0 && pt.ratio <= 1) {
            if (!o->quiet)
                fprintf(stderr, "texc: the tuned program is not faster end to end: later builds "
                                "keep the default schedule\n");
            for (int i = 0; i < nkt; i++)
                if (!kept(kt[i].name, keep, nkeep))
                    keep[nkeep++] = kt[i].name;
        }
    } else if (!o->quiet) {
        fprintf(stderr, "texc: no kernel was faster tuned in the program: later builds keep the "
                        "default schedule\n");
    }
    if (choose && pt.ratio > 0) {
        /* the verdict, for later builds */
        Workload w;
        Machine m;
        tune_program_workload(a, g, o, &w, &m);
        json_t *r = tune_program_record_new(&w, &m);
        json_t *def = json_array(), *tun = json_array(), *times = json_object();
        for (int i = 0; i < nkt; i++) {
            json_array_append_new(kept(kt[i].name, keep, nkeep) ? def : tun, json_string(kt[i].name));
            json_object_set_new(times, kt[i].name,
                                json_pack("{s:f, s:f, s:f}", "default_s", kt[i].t.s[0], "tuned_s",
                                          kt[i].t.s[1], "ratio", kt[i].t.ratio));
        }
        json_object_set_new(r, "config", json_pack("{s:b, s:o, s:o}", "program", 1, "default_kernels",
                                                   def, "tuned_kernels", tun));
        json_object_set_new(r, "kernel_times", times);
        json_object_set_new(r, "status", json_string("ok"));
        json_object_set_new(r, "default_s", json_real(pt.s[0]));
        json_object_set_new(r, "time_s", json_real(nkeep == nkt ? pt.s[0] : pt.s[1]));
        json_object_set_new(r, "ratio", json_real(pt.ratio));
        tune_record_where(r);
        const char *path = tune_log_path(a, o);
        if (path && !tune_log_append(path, r) && !o->quiet)
            fprintf(stderr, "texc: warning: the program's record could not be written to %s\n", path);
        json_decref(r);
        json_decref(w.shapes);
        json_decref(w.dims);
    }
    tune_bench_free(&b);
    return 0;
}

int tune_tasks(Arena *a, Graph *g, const TuneOptions *o)
{
    if (!tasks_apply(g, o))
        return -1;
    Task *tasks;
    int n = make_tasks(a, g, o, &tasks);
    if (n < 2)
        return -1;
    double start = tune_now();
    double budget = o->time_budget > 0 ? o->time_budget : TUNE_DEFAULT_BUDGET_S;
    int trials = o->trials > 0 ? o->trials : TUNE_DEFAULT_TRIALS;
    double deadline = start + budget;
    int nkernels = 0;
    for (int i = 0; i < n; i++)
        nkernels += tasks[i].nkernels;
    if (!o->quiet) {
        fprintf(stderr, "texc: tuning %d kernels as %d tasks, %.0f s and %d candidates in all:\n",
                nkernels, n, budget, trials);
        for (int i = 0; i < n; i++) {
            fprintf(stderr, "texc:   task %d: %s", i + 1, tasks[i].label);
            if (tasks[i].nkernels > 1) {
                fputs(" (one workload with", stderr);
                for (int k = 1; k < tasks[i].nkernels; k++)
                    fprintf(stderr, "%s %s", k > 1 ? "," : "", tasks[i].kernels[k]->name);
                fputc(')', stderr);
            }
            fprintf(stderr, ", workload %.12s\n", tasks[i].hash);
        }
    }
    if (o->plot && !o->quiet)
        fprintf(stderr, "texc: --plot draws one search: not drawn for a program tuned as tasks "
                        "(--tune-whole tunes it as one)\n");
    TuneTimes times = { 0 };
    int status = 0, opened = 0;
    for (int i = 0; i < n; i++) {
        Task *t = &tasks[i];
        t->o = *o;
        t->o.task = t->label;
        t->o.relative_atol = true;
        t->o.trials = trials; /* what one task may take at most */
        t->o.time_budget = budget;
        t->o.times = &times;
        t->o.plot = NULL;
        t->o.best_config = NULL;
        t->o.task_no = i;
        /* a bucket's: no seed or cost-model data from the bucket before
           (those are a whole program's); the layouts of its hint-bucket
           winner */
        t->o.seed_config = NULL;
        t->o.shared = NULL;
        t->o.reference = NULL;
        t->o.layout_sched = task_layouts(a, t, o);
        t->tuner = tune_task_open(a, t->g, &t->o);
        if (!t->tuner) {
            status = 1;
            break;
        }
        opened++;
    }
    if (status == 0 && tune_mpi_rank() > 0) {
        /* an MPI worker: the same tasks, measured as rank 0 asks */
        Tuner **tuners = arena_alloc(a, sizeof *tuners * (size_t)(n + 1));
        for (int i = 0; i < n; i++)
            tuners[i] = tasks[i].tuner;
        tune_serve(tuners, n);
        for (int i = opened - 1; i >= 0; i--)
            tune_task_close(tasks[i].tuner);
        return 0;
    }
    int used = 0;
    if (status == 0) {
        /* 1. a round for every task: the default, one batch */
        int batch = tune_task_state(tasks[0].tuner).batch;
        /* (half a batch: the rest of the budget goes by gain) */
        int first = trials / (2 * n) < batch / 2 ? trials / (2 * n) : batch / 2;
        if (first < 1)
            first = 1;
        for (int i = 0; i < n && !tune_interrupted; i++) {
            Task *t = &tasks[i];
            tune_task_round(t->tuner, first, deadline);
            used += tune_task_state(t->tuner).space;
            note_round(t);
            TuneTaskState s = tune_task_state(t->tuner);
            if (!o->quiet) {
                char d[32], b[32];
                ms_text(d, sizeof d, s.default_s);
                ms_text(b, sizeof b, s.best_s);
                fprintf(stderr, "texc: task %d/%d %s: first round, %d measured (%d ok), default %s, "
                                "best %s\n",
                        i + 1, n, t->label, s.measured, s.ok, d, b);
            }
        }
        /* 2. rounds by expected gain */
        while (used < trials && tune_now() < deadline && !tune_interrupted) {
            int pick = -1;
            double total = 0;
            for (int i = 0; i < n; i++) {
                tasks[i].gain = task_gain(&tasks[i]);
                total += task_time(&tasks[i]);
                if (tasks[i].gain > 0 && (pick < 0 || tasks[i].gain > tasks[pick].gain))
                    pick = i;
            }
            if (pick < 0)
                break; /* every search ended */
            Task *t = &tasks[pick];
            int want = batch < trials - used ? batch : trials - used;
            double share = total > 0 ? task_time(t) / total * 100 : 0;
            TuneTaskState was = tune_task_state(t->tuner);
            double before = was.best_s;
            int got = tune_task_round(t->tuner, want, deadline);
            used += tune_task_state(t->tuner).space - was.space;
            TuneTaskState s = tune_task_state(t->tuner);
            if (got == 0 && !s.done)
                break; /* nothing could be measured: the budget */
            note_round(t);
            if (!o->quiet) {
                char b[32];
                ms_text(b, sizeof b, s.best_s);
                fprintf(stderr, "texc: round %d: task %d %s (%.0f%% of the program, gain %.3g): "
                                "%d more, %d in all, best %s%s; %d of %d candidates used, %.0f s left\n",
                        t->rounds, pick + 1, t->label, share, t->gain, got, s.measured, b,
                        s.best_s < before * 0.995 ? " (improved)" : "", used, trials,
                        fmax(0, deadline - tune_now()));
            }
        }
        if (!o->quiet)
            print_table(stderr, tasks, n);
    }
    /* closed in the reverse order: the first one's signal handlers are
       the ones before tuning */
    for (int i = opened - 1; i >= 0; i--)
        status |= tune_task_close(tasks[i].tuner);
    if (status == 0 && !tune_interrupted) {
        /* 3. the whole program, default against tuned, in this run */
        double at = tune_now();
        status |= whole_program(a, g, o, tasks, n);
        times.measure += tune_now() - at;
    }
    if (!o->quiet)
        fprintf(stderr, "texc: tuned %d tasks in %.1f s; log: %s\n", n, tune_now() - start,
                tune_log_path(a, o));
    times.total = tune_now() - start;
    if (o->times) { /* a bucket's: tune_buckets says the sum */
        o->times->total += times.total;
        o->times->reference += times.reference;
        o->times->builds += times.builds;
        o->times->measure += times.measure;
    } else if (o->verbose && !o->quiet) {
        tune_times_print(stderr, &times);
    }
    return status;
}
