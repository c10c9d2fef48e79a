/* tune.c — texc FILE.te --tune: the search loop.
 *
 * tune_run, in order:
 *   1. the search space (space.c): the file's knobs, or an automatic
 *      space derived from the stages;
 *   2. the log (log.c): every record of this workload, machine, compiler,
 *      texc version and space is resumed: its configuration is never
 *      rebuilt, and valid ones seed the best so far and the cost model;
 *   3. the bench (measure.c): random inputs and the reference outputs,
 *      computed once, only when something is left to measure;
 *   4. the default schedule, measured first (the baseline of the
 *      speed-up), then batches of candidates:
 *        exhaustive, when the legal points left fit in the trial budget:
 *          every point, in order;
 *        guided otherwise: the first batches at random, then each batch
 *          drawn from mutations of the best measured points (one or two
 *          parameters changed) and fresh random points, ranked by the cost
 *          model (model.c) refitted on every valid measurement so far; a
 *          quarter of each batch is random, so that a wrong model cannot
 *          trap the search;
 *      each batch is checked (applied and lowered in a child), built in
 *      parallel (--jobs compilers), then measured one candidate at a time
 *      with nothing else running, each measurement appended to the log as
 *      it completes;
 *      each batch is a turn (take_turn): the tuner holds the machine lock
 *      (lock.c) from re-reading what other tuners appended to the log
 *      (resumed like the rest, so never measured again) through
 *      proposing, building and measuring to the last record, so that
 *      tuners on one machine neither time each other's work nor measure
 *      a configuration twice;
 *   5. stop at --trials candidates, at --time-budget seconds (counted from
 *      the start, the reference included, the waits for other tuners'
 *      turns not), when the space is exhausted, when another tuner kept
 *      the lock for longer than the whole budget,
 *      or (guided) when the best has not improved by 0.5% for
 *      max(24, trials / 4) candidates;
 *   6. the summary: the best configuration as schedule text to paste into
 *      the file, its speed-up over the default schedule, the log's path,
 *      and --plot's picture.
 *
 * The build that follows (driver/main.c) calls tune_best, which finds
 * the winner in the log like any later build would.
 *
 * --target cuda runs the same loop.  The differences live in the spaces
 * (space.c: the knobs of the file's cuda schedule, or block and thread
 * tiles, a split reduction, staging in shared memory, a pipeline and
 * unrolling), in the children that build and measure (cuda_measure.c:
 * NVRTC in the build child, libtexrt in the run child) and in the machine
 * a record names (log.c: the GPU's sm_XX and name, NVRTC's version).
 * Without a device it stops before anything is written.  The devices like
 * device 0 (same architecture and name) are all measured on: with
 * several, each batch is measured on all of them at once, one candidate
 * per device (measure.c's tune_measure_devices); with one, as on a CPU.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "tuner/tuner.h"

struct Tuner {
    int log_lost;            /* records the log refused: tuning stops at the
                                first (a measurement not logged is lost) */
    Arena *a;
    Graph *g;
    const TuneOptions *o;
    Space *sp;
    Workload w;
    Machine m;
    const char *log;
    LogPlace log_read;     /* how far load_log has read the log */
    bool log_loaded;       /* ... which it has, once */
    MachineLock lock;      /* held for each batch: see lock.c */
    bool lock_open;
    bool lock_failed;      /* flock itself failed: tuning stops, status 1 */
    Bench bench;
    bool bench_ready;
    json_t *seen;          /* config key -> true: measured, pending or pruned */
    /* the measurements of this space, for the cost model */
    double *hx, *hy;
    int **hpoint;          /* the points themselves, for mutation */
    int nhist, caphist;
    /* the best valid measurement, from the log or this run */
    double best_time;      /* 0: none */
    json_t *best;          /* its record */
    double default_time;   /* 0: unknown */
    /* this run */
    int trials, jobs, batch;
    double budget, start;
    TuneTimes times;       /* where this run's time went (-v) */
    int next_trial;        /* trial numbers handed out */
    int measured;          /* candidates recorded in this run */
    int counts[TS_COUNT];
    int resumed, pruned, planned;
    int others;            /* configurations another tuner measured
                              while this one ran (found in the log) */
    double *trial_gflops;  /* per recorded candidate, 0 if it failed */
    int last_improvement;  /* measured when the best last improved */
    bool exhaustive;
    PtrVec candidates;     /* Candidate *: their configs are freed at the end */
    /* the cost model's predictions and the measurements that followed */
    double *pred, *meas;
    int npred;
    uint64_t rng;
    bool tty;
    /* exhaustive enumeration: the next point of the odometer */
    int *odometer;
    bool odometer_done;
    /* the loop, across the rounds of a task (tune_task_round) */
    Arena arena;             /* the run's */
    struct sigaction sa, old_int, old_term;
    bool signals;            /* sa installed, old_* to restore */
    bool need_default, seeded;
    int new_trials;          /* candidates of the space (not the default) */
    Candidate **batchv;
    int **pts;
    double *predicted;
    bool *guided;
    bool done, failed;       /* the search ended; the bench could not start */
    int space_measured;      /* recorded candidates of the space */
    int jobs_sent;           /* MPI: the shares sent to workers (their ids) */
    const char *stop;        /* why it ended (NULL: the trials ran out) */
};

/* --tune of a program with run-time dims: one task per bucket (the
 * buckets a build compiles: sched/bucket.c, before merging), each
 * measured at its representative sizes (measure.c) and logged as a
 * workload of its own (log.c), with a share of the budget and trials by
 * the width of its range (a single size 1, a range 1 + log2 of hi/lo),
 * seeded with the winner of the bucket before it. */
static int tune_buckets(Arena *outer, Graph *g, const TuneOptions *o)
{
    PtrVec buckets = { 0 };
    if (!sch_buckets(outer, g, o->target, o->buckets, o->nbuckets, &buckets))
        return 1;
    double *share = arena_alloc(outer, sizeof *share * (size_t)buckets.len), total = 0;
    for (int i = 0; i < buckets.len; i++) {
        const Bucket *b = buckets.items[i];
        share[i] = 1;
        for (int d = 0; d < g->ndims; d++)
            if (g->dims[d].runtime && g->dims[d].declared)
                share[i] += log2((double)b->hi[d] / (double)b->lo[d]);
        total += share[i];
    }
    double budget = o->time_budget > 0 ? o->time_budget : TUNE_DEFAULT_BUDGET_S;
    int trials = o->trials > 0 ? o->trials : TUNE_DEFAULT_TRIALS;
    if (!o->quiet)
        fprintf(stderr, "texc: tuning %d buckets of the run-time dims, %.0f s and %d candidates in all\n",
                buckets.len, budget, trials);
    /* the hint bucket first: its winner decides the layouts every variant
       reads (driver/main.c), so the others are measured with them */
    int hint = sch_hint_bucket(g, &buckets);
    int *order = arena_alloc(outer, sizeof *order * (size_t)buckets.len);
    order[0] = hint;
    for (int i = 0, k = 1; i < buckets.len; i++)
        if (i != hint)
            order[k++] = i;
    const Schedule *layout_sched = NULL;
    double start = tune_now();
    json_t *seed = NULL;
    TuneShared shared = { 0 };
    TuneTimes times = { 0 };
    int status = 0;
    /* one compiled reference for every bucket: it takes the sizes */
    Reference reference;
    tune_reference_init(&reference, o);
    for (int n = 0; n < buckets.len && !tune_interrupted; n++) {
        int i = order[n];
        TuneOptions ob = *o;
        ob.bucket = buckets.items[i];
        ob.reference = &reference;
        ob.layout_fixed = n > 0;
        ob.layout_sched = layout_sched;
        /* the share of what is left, so that a bucket that stopped early
           leaves its time to the rest */
        double left = budget - (tune_now() - start), rest = 0;
        if (left <= 0) {
            if (!o->quiet)
                fprintf(stderr, "texc: the time budget is spent: %d bucket%s left untuned (a build uses "
                                "the file's or the default schedule there)\n",
                        buckets.len - n, buckets.len - n == 1 ? "" : "s");
            break;
        }
        for (int k = n; k < buckets.len; k++)
            rest += share[order[k]];
        ob.time_budget = fmax(1.0, left * share[i] / rest);
        ob.trials = (int)fmax(4, trials * share[i] / total);
        ob.seed_config = seed;
        json_t *best = NULL;
        ob.best_config = &best;
        ob.shared = &shared;
        ob.times = &times;
        if (!o->quiet)
            fprintf(stderr, "texc: bucket %d of %d: %s%s%s\n", n + 1, buckets.len,
                    sch_bucket_str(outer, g, ob.bucket),
                    n == 0 && buckets.len > 1 ? " (first: its schedule decides the layouts every "
                                                "variant reads)"
                                              : "",
                    shared.n ? arena_printf(outer, " (the cost model starts from the %d measurements "
                                                   "of the bucket tuned before)", shared.n)
                             : "");
        /* a program of several kernels: a task per kernel in each bucket
           (tasks.c), else the whole program */
        ob.hint_bucket = buckets.items[hint];
        int rc = tune_tasks(outer, g, &ob);
        if (rc < 0)
            rc = tune_run(outer, g, &ob);
        status |= rc;
        json_decref(seed);
        seed = best;
        if (n == 0) {
            /* the schedule a build will take for it, which lays out the
               weights for every variant: the tasks' winners, else the
               whole program's */
            TuneOptions oq = ob;
            oq.quiet = true;
            const char *from = NULL;
            layout_sched = tune_best_tasks(outer, g, &oq, &from);
            if (!layout_sched)
                layout_sched = tune_best(outer, g, sch_bucket_schedule(g, o->target, ob.bucket), &oq, &from);
        }
    }
    json_decref(seed);
    free(shared.x);
    free(shared.y);
    tune_reference_free(&reference);
    if (!o->quiet)
        fprintf(stderr, "texc: tuned %d buckets in %.1f s\n", buckets.len, tune_now() - start);
    if (o->verbose && !o->quiet) {
        /* the buckets' own times, and what was between them (the layout
           schedule's lookup) in the rest */
        times.total = tune_now() - start;
        tune_times_print(stderr, &times);
    }
    return status;
}

