/* tuner.h — the autotuner: searches schedules, measures every candidate in
 * an isolated process against the reference evaluator, logs everything,
 * and hands later builds the winner.  See tuner/tune.c's top comment. */
#ifndef TEXC_TUNER_H
#define TEXC_TUNER_H

#include "sched/sched.h"

typedef struct TuneOptions {
    const char *source_path; /* the .te file */
    const char *target;      /* "cpu" or "cuda" */
    const char *log_path;    /* --log, or NULL for the default under
                                $XDG_CACHE_HOME/texc/ */
    int trials;              /* --trials, 0: the default budget */
    double time_budget;      /* --time-budget seconds, 0: the default */
    int jobs;                /* --jobs, 0: the number of cores */
    uint64_t seed;           /* --seed */
    const char *plot;        /* --plot FILE.svg, or NULL */
    bool verbose, quiet;
} TuneOptions;

/* --tune: searches G's schedule space for O->target and appends every
 * measurement to the log.  Returns 0, or 1 after a message. */
int tune_run(Arena *a, Graph *g, const TuneOptions *o);

/* For a normal build: the fastest valid logged schedule for G's workload
 * on this machine (knobs of the file's schedule set, or a schedule of its
 * own), printing which record it used; or NULL, saying once that no record
 * matches.  WRITTEN is the file's schedule for the target, or NULL. */
const Schedule *tune_best(Arena *a, Graph *g, const Schedule *written, const TuneOptions *o);

/* --log-summary FILE: the best record per workload.  Returns an exit
 * status. */
int tune_log_summary(const char *path);

#endif