void tune_times_print(FILE *out, const TuneTimes *t)
{
    double other = t->total - t->reference - t->builds - t->measure;
    fprintf(out, "texc: tuning time: total %.1f s, reference %.1f s, builds %.1f s, measurements "
                 "%.1f s, other %.1f s\n",
            t->total, t->reference, t->builds, t->measure, other > 0 ? other : 0);
}

/* The configuration of the default schedule, as config_key writes it. */
#define DEFAULT_KEY "{\"default\":true}"

static void on_signal(int sig)
{
    (void)sig;
    tune_interrupted = 1;
}

/* ------------------------------------------------------------------ */
/* Keys, history, records.                                             */

static char *config_key(Arena *a, json_t *config)
{
    char *s = json_dumps(config, JSON_COMPACT | JSON_SORT_KEYS);
    char *k = arena_strdup(a, s ? s : "");
    free(s);
    return k;
}

static void add_history(Tuner *t, const int *point, double seconds)
{
    if (t->nhist == t->caphist) {
        t->caphist = t->caphist ? 2 * t->caphist : 64;
        t->hx = realloc(t->hx, sizeof *t->hx * (size_t)t->caphist * (size_t)t->sp->nfeatures);
        t->hy = realloc(t->hy, sizeof *t->hy * (size_t)t->caphist);
        t->hpoint = realloc(t->hpoint, sizeof *t->hpoint * (size_t)t->caphist);
    }
    tune_space_features(t->sp, point, t->hx + (size_t)t->nhist * t->sp->nfeatures);
    int *copy = arena_alloc(t->a, sizeof *copy * (size_t)(t->sp->nparams + 1));
    memcpy(copy, point, sizeof *copy * (size_t)t->sp->nparams);
    t->hpoint[t->nhist] = copy;
    t->hy[t->nhist++] = log(seconds);
}

static void consider_best(Tuner *t, json_t *record, double seconds, bool is_default)
{
    if (is_default && (t->default_time == 0 || seconds < t->default_time))
        t->default_time = seconds;
    if (t->best_time == 0 || seconds < t->best_time) {
        if (t->best_time > 0 && seconds < t->best_time * 0.995)
            t->last_improvement = t->measured;
        if (t->best_time == 0)
            t->last_improvement = t->measured;
        t->best_time = seconds;
        json_decref(t->best);
        t->best = json_incref(record);
    }
}

/* Resumes the log's records of this workload, machine and space that
 * the reads before did not see: all of them at the start (counted as
 * resumed), then at each turn (lock.c) those another tuner appended
 * since (counted in others). */
static void load_log(Tuner *t)
{
    json_t **recs;
    int invalid;
    bool first = !t->log_loaded;
    t->log_loaded = true;
    int n = tune_log_read(t->log, &t->log_read, &recs, &invalid, t->o->quiet);
    int *point = arena_alloc(t->a, sizeof *point * (size_t)(t->sp->nparams + 1));
    for (int i = 0; i < n; i++) {
        json_t *r = recs[i];
        if (!tune_record_matches(r, &t->w, &t->m, NULL) ||
            strcmp(json_string_value(json_object_get(r, "space")) ? json_string_value(json_object_get(r, "space")) : "", t->sp->id) != 0)
            continue;
        json_t *config = json_object_get(r, "config");
        bool is_default = json_is_true(json_object_get(config, "default"));
        bool is_point = !is_default && tune_space_point_of(t->sp, config, point);
        if (!is_default && !is_point)
            continue;
        const char *key = config_key(t->a, config);
        bool known = json_object_get(t->seen, key) != NULL;
        if (known && !first)
            continue; /* this tuner's own record, read back */
        if (!known)
            ++*(first ? &t->resumed : &t->others);
        json_object_set_new(t->seen, key, json_true());
        const char *status = json_string_value(json_object_get(r, "status"));
        double secs = json_number_value(json_object_get(r, "time_s"));
        if (status && strcmp(status, "ok") == 0 && secs > 0) {
            consider_best(t, r, secs, is_default);
            if (is_point)
                add_history(t, point, secs);
        } else if (status && strcmp(status, "timeout") == 0 && is_point) {
            double limit = json_number_value(json_object_get(r, "limit_s"));
            if (limit > 0)
                add_history(t, point, limit);
        }
    }
    for (int i = 0; i < n; i++)
        json_decref(recs[i]);
    free(recs);
}

static double gflops_of(const Tuner *t, double seconds)
{
    return seconds > 0 ? t->w.flop / seconds * 1e-9 : 0;
}

/* How the search chose C, as its record says. */
static const char *search_of(const Tuner *t, const Candidate *c)
{
    return !c->point ? "default" : t->exhaustive ? "exhaustive" : c->guided ? "guided" : "random";
}

static json_t *record_of(Tuner *t, Candidate *c, double limit)
{
    json_t *r = tune_record_new(&t->w, &t->m, t->sp);
    json_object_set(r, "config", c->config);
    if (c->point) {
        /* what the cost model sees, for offline study (bench/model_compare) */
        double *f = arena_alloc(t->a, sizeof *f * (size_t)(t->sp->nfeatures + 1));
        tune_space_features(t->sp, c->point, f);
        json_t *features = json_array();
        for (int i = 0; i < t->sp->nfeatures; i++)
            json_array_append_new(features, json_real(f[i]));
        json_object_set_new(r, "features", features);
    }
    json_object_set_new(r, "schedule", json_string(c->schedule_text ? c->schedule_text : ""));
    json_object_set_new(r, "status", json_string(tune_status_name(c->status)));
    if (c->detail[0])
        json_object_set_new(r, "detail", json_string(c->detail));
    if (c->status == TS_OK) {
        json_object_set_new(r, "time_s", json_real(c->time_s));
        json_object_set_new(r, "gflops", json_real(gflops_of(t, c->time_s)));
        json_object_set_new(r, "first_s", json_real(c->first_s));
        json_object_set_new(r, "repeats", json_integer(c->repeats));
        json_object_set_new(r, "copies", json_integer(c->copies));
    }
    if (c->status == TS_OK || c->status == TS_WRONG)
        json_object_set_new(r, "max_err", isfinite(c->max_err) ? json_real(c->max_err) : json_null());
    if (c->status == TS_TIMEOUT)
        json_object_set_new(r, "limit_s", json_real(limit));
    json_object_set_new(r, "build_s", json_real(c->build_s));
    if (t->bench.cuda && (c->status == TS_OK || c->status == TS_WRONG || c->status == TS_CRASH ||
                          c->status == TS_TIMEOUT || c->status == TS_RUN_ERROR))
        json_object_set_new(r, "measured_on", json_integer(c->device)); /* the device's ordinal */
    json_object_set_new(r, "search", json_string(search_of(t, c)));
    if (!isnan(c->predicted))
        json_object_set_new(r, "predicted_s", json_real(exp(c->predicted)));
    json_object_set_new(r, "trial", json_integer(c->trial));
    json_object_set_new(r, "seed", json_integer((json_int_t)t->o->seed));
    tune_record_where(r);
    return r;
}

/* ------------------------------------------------------------------ */
/* Progress.                                                           */

/* Seconds of the time budget spent: since the start, less the waits for
 * the machine lock (the other tuner's turns are not this one's work). */
static double spent(const Tuner *t)
{
    return tune_now() - t->start - t->lock.waited;
}

static bool over_budget(const Tuner *t)
{
    return spent(t) > t->budget || tune_interrupted || t->log_lost;
}

/* Does the budget keep the next candidate from being measured?  The first
 * of a run is measured anyway; a task's first of its space too (the task
 * scheduler promises every task one). */
static bool budget_stops(const Tuner *t)
{
    if (!over_budget(t))
        return false;
    if (tune_interrupted || t->log_lost)
        return true;
    return t->o->task ? t->space_measured > 0 : t->measured > 0;
}

static void clock_text(char *out, size_t size, double s)
{
    if (s < 0)
        s = 0;
    long v = (long)(s + 0.5);
    snprintf(out, size, "%ld:%02ld", v / 60, v % 60);
}

/* "TI=32 TJ=64" from a configuration. */
static void config_text(json_t *config, char *out, size_t size)
{
    out[0] = '\0';
    if (json_is_true(json_object_get(config, "default"))) {
        snprintf(out, size, "the default schedule");
        return;
    }
    size_t len = 0;
    const char *key;
    json_t *v;
    json_object_foreach(config, key, v) {
        if (len < size)
            len += (size_t)snprintf(out + len, size - len, "%s%s=%lld", len ? " " : "", key,
                                    (long long)json_integer_value(v));
    }
}

static int failures(const Tuner *t)
{
    return t->measured - t->counts[TS_OK];
}

static void progress(Tuner *t, const Candidate *c)
{
    if (t->o->quiet || (t->o->task && !t->o->verbose))
        return; /* a task's rounds are said by tasks.c */
    double elapsed = tune_now() - t->start;
    int done = t->measured;
    double left = t->budget - spent(t);
    if (done > 0 && t->planned > done) {
        double est = spent(t) / done * (t->planned - done);
        if (est < left)
            left = est;
    }
    if (t->planned <= done)
        left = 0;
    char el[32], rem[32];
    clock_text(el, sizeof el, elapsed);
    clock_text(rem, sizeof rem, left);
    double best = gflops_of(t, t->best_time);
    if (t->tty) {
        int width = 24, fill = t->planned > 0 ? done * width / t->planned : 0;
        if (fill > width)
            fill = width;
        char bar[64];
        for (int i = 0; i < width; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[width] = '\0';
        fprintf(stderr, "\r\033[Ktexc: tuning [%s] %d/%d  best %.3g GFLOP/s  %d failed  %s elapsed, ~%s left",
                bar, done, t->planned, best, failures(t), el, rem);
        fflush(stderr);
        return;
    }
    char cfg[512];
    config_text(c->config, cfg, sizeof cfg);
    if (c->status == TS_OK)
        fprintf(stderr, "texc: trial %d/%d: ok %.3g s (%.3g GFLOP/s), best %.3g GFLOP/s, %s elapsed: %s\n",
                done, t->planned, c->time_s, gflops_of(t, c->time_s), best, el, cfg);
    else
        fprintf(stderr, "texc: trial %d/%d: %s (%s), %s elapsed: %s\n", done, t->planned,
                tune_status_name(c->status), c->detail, el, cfg);
}

static void progress_end(Tuner *t)
{
    if (t->tty && !t->o->quiet && t->measured > 0)
        fputc('\n', stderr);
}

/* ------------------------------------------------------------------ */
/* Candidates.                                                         */

static Candidate *new_candidate(Tuner *t, const int *point)
{
    Candidate *c = arena_alloc(t->a, sizeof *c);
    c->predicted = NAN;
    if (point) {
        c->point = arena_alloc(t->a, sizeof *c->point * (size_t)(t->sp->nparams + 1));
        memcpy(c->point, point, sizeof *point * (size_t)t->sp->nparams);
        c->config = tune_space_config(t->sp, point);
        c->sched = tune_space_schedule(t->a, t->sp, point);
    } else {
        c->config = json_pack("{s:b}", "default", 1);
        /* the default: what a build does untuned (an auto space extends the
           file's schedule, a knob space replaces it) */
        int *none = arena_alloc(t->a, sizeof *none * (size_t)(t->sp->nparams + 1));
        Space plain = *t->sp;
        plain.nplans = 0;
        c->sched = t->sp->is_auto ? tune_space_schedule(t->a, &plain, none)
                                  : arena_alloc(t->a, sizeof *c->sched);
        c->sched->target = t->sp->target;
    }
    c->key = config_key(t->a, c->config);
    vec_push(t->a, &t->candidates, c);
    return c;
}

static bool is_seen(Tuner *t, json_t *config)
{
    Arena scratch = { 0 };
    bool seen = json_object_get(t->seen, config_key(&scratch, config)) != NULL;
    arena_free(&scratch);
    return seen;
}

static bool point_seen(Tuner *t, const int *point)
{
    json_t *config = tune_space_config(t->sp, point);
    bool seen = is_seen(t, config);
    json_decref(config);
    return seen;
}

static void mark_seen(Tuner *t, const int *point)
{
    json_t *config = tune_space_config(t->sp, point);
    Arena scratch = { 0 };
    json_object_set_new(t->seen, config_key(&scratch, config), json_true());
    arena_free(&scratch);
    json_decref(config);
}

/* Keeps the points of PTS (N) that apply; marks the others seen.
 * Returns how many are kept (compacted to the front). */
static int keep_legal(Tuner *t, int **pts, int n)
{
    if (n == 0)
        return 0;
    bool *ok = calloc((size_t)n, sizeof *ok);
    tune_space_check(t->a, t->g, t->sp, pts, n, ok);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (ok[i]) {
            pts[k++] = pts[i];
        } else {
            mark_seen(t, pts[i]);
            t->pruned++;
        }
    }
    free(ok);
    return k;
}

/* The next N unseen legal points in odometer order. */
static int propose_exhaustive(Tuner *t, int **out, int n)
{
    int got = 0;
    int np = t->sp->nparams;
    while (got < n && !t->odometer_done) {
        int want = 0;
        int **pts = calloc((size_t)n, sizeof *pts);
        while (want < n - got && !t->odometer_done) {
            if (tune_space_legal(t->sp, t->odometer) && !point_seen(t, t->odometer)) {
                pts[want] = arena_alloc(t->a, sizeof **pts * (size_t)(np + 1));
                memcpy(pts[want], t->odometer, sizeof **pts * (size_t)np);
                mark_seen(t, pts[want]);
                want++;
            }
            int d = np - 1;
            while (d >= 0 && ++t->odometer[d] == t->sp->params[d].nvalues)
                t->odometer[d--] = 0;
            if (d < 0)
                t->odometer_done = true;
        }
        int k = keep_legal(t, pts, want);
        for (int i = 0; i < k; i++)
            out[got++] = pts[i];
        free(pts);
    }
    return got;
}

/* A copy of P with one or two parameters changed, passing the rules. */
static bool mutate(Tuner *t, const int *p, int *out)
{
    int np = t->sp->nparams;
    for (int attempt = 0; attempt < 20; attempt++) {
        memcpy(out, p, sizeof *out * (size_t)np);
        int changes = 1 + (int)(tune_rand(&t->rng) % 2);
        for (int c = 0; c < changes; c++) {
            int k = (int)(tune_rand(&t->rng) % (uint64_t)np);
            int nv = t->sp->params[k].nvalues;
            if (nv < 2)
                continue;
            if (!t->sp->params[k].categorical && tune_rand(&t->rng) % 2) {
                /* a size: usually its neighbour */
                int step = tune_rand(&t->rng) % 2 ? 1 : -1;
                int v = out[k] + step;
                out[k] = v < 0 ? 1 : v >= nv ? nv - 2 : v;
            } else {
                int v = (int)(tune_rand(&t->rng) % (uint64_t)(nv - 1));
                out[k] = v >= out[k] ? v + 1 : v;
            }
        }
        if (memcmp(out, p, sizeof *out * (size_t)np) != 0 && tune_space_legal(t->sp, out))
            return true;
    }
    return false;
}

typedef struct Scored {
    int *point;
    double score;
} Scored;

static int by_score(const void *x, const void *y)
{
    double a = ((const Scored *)x)->score, b = ((const Scored *)y)->score;
    return a < b ? -1 : a > b;
}

/* The indices of the NMAX fastest measurements in the history. */
static int best_history(const Tuner *t, int *out, int nmax)
{
    int n = 0;
    for (int i = 0; i < t->nhist; i++) {
        int k = n < nmax ? n++ : nmax;
        if (k == nmax && t->hy[i] >= t->hy[out[nmax - 1]])
            continue;
        if (k == nmax)
            k = nmax - 1;
        while (k > 0 && t->hy[out[k - 1]] > t->hy[i]) {
            out[k] = out[k - 1];
            k--;
        }
        out[k] = i;
    }
    return n;
}

/* Adds a copy of POINT to POOL unless it was measured already or is in
 * the pool (IN_POOL: its configurations' keys).  True if it was added. */
static bool pool_add(Tuner *t, Arena *scratch, json_t *in_pool, PtrVec *pool, const int *point)
{
    int np = t->sp->nparams;
    json_t *config = tune_space_config(t->sp, point);
    char *key = config_key(scratch, config);
    bool fresh = !json_object_get(t->seen, key) && !json_object_get(in_pool, key);
    if (fresh) {
        json_object_set_new(in_pool, key, json_true());
        int *p = arena_alloc(t->a, sizeof *p * (size_t)(np + 1));
        memcpy(p, point, sizeof *p * (size_t)np);
        vec_push(scratch, pool, p);
    }
    json_decref(config);
    return fresh;
}

/* The neighbouring bucket's data (TuneOptions.shared) for this space,
 * or NULL. */
static const TuneShared *shared_data(const Tuner *t)
{
    const TuneShared *sh = t->o->shared;
    return sh && sh->n > 0 && sh->nfeatures == t->sp->nfeatures && strcmp(sh->space, t->sp->id) == 0
               ? sh
               : NULL;
}

/* The cost model over this task's measurements and the neighbouring
 * bucket's, those moved to the mean of these (NULL: too few to fit). */
static CostModel *fit_model(Tuner *t, Arena *scratch)
{
    const TuneShared *sh = shared_data(t);
    int nf = t->sp->nfeatures;
    if (!sh)
        return tune_model_fit(scratch, t->hx, t->hy, t->nhist, nf);
    int n = sh->n + t->nhist;
    double *x = arena_alloc(scratch, sizeof *x * (size_t)n * (size_t)nf);
    double *y = arena_alloc(scratch, sizeof *y * (size_t)n), mean = 0;
    for (int i = 0; i < t->nhist; i++)
        mean += t->hy[i] / t->nhist;
    memcpy(x, sh->x, sizeof *x * (size_t)sh->n * (size_t)nf);
    memcpy(x + (size_t)sh->n * nf, t->hx, sizeof *x * (size_t)t->nhist * (size_t)nf);
    for (int i = 0; i < sh->n; i++)
        y[i] = sh->y[i] + mean;
    memcpy(y + sh->n, t->hy, sizeof *y * (size_t)t->nhist);
    return tune_model_fit(scratch, x, y, n, nf);
}

/* What this task leaves to the next bucket's (TuneOptions.shared): its
 * measurements, less their mean; the neighbour's, if it measured none. */
static void share_data(const Tuner *t)
{
    TuneShared *sh = t->o->shared;
    if (!sh || t->nhist == 0)
        return;
    int nf = t->sp->nfeatures;
    double mean = 0;
    for (int i = 0; i < t->nhist; i++)
        mean += t->hy[i] / t->nhist;
    free(sh->x);
    free(sh->y);
    sh->x = malloc(sizeof *sh->x * (size_t)t->nhist * (size_t)nf + 1);
    sh->y = malloc(sizeof *sh->y * (size_t)t->nhist + 1);
    if (!sh->x || !sh->y)
        te_internal_error(__FILE__, __LINE__, "out of memory");
    memcpy(sh->x, t->hx, sizeof *sh->x * (size_t)t->nhist * (size_t)nf);
    for (int i = 0; i < t->nhist; i++)
        sh->y[i] = t->hy[i] - mean;
    sh->n = t->nhist;
    sh->nfeatures = nf;
    snprintf(sh->space, sizeof sh->space, "%s", t->sp->id);
}

/* Up to N candidates chosen by the cost model (or at random). */
static int propose_guided(Tuner *t, int **out, int n, double *predicted, bool *guided)
{
    int parents[6];
    int nparents = best_history(t, parents, 6);
    int np = t->sp->nparams, nf = t->sp->nfeatures;
    Arena scratch = { 0 };
    CostModel *model = fit_model(t, &scratch);
    PtrVec pool = { 0 };
    json_t *in_pool = json_object();
    int *buf = arena_alloc(&scratch, sizeof *buf * (size_t)(np + 1));
    /* mutations of the best measured points, then random points */
    int want_mut = model ? 24 : 0, want_rand = model ? 64 : 4 * n;
    for (int i = 0; i < nparents; i++) {
        for (int k = 0; k < want_mut; k++) {
            if (mutate(t, t->hpoint[parents[i]], buf))
                pool_add(t, &scratch, in_pool, &pool, buf);
        }
    }
    int nmut = pool.len;
    for (int k = 0, tries = 0; k < want_rand && tries < 20 * want_rand; tries++) {
        if (tune_space_random(t->sp, &t->rng, buf) && tune_space_legal(t->sp, buf) &&
            pool_add(t, &scratch, in_pool, &pool, buf))
            k++;
    }
    json_decref(in_pool);
    int got = 0;
    if (pool.len > 0) {
        Scored *s = arena_alloc(&scratch, sizeof *s * (size_t)pool.len);
        double *feat = arena_alloc(&scratch, sizeof *feat * (size_t)(nf + 1));
        for (int i = 0; i < pool.len; i++) {
            s[i].point = pool.items[i];
            if (model) {
                tune_space_features(t->sp, s[i].point, feat);
                s[i].score = tune_model_predict(model, feat);
            } else {
                s[i].score = (double)(tune_rand(&t->rng) % 1000000);
            }
        }
        /* the model's picks first; a quarter (at least one) at random from
           the random part of the pool */
        int nrandom = !model ? n : n >= 2 ? (n / 4 > 1 ? n / 4 : 1) : 0;
        int nmodel = n - nrandom;
        qsort(s, (size_t)pool.len, sizeof *s, by_score);
        bool *taken = arena_alloc(&scratch, sizeof *taken * (size_t)pool.len);
        int **pick = calloc((size_t)n, sizeof *pick);
        double *pick_pred = calloc((size_t)n, sizeof *pick_pred);
        bool *pick_guided = calloc((size_t)n, sizeof *pick_guided);
        int npick = 0;
        for (int i = 0; i < pool.len && npick < nmodel; i++) {
            taken[i] = true;
            pick_pred[npick] = s[i].score;
            pick_guided[npick] = true;
            pick[npick++] = s[i].point;
        }
        for (int tries = 0; npick < n && tries < 8 * pool.len; tries++) {
            int i = (int)(tune_rand(&t->rng) % (uint64_t)pool.len);
            if (taken[i])
                continue;
            taken[i] = true;
            pick_pred[npick] = model ? s[i].score : NAN;
            pick_guided[npick] = false;
            pick[npick++] = s[i].point;
        }
        for (int i = 0; i < npick; i++)
            mark_seen(t, pick[i]);
        /* keep the legal ones, with their predictions */
        bool *ok = calloc((size_t)(npick + 1), sizeof *ok);
        tune_space_check(t->a, t->g, t->sp, pick, npick, ok);
        for (int i = 0; i < npick; i++) {
            if (!ok[i]) {
                t->pruned++;
                continue;
            }
            predicted[got] = pick_pred[i];
            guided[got] = pick_guided[i];
            out[got++] = pick[i];
        }
        free(ok);
        free(pick);
        free(pick_pred);
        free(pick_guided);
    }
    (void)nmut;
    arena_free(&scratch);
    return got;
}

/* The model's 5-fold cross-validated rank correlation on the history:
 * how well it orders measurements it was not fitted on (-v). */
static double cross_validated(Tuner *t)
{
    int n = t->nhist, nf = t->sp->nfeatures;
    if (n < 10)
        return NAN;
    double *x = malloc(sizeof *x * (size_t)n * (size_t)nf), *y = malloc(sizeof *y * (size_t)n);
    double *pred = malloc(sizeof *pred * (size_t)n), *meas = malloc(sizeof *meas * (size_t)n);
    int np = 0;
    for (int fold = 0; fold < 5; fold++) {
        int m = 0;
        for (int i = 0; i < n; i++) {
            if (i % 5 == fold)
                continue;
            memcpy(x + (size_t)m * nf, t->hx + (size_t)i * nf, sizeof *x * (size_t)nf);
            y[m++] = t->hy[i];
        }
        Arena scratch = { 0 };
        CostModel *model = tune_model_fit(&scratch, x, y, m, nf);
        for (int i = fold; model && i < n; i += 5) {
            pred[np] = tune_model_predict(model, t->hx + (size_t)i * nf);
            meas[np++] = t->hy[i];
        }
        arena_free(&scratch);
    }
    double r = tune_rank_correlation(pred, meas, np);
    free(x);
    free(y);
    free(pred);
    free(meas);
    return r;
}

/* ------------------------------------------------------------------ */
/* The loop.                                                           */

/* --tune --target cuda: the devices to measure on, found before anything
 * is written; false after a message.  The driver is asked in a child
 * process (tune_cuda_devices): initialised here, it would be unusable in
 * the children that run the candidates. */
static bool cuda_ready(const TuneOptions *o)
{
#ifndef TEXC_HAVE_CUDA
    fprintf(stderr, "texc: --tune --target %s: the cuda target was disabled at configure time "
                    "(no NVRTC found)\n",
            target_name(o->target));
    return false;
#else
    const CudaDevices *d = tune_cuda_devices();
    if (d->count == 0) {
        fprintf(stderr, "texc: --tune --target %s needs a CUDA device: none found (%s); "
                        "building without --tune works without one (--arch sm_XX)\n",
                target_name(o->target), d->why);
        return false;
    }
    char sm[16];
    snprintf(sm, sizeof sm, "sm_%d", d->sm);
    if (o->arch && strcmp(o->arch, sm) != 0) {
        fprintf(stderr, "texc: --tune --target %s measures on device 0, %s (%s): it cannot tune "
                        "for --arch %s; drop --arch or give --arch %s\n",
                target_name(o->target), d->name, sm, o->arch, sm);
        return false;
    }
    if (!o->quiet && o->verbose)
        fprintf(stderr, "texc: measuring on %d device%s like device 0: %s (%s, %d bytes of shared "
                        "memory a block)\n",
                d->nused, d->nused == 1 ? "" : "s", d->name, sm, d->smem_optin);
    if (!o->quiet && d->nused < d->count)
        fprintf(stderr, "texc: %d of the %d CUDA devices differ from device 0 (%s, %s): tuning "
                        "measures on the %d like it\n",
                d->count - d->nused, d->count, d->name, sm, d->nused);
    return true;
#endif
}

/* Waits for this tuner's turn on the machine (lock.c), then reads what
 * other tuners logged since its last turn, so that none of it is
 * measured again.  Returns false with *STOP saying why the search ends
 * instead. */
static bool take_turn(Tuner *t, const char **stop)
{
    /* at most the whole time budget: a tuner stopped with ^Z while it
       holds the lock must not keep this one waiting for ever */
    switch (tune_lock_take(&t->lock, t->budget, t->o->quiet)) {
    case TUNE_LOCK_HELD:
        break;
    case TUNE_LOCK_TIMEOUT: {
        long pid = tune_lock_holder(&t->lock);
        char who[48] = "";
        if (pid)
            snprintf(who, sizeof who, " (pid %ld)", pid);
        *stop = arena_printf(t->a, "another texc tuner%s kept the machine for longer than the "
                                   "time budget (%.0f s)", who, t->budget);
        return false;
    }
    case TUNE_LOCK_INTERRUPTED:
        *stop = "interrupted";
        return false;
    case TUNE_LOCK_FAILED:
        t->lock_failed = true;
        *stop = "the machine lock failed";
        return false;
    }
    int before = t->others;
    load_log(t);
    if (t->others > before && t->o->verbose)
        fprintf(stderr, "texc: %d configuration%s measured by another tuner since this one's "
                        "last turn\n",
                t->others - before, t->others - before == 1 ? "" : "s");
    return true;
}

/* Records a finished candidate: log, statistics, progress.  R is its
 * record when another MPI rank measured it (its own machine's; POOLED:
 * of this machine's model, so that its time joins the search), else
 * NULL: this process measured it. */
static void finish_record(Tuner *t, Candidate *c, double limit, json_t *r, bool pooled)
{
    if (!r)
        tune_discard(&t->bench, c);
    if (c->status == TS_COUNT)
        return; /* interrupted or lost: not measured, not logged */
    r = r ? json_incref(r) : record_of(t, c, limit);
    if (!tune_log_append(t->log, r))
        t->log_lost++;
    t->measured++;
    t->space_measured += c->point != NULL;
    t->counts[c->status]++;
    t->trial_gflops[t->measured - 1] = c->status == TS_OK ? gflops_of(t, c->time_s) : 0;
    if (!pooled) {
        json_decref(r);
        progress(t, c);
        return;
    }
    if (c->status == TS_OK) {
        consider_best(t, r, c->time_s, c->point == NULL);
        if (c->point)
            add_history(t, c->point, c->time_s);
        if (!isnan(c->predicted) && c->guided) {
            t->pred[t->npred] = c->predicted;
            t->meas[t->npred++] = log(c->time_s);
        }
    } else if (c->status == TS_TIMEOUT && c->point) {
        add_history(t, c->point, limit);
    }
    json_decref(r);
    progress(t, c);
}

static void finish(Tuner *t, Candidate *c, double limit)
{
    finish_record(t, c, limit, NULL, true);
}

/* The seconds one timed repeat may take: it follows the best so far. */
static double run_limit(const Tuner *t)
{
    return t->best_time > 0 ? fmax(1.0, 20 * t->best_time) : 60;
}

/* Measures the built candidates of BATCH (N) and records them all: one
 * at a time, each recorded as it completes; or, with several GPUs, the
 * batch on all of them at once, then recorded in order.  A candidate
 * built after the time budget ran out is not measured. */
static void measure_batch(Tuner *t, Candidate **batch, int n)
{
    double limit = run_limit(t);
    if (t->bench.ndevices > 1) {
        Candidate **built = arena_alloc(t->a, sizeof *built * (size_t)(n + 1));
        int nbuilt = 0;
        for (int i = 0; i < n; i++) {
            if (batch[i]->status != TS_OK)
                continue;
            if (budget_stops(t))
                batch[i]->status = TS_COUNT;
            else
                built[nbuilt++] = batch[i];
        }
        tune_measure_devices(&t->bench, built, nbuilt, limit);
        for (int i = 0; i < n; i++)
            finish(t, batch[i], limit);
        return;
    }
    for (int i = 0; i < n; i++) {
        Candidate *c = batch[i];
        limit = run_limit(t);
        c->device = t->bench.ndevices > 0 ? t->bench.devices[0] : 0;
        if (c->status == TS_OK) {
            if (budget_stops(t))
                c->status = TS_COUNT;
            else
                tune_measure(&t->bench, c, limit);
        }
        finish(t, c, limit);
    }
}

/* TEXT (a schedule block) without the statements on prepack stages: each
 * build's layouts (sched/layout.c) make those for whichever tiles the
 * schedule picks, and the user's file has no such stage to name.  (The
 * candidate's build laid its copy of the graph out; G, the tuner's, need
 * not have those stages, so they are known by name.) */
static void print_pasteable(const Graph *g, const char *text)
{
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line + 1) : strlen(line);
        const char *p = line + strspn(line, " ");
        size_t n = strcspn(p, ". =\n");
        bool pack = false;
        if (p[n] == '.' && n > 0 && n < 256) {
            char stage[256];
            memcpy(stage, p, n);
            stage[n] = '\0';
            pack = sch_prepack_named(g, stage);
        }
        if (!pack)
            fwrite(line, 1, len, stdout);
        line += len;
    }
}

static void summary(Tuner *t, double model_corr)
{
    if (t->o->quiet || t->o->task)
        return; /* a task's: tasks.c says it, in its table */
    double elapsed = tune_now() - t->start;
    char el[32];
    clock_text(el, sizeof el, elapsed);
    fprintf(stderr, "texc: tuned %s in %s: %d candidate%s measured (%d ok", t->w.kernel, el,
            t->measured, t->measured == 1 ? "" : "s", t->counts[TS_OK]);
    for (int s = 1; s < TS_COUNT; s++)
        if (t->counts[s])
            fprintf(stderr, ", %d %s", t->counts[s], tune_status_name((TuneStatus)s));
    fputc(')', stderr);
    if (t->resumed)
        fprintf(stderr, ", %d resumed from the log", t->resumed);
    if (t->others)
        fprintf(stderr, ", %d measured meanwhile by another tuner", t->others);
    if (t->pruned)
        fprintf(stderr, ", %d pruned as illegal", t->pruned);
    fputs("\n", stderr);
    if (t->lock.said) {
        char waited[32];
        clock_text(waited, sizeof waited, t->lock.waited);
        fprintf(stderr, "texc: waited %s for other tuners' turns on this machine (not counted "
                        "in the time budget)\n",
                waited);
    }
    if (model_corr == model_corr)
        fprintf(stderr, "texc: cost model: rank correlation %.2f between predicted and measured "
                        "times of %d guided candidates\n",
                model_corr, t->npred);
    if (!t->best) {
        fprintf(stderr, "texc: no valid measurement: the default schedule stays\n");
        fprintf(stderr, "texc: log: %s\n", t->log);
        return;
    }
    json_t *config = json_object_get(t->best, "config");
    char cfg[512];
    config_text(config, cfg, sizeof cfg);
    fprintf(stderr, "texc: best: %.3g GFLOP/s (%.3g s), %s", gflops_of(t, t->best_time),
            t->best_time, cfg);
    if (t->default_time > 0)
        fprintf(stderr, "; %.3gx the default schedule (%.3g GFLOP/s)\n",
                t->default_time / t->best_time, gflops_of(t, t->default_time));
    else
        fputs("; the default schedule has no valid measurement\n", stderr);
    fprintf(stderr, "texc: log: %s\n", t->log);
    const char *text = json_string_value(json_object_get(t->best, "schedule"));
    if (text && *text) {
        fprintf(stderr, "texc: the best schedule, to paste into %s:\n", t->o->source_path);
        print_pasteable(t->g, text);
        fflush(stdout);
    }
}

static int tune_buckets(Arena *outer, Graph *g, const TuneOptions *o);

/* Opens T's tuning of G: the space, the workload, the log (resumed),
 * the lock, the plan, the signal handlers.  False after a message (then
 * tuner_close still frees what was made). */
static bool tuner_open(Tuner *t, Arena *outer, Graph *g, const TuneOptions *o)
{
    bool cuda = o->target == TARGET_CUDA;
    t->a = &t->arena;
    t->g = g;
    t->o = o;
    t->start = tune_now();
    t->trials = o->trials > 0 ? o->trials : TUNE_DEFAULT_TRIALS;
    t->budget = o->time_budget > 0 ? o->time_budget : TUNE_DEFAULT_BUDGET_S;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    t->jobs = o->jobs > 0 ? o->jobs : cores > 0 ? (int)cores : 1;
    /* a batch: two builds per job, so that building overlaps little idle */
    t->batch = 2 * t->jobs > 16 ? 16 : 2 * t->jobs;
    /* in an MPI job, as many more as there are workers: a share each */
    t->batch *= 1 + tune_mpi_workers();
    t->rng = o->seed * 0x9e3779b97f4a7c15ull + 1;
    t->tty = isatty(2) && !o->quiet;
    t->seen = json_object();

    const Schedule *written =
        o->bucket ? sch_bucket_schedule(g, o->target, o->bucket) : sch_file_schedule(g, o->target);
    t->sp = tune_space_new(t->a, g, written, o->target);
    if (!t->sp)
        return false;
    t->sp->bucket = o->bucket;
    if (cuda)
        t->sp->sm = tune_cuda_devices()->sm; /* points are checked by the backend too */
    if (o->verbose)
        tune_space_print(stderr, t->sp);
    tune_workload(t->a, g, o, &t->w);
    tune_machine(&t->m, o->target, o->arch);
    t->log = tune_log_path(outer, o);
    if (!t->log || !tune_log_prepare(t->log))
        return false;
    t->lock_open = tune_lock_open(&t->lock);
    if (!t->lock_open)
        return false;
    if (o->verbose)
        fprintf(stderr, "texc: workload %s, %s, %.3g GFLOP per run; machine: %s; %s\n", t->w.hash,
                t->w.kernel, t->w.flop * 1e-9, t->m.arch, t->m.compiler);
    load_log(t);
    if (t->resumed && !o->quiet)
        fprintf(stderr, "texc: resuming: %d configuration%s of this workload already measured in %s\n",
                t->resumed, t->resumed == 1 ? "" : "s", t->log);

    /* the plan: exhaustive when what is left fits in the trials */
    int np = t->sp->nparams;
    t->need_default = !json_object_get(t->seen, DEFAULT_KEY);
    double left_in_space = t->sp->size - (t->resumed - (t->need_default ? 0 : 1));
    t->exhaustive = left_in_space <= t->trials;
    t->odometer = arena_alloc(t->a, sizeof *t->odometer * (size_t)(np + 1));
    t->odometer_done = t->sp->size == 0;
    if (t->sp->size == 0 && !o->quiet)
        fprintf(stderr, "texc: the file's schedule leaves nothing to the automatic space: only "
                        "the schedule as written is measured\n");
    t->planned = (t->need_default ? 1 : 0) +
                 (int)(t->exhaustive ? (left_in_space > 0 ? left_in_space : 0) : t->trials);
    if (t->exhaustive && t->need_default && t->planned > t->trials + 1)
        t->planned = t->trials + 1;
    t->trial_gflops = arena_alloc(t->a, sizeof *t->trial_gflops * (size_t)(t->planned + t->trials + 2));
    t->pred = arena_alloc(t->a, sizeof *t->pred * (size_t)(t->trials + 2));
    t->meas = arena_alloc(t->a, sizeof *t->meas * (size_t)(t->trials + 2));
    if (!o->quiet && !o->task)
        fprintf(stderr, "texc: tuning %s: %s search of %.0f point%s (%s), up to %d candidate%s, "
                        "%.0f s budget, %d parallel build%s\n",
                t->w.kernel, t->exhaustive ? "exhaustive" : "guided", t->sp->size,
                t->sp->size == 1 ? "" : "s", t->sp->is_auto ? "automatic space" : "the file's knobs",
                t->planned, t->planned == 1 ? "" : "s", t->budget, t->jobs, t->jobs == 1 ? "" : "s");

    t->sa.sa_handler = on_signal;
    sigemptyset(&t->sa.sa_mask);
    sigaction(SIGINT, &t->sa, &t->old_int);
    sigaction(SIGTERM, &t->sa, &t->old_term);
    t->signals = true;
    /* (the tuners of a program's tasks are open together: the first
       one's handlers stay, and an interrupt reaches them all) */
    if (t->old_int.sa_handler != on_signal)
        tune_interrupted = 0;

    t->batchv = arena_alloc(t->a, sizeof *t->batchv * (size_t)(t->batch + 1));
    t->pts = arena_alloc(t->a, sizeof *t->pts * (size_t)(t->batch + 1));
    t->predicted = arena_alloc(t->a, sizeof *t->predicted * (size_t)(t->batch + 1));
    t->guided = arena_alloc(t->a, sizeof *t->guided * (size_t)(t->batch + 1));
    return true;
}

/* The bench (inputs, reference), made once, when something is first
 * measured.  False (T->failed) when it cannot be. */
static bool bench_start(Tuner *t)
{
    if (t->bench_ready)
        return !t->failed;
    t->bench_ready = true; /* freed even if it fails half-way */
    /* a fixed C name: the private builds need not be named after the
       file (whose name could be anything, even a keyword) */
    /* the reference cannot stop half-way: Ctrl-C ends texc at once (a
       later tuner removes the directory left behind) */
    sigaction(SIGINT, &t->old_int, NULL);
    sigaction(SIGTERM, &t->old_term, NULL);
    bool ready = tune_bench_init(&t->bench, t->a, t->g, t->o, "texc_kernel");
    sigaction(SIGINT, &t->sa, NULL);
    sigaction(SIGTERM, &t->sa, NULL);
    t->failed = !ready;
    return ready;
}

/* Builds and measures BATCH (N) here, recording each candidate. */
static void run_here(Tuner *t, Candidate **batch, int n)
{
    double at = tune_now();
    tune_build(&t->bench, batch, n, t->jobs);
    double built = tune_now();
    measure_batch(t, batch, n);
    t->times.builds += built - at;
    t->times.measure += tune_now() - built;
}

/* A candidate's results from the record another rank measured it with. */
static void take_record(Candidate *c, json_t *r)
{
    const char *status = json_string_value(json_object_get(r, "status"));
    c->status = TS_COUNT;
    for (int k = 0; status && k < TS_COUNT; k++)
        if (strcmp(status, tune_status_name((TuneStatus)k)) == 0)
            c->status = (TuneStatus)k;
    if (c->status == TS_COUNT)
        c->status = TS_RUN_ERROR; /* a record texc would not write */
    const char *detail = json_string_value(json_object_get(r, "detail"));
    snprintf(c->detail, sizeof c->detail, "%s", detail ? detail : "");
    c->time_s = json_number_value(json_object_get(r, "time_s"));
    c->first_s = json_number_value(json_object_get(r, "first_s"));
    c->build_s = json_number_value(json_object_get(r, "build_s"));
    c->repeats = (int)json_integer_value(json_object_get(r, "repeats"));
    c->copies = (int)json_integer_value(json_object_get(r, "copies"));
    json_t *err = json_object_get(r, "max_err");
    c->max_err = json_is_number(err) ? json_number_value(err) : NAN;
}

/* The candidate of BATCH (N) numbered as trial number ONE (a job's
 * entry) has, or NULL. */
static Candidate *trial_of(Candidate **batch, int n, json_t *one)
{
    int trial = (int)json_integer_value(json_object_get(one, "trial"));
    for (int i = 0; i < n; i++)
        if (batch[i]->trial == trial)
            return batch[i];
    return NULL;
}

/* Builds and measures BATCH (N candidates, numbered): alone, or in an
 * MPI job (mpi.c) in shares, one for this rank and one for each live
 * worker, dealt in turn; this rank measures its own under the machine
 * lock, releases it (a worker on this host takes it for its share), then
 * records the workers' answers.  A share whose rank is lost is not
 * recorded: its configurations stay seen, so they are not proposed
 * again. */
static void run_batch(Tuner *t, Candidate **batch, int n)
{
    int nw = tune_mpi_workers();
    if (nw == 0) {
        run_here(t, batch, n);
        return;
    }
    int *ranks = arena_alloc(t->a, sizeof *ranks * (size_t)(nw + 1));
    nw = tune_mpi_assign(ranks, nw);
    Candidate **mine = arena_alloc(t->a, sizeof *mine * (size_t)(n + 1));
    int nmine = 0;
    json_t **jobs = arena_alloc(t->a, sizeof *jobs * (size_t)(nw + 1));
    int *ids = arena_alloc(t->a, sizeof *ids * (size_t)(nw + 1));
    double limit = run_limit(t);
    for (int w = 0; w < nw; w++) {
        ids[w] = ++t->jobs_sent;
        jobs[w] = json_pack("{s:i, s:i, s:f, s:[]}", "job", ids[w], "task", t->o->task_no,
                            "limit", limit, "cands");
    }
    for (int i = 0; i < n; i++) {
        int share = i % (nw + 1);
        if (share == 0 || budget_stops(t)) {
            mine[nmine++] = batch[i];
            continue;
        }
        Candidate *c = batch[i];
        json_t *one = json_pack("{s:i, s:O, s:s}", "trial", c->trial, "config", c->config,
                                "search", search_of(t, c));
        if (!isnan(c->predicted))
            json_object_set_new(one, "predicted_s", json_real(exp(c->predicted)));
        json_array_append_new(json_object_get(jobs[share - 1], "cands"), one);
    }
    /* the shares go out first, so that other machines work while this
       one does; a share that cannot be sent is this rank's */
    for (int w = 0; w < nw; w++) {
        json_t *cands = json_object_get(jobs[w], "cands");
        if (json_array_size(cands) == 0 || tune_mpi_send_job(ranks[w], jobs[w]))
            continue;
        for (size_t k = 0; k < json_array_size(cands); k++) {
            Candidate *c = trial_of(batch, n, json_array_get(cands, k));
            if (c)
                mine[nmine++] = c;
        }
        json_array_clear(cands);
    }
    double at = tune_now();
    run_here(t, mine, nmine);
    tune_lock_release(&t->lock);
    /* a share's deadline: its builds and its measurements, after the
       turns of the other ranks on its host (as many as the job has) */
    double per = (t->bench.compile_limit + (fmin(limit, 60) + 5) * (double)(n / (nw + 1) + 1)) *
                 (nw + 1) + 30;
    for (int w = 0; w < nw; w++) {
        json_t *cands = json_object_get(jobs[w], "cands");
        size_t nc = json_array_size(cands);
        if (nc == 0) {
            json_decref(jobs[w]);
            continue;
        }
        json_t *ans = tune_mpi_wait_records(ranks[w], ids[w], (int)nc, at + per);
        json_t *records = ans ? json_object_get(ans, "records") : NULL;
        bool pooled = tune_mpi_pooled(ranks[w]);
        for (size_t k = 0; k < nc; k++) {
            Candidate *c = trial_of(batch, n, json_array_get(cands, k));
            if (!c)
                continue;
            json_t *r = NULL;
            for (size_t j = 0; j < json_array_size(records) && !r; j++)
                if (json_integer_value(json_object_get(json_array_get(records, j), "trial")) == c->trial)
                    r = json_array_get(records, j);
            if (!r) {
                c->status = TS_COUNT; /* lost with its rank: not recorded */
                continue;
            }
            take_record(c, r);
            finish_record(t, c, limit, r, pooled);
        }
        json_decref(ans);
        json_decref(jobs[w]);
    }
}

/* Measures batches until UPTO candidates of the space (not the default)
 * are measured in all, or the search ends (T->done, T->stop saying why:
 * NULL when the trials ran out). */
static void tuner_batches(Tuner *t, int upto)
{
    const TuneOptions *o = t->o;
    Candidate **batch = t->batchv;
    if (upto > t->trials)
        upto = t->trials;
    while (!t->done) {
        if (over_budget(t) && (!o->task || t->space_measured > 0 || tune_interrupted || t->log_lost)) {
            t->stop = t->log_lost        ? "the tuning log cannot be written"
                      : tune_interrupted ? "interrupted"
                                         : "the time budget is spent";
            t->done = true;
            break;
        }
        /* a turn: nothing of another tuner runs from here to the release
           below, and what it measured before is known */
        if (!take_turn(t, &t->stop)) {
            t->done = true;
            break;
        }
        t->need_default = t->need_default && !json_object_get(t->seen, DEFAULT_KEY);
        int n = 0;
        if (t->need_default) {
            batch[n++] = new_candidate(t, NULL);
            json_object_set_new(t->seen, batch[0]->key, json_true());
            t->need_default = false;
        }
        if (o->seed_config && !t->seeded) {
            /* the neighbouring bucket's winner, measured first */
            t->seeded = true;
            int *pt = arena_alloc(t->a, sizeof *pt * (size_t)(t->sp->nparams + 1));
            if (tune_space_point_of(t->sp, o->seed_config, pt) && tune_space_legal(t->sp, pt) &&
                !is_seen(t, o->seed_config)) {
                Candidate *c = new_candidate(t, pt);
                json_object_set_new(t->seen, c->key, json_true());
                batch[n++] = c;
                t->new_trials++;
            }
        }
        int want = t->batch - n;
        if (want > upto - t->new_trials)
            want = upto - t->new_trials;
        int got = 0;
        if (want > 0) {
            if (t->exhaustive) {
                got = propose_exhaustive(t, t->pts, want);
                for (int i = 0; i < got; i++)
                    t->predicted[i] = NAN, t->guided[i] = false;
            } else {
                got = propose_guided(t, t->pts, want, t->predicted, t->guided);
            }
        }
        for (int i = 0; i < got; i++) {
            Candidate *c = new_candidate(t, t->pts[i]);
            c->predicted = t->predicted[i];
            c->guided = t->guided[i];
            batch[n++] = c;
        }
        if (n == 0) {
            tune_lock_release(&t->lock);
            if (t->new_trials < upto || upto == t->trials) {
                t->stop = t->new_trials >= t->trials ? NULL : "the space is exhausted";
                t->done = true;
            }
            break;
        }
        t->new_trials += got;
        if (!bench_start(t)) {
            t->done = true;
            break;
        }
        for (int i = 0; i < n; i++)
            batch[i]->trial = ++t->next_trial;
        run_batch(t, batch, n);
        tune_lock_release(&t->lock);
        if (t->new_trials >= t->trials) {
            t->stop = NULL;
            t->done = true;
            break;
        }
        int patience = t->trials / 4 > 24 ? t->trials / 4 : 24;
        if (!t->exhaustive && t->measured - t->last_improvement >= patience) {
            t->stop = "the best has not improved for a while";
            t->done = true;
            break;
        }
        if (t->new_trials >= upto)
            break;
    }
    tune_lock_release(&t->lock);
}

/* Ends T's tuning: the summary, -v's times, the plot, the best
 * configuration for O->best_config; frees T.  Returns the exit status
 * (OPENED: tuner_open succeeded). */
static int tuner_close(Tuner *t, bool opened)
{
    const TuneOptions *o = t->o;
    int status = 1;
    if (!opened || t->failed)
        goto restore;
    progress_end(t);
    if (t->stop && !o->quiet && !o->task)
        fprintf(stderr, "texc: stopped: %s\n", t->stop);
    double corr = tune_rank_correlation(t->pred, t->meas, t->npred);
    if (o->verbose && t->nhist >= 10)
        fprintf(stderr, "texc: cost model: 5-fold cross-validated rank correlation %.2f over "
                        "%d measurements\n",
                cross_validated(t), t->nhist);
    summary(t, t->npred >= 10 ? corr : NAN);
    /* where the time went: the turns' waits for other tuners are not
       this run's */
    t->times.total = spent(t);
    t->times.reference = t->bench_ready ? t->bench.reference_s : 0;
    if (o->times) {
        if (!o->task)
            o->times->total += t->times.total;
        o->times->reference += t->times.reference;
        o->times->builds += t->times.builds;
        o->times->measure += t->times.measure;
    } else if (o->verbose && !o->quiet) {
        tune_times_print(stderr, &t->times);
    }
    if (o->plot) {
        char *title = NULL;
        if (asprintf(&title, "texc --tune %s: best so far", t->w.kernel) < 0)
            title = NULL;
        bool plotted = tune_plot(o->plot, title ? title : "texc --tune", t->trial_gflops, t->measured);
        free(title);
        if (!plotted)
            goto restore;
    }
    /* a run that measured candidates and found none right, not even the
       default schedule, has nothing to build with: the environment (a
       compiler, fork, a driver) or texc itself is broken */
    bool none_right = t->measured > 0 && t->counts[TS_OK] == 0 && !tune_interrupted;
    if (none_right)
        fprintf(stderr, "texc: tuning %sfailed: none of the %d candidate%s measured built and ran "
                        "correctly, not even the default schedule (see the trials above)\n",
                o->task ? arena_printf(t->a, "%s ", t->w.kernel) : "", t->measured,
                t->measured == 1 ? "" : "s");
    status = tune_interrupted || t->log_lost || t->lock_failed || none_right ? 1 : 0;
    if (o->best_config && t->best)
        *o->best_config = json_deep_copy(json_object_get(t->best, "config"));
    share_data(t);
    if (t->log_lost)
        fprintf(stderr, "texc: %d measurement%s could not be written to %s and %s lost; "
                        "tuning stopped\n",
                t->log_lost, t->log_lost == 1 ? "" : "s", t->log, t->log_lost == 1 ? "is" : "are");
    if (tune_interrupted && !o->quiet && !o->task)
        fprintf(stderr, "texc: tuning interrupted; the %d measurements so far are in the log\n",
                t->measured);
restore:
    if (t->signals) {
        sigaction(SIGINT, &t->old_int, NULL);
        sigaction(SIGTERM, &t->old_term, NULL);
    }
    if (t->lock_open)
        tune_lock_close(&t->lock);
    if (t->bench_ready)
        tune_bench_free(&t->bench);
    for (int i = 0; i < t->candidates.len; i++)
        json_decref(((Candidate *)t->candidates.items[i])->config);
    json_decref(t->seen);
    json_decref(t->best);
    if (t->w.shapes)
        json_decref(t->w.shapes);
    if (t->w.dims)
        json_decref(t->w.dims);
    free(t->hx);
    free(t->hy);
    free(t->hpoint);
    arena_free(&t->arena);
    return status;
}

int tune_run(Arena *outer, Graph *g, const TuneOptions *o)
{
    if (o->target == TARGET_CPU && !o->bucket && sch_has_runtime_dims(g)) {
        tune_mpi_alone("a program with run-time dims is tuned bucket by bucket, on rank 0, for now");
        return tune_mpi_rank() > 0 ? 0 : tune_buckets(outer, g, o);
    }
    if (!o->bucket && !te_require_static_dims(g, "--tune"))
        return 1;
    if (o->target == TARGET_CUDA && !cuda_ready(o))
        return 1;
    if (o->target == TARGET_CUDA)
        tune_mpi_alone("cuda candidates are measured on this machine's devices only, for now");
    if (tune_mpi_rank() > 0 && o->target == TARGET_CUDA)
        return 0;
    Tuner t = { 0 };
    bool opened = tuner_open(&t, outer, g, o);
    if (opened) {
        if (tune_mpi_rank() > 0) {
            Tuner *one = &t;
            tune_serve(&one, 1);
        } else {
            tuner_batches(&t, t.trials);
        }
    }
    return tuner_close(&t, opened);
}

/* ------------------------------------------------------------------ */
/* An MPI worker (mpi.c).                                              */

int tune_serve(Tuner **tuners, int n)
{
    json_t *job;
    while ((job = tune_mpi_next_job())) {
        json_int_t task = json_integer_value(json_object_get(job, "task"));
        json_t *cands = json_object_get(job, "cands");
        double limit = json_number_value(json_object_get(job, "limit"));
        json_t *answer = json_pack("{s:O, s:[]}", "job", json_object_get(job, "job"), "records");
        json_t *records = json_object_get(answer, "records");
        Tuner *t = task >= 0 && task < n ? tuners[task] : NULL;
        size_t nc = json_array_size(cands);
        if (t && nc > 0 && bench_start(t)) {
            Candidate **batch = arena_alloc(t->a, sizeof *batch * (nc + 1));
            json_t **asked = arena_alloc(t->a, sizeof *asked * (nc + 1));
            int *pt = arena_alloc(t->a, sizeof *pt * (size_t)(t->sp->nparams + 1));
            int k = 0;
            for (size_t i = 0; i < nc; i++) {
                json_t *one = json_array_get(cands, i);
                json_t *config = json_object_get(one, "config");
                bool dflt = json_is_true(json_object_get(config, "default"));
                if (!dflt && !tune_space_point_of(t->sp, config, pt))
                    continue; /* not a point of this rank's space: no record */
                Candidate *c = new_candidate(t, dflt ? NULL : pt);
                c->trial = (int)json_integer_value(json_object_get(one, "trial"));
                asked[k] = one;
                batch[k++] = c;
            }
            /* one measurement on this machine at a time: the lock, held
               for the share as rank 0 holds it for a batch */
            if (tune_lock_take(&t->lock, 86400, true) == TUNE_LOCK_HELD) {
                tune_build(&t->bench, batch, k, t->jobs);
                for (int i = 0; i < k; i++) {
                    Candidate *c = batch[i];
                    if (c->status == TS_OK)
                        tune_measure(&t->bench, c, limit);
                    tune_discard(&t->bench, c);
                    if (c->status == TS_COUNT)
                        continue;
                    json_t *r = record_of(t, c, limit);
                    json_t *one = asked[i];
                    json_object_set(r, "search", json_object_get(one, "search"));
                    json_object_del(r, "predicted_s");
                    if (json_object_get(one, "predicted_s"))
                        json_object_set(r, "predicted_s", json_object_get(one, "predicted_s"));
                    json_array_append_new(records, r);
                }
                tune_lock_release(&t->lock);
            }
        }
        tune_mpi_send_records(answer);
        json_decref(answer);
        json_decref(job);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* A task of a program (tasks.c): a tuner kept open across rounds.     */

Tuner *tune_task_open(Arena *outer, Graph *g, const TuneOptions *o)
{
    Tuner *t = calloc(1, sizeof *t);
    if (!t)
        te_internal_error(__FILE__, __LINE__, "out of memory");
    if (!tuner_open(t, outer, g, o)) {
        tuner_close(t, false);
        free(t);
        return NULL;
    }
    return t;
}

int tune_task_round(Tuner *t, int trials, double deadline)
{
    int before = t->measured;
    t->budget = deadline - t->start + t->lock.waited;
    tuner_batches(t, t->new_trials + trials);
    return t->measured - before;
}

TuneTaskState tune_task_state(const Tuner *t)
{
    return (TuneTaskState){ .done = t->done,
                            .failed = t->failed,
                            .measured = t->measured,
                            .space = t->space_measured,
                            .ok = t->counts[TS_OK],
                            .best_s = t->best_time,
                            .default_s = t->default_time,
                            .batch = t->batch,
                            .flop = t->w.flop };
}

int tune_task_close(Tuner *t)
{
    int status = tuner_close(t, true);
    free(t);
    return status;
}
