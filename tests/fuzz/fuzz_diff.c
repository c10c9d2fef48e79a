/* fuzz_diff.c — the differential fuzzer: generated C against the evaluator.
 *
 * Each input is one .te program.  When it is small (fuzz_work at most
 * FUZZ_DIFF_WORK, so that the evaluator and the kernels take
 * milliseconds), it is built in process first, as fuzz_compile.c does
 * (so that libFuzzer sees the coverage of the build), and then through
 * the tuner's own machinery (tuner/measure.c): the reference evaluator's
 * outputs on seeded inputs, then candidates built in child processes,
 * compiled by the C compiler as texc -c compiles them, run, and compared
 * with the reference within the tuner's tolerance.  The candidates: the
 * default schedule, the file's cpu schedule, and FUZZ_DIFF_POINTS points
 * drawn at random from the tuner's space.
 *
 * A finding (fuzz_fail): a candidate whose C does not compile, that
 * crashes, exits with an error, runs past its limit, or computes a wrong
 * output; or the default schedule refused.  A schedule that does not
 * apply is a correct answer (the tuner skips it), and so is a reference
 * that fails with a diagnostic (a read out of bounds). */
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_common.h"

enum { FUZZ_DIFF_WORK = 1 << 18, FUZZ_DIFF_POINTS = 2, FUZZ_DIFF_JOBS = 2 };

static Candidate *candidate(Arena *a, Schedule *sched, const char *what, int trial)
{
    Candidate *c = arena_alloc(a, sizeof *c);
    if (!sched) {
        sched = arena_alloc(a, sizeof *sched); /* none: the default for all */
        sched->target = TARGET_CPU;
    }
    c->sched = sched;
    c->key = (char *)what;
    c->trial = trial;
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool init;
    if (!init) {
        init = true;
        setenv("TEXC_TUNE_MIN_TIME", "0", 1); /* one timed repeat: a check */
    }
    fuzz_quiet();
    Arena arena = {0};
    FuzzProgram p;
    fuzz_program(&p, &arena, data, size);
    Graph *g = fuzz_graph(&p);
    if (!g || fuzz_work(g) > FUZZ_DIFF_WORK || g->noutputs == 0)
        goto out;
    /* in process first: the coverage libFuzzer steers by */
    Graph *own = fuzz_optimized(&p, NULL);
    if (!own)
        goto out;
    bool own_ok = fuzz_build(&arena, own, TARGET_CPU, sch_file_schedule(own, TARGET_CPU));
    Graph *dflt = fuzz_optimized(&p, NULL);
    if (!dflt || !fuzz_build(&arena, dflt, TARGET_CPU, NULL))
        fuzz_fail("the default cpu schedule does not build");

    Graph *tg = fuzz_optimized(&p, NULL); /* the tuner's graph */
    const Schedule *written = sch_file_schedule(tg, TARGET_CPU);
    Candidate *cands[2 + FUZZ_DIFF_POINTS];
    int n = 0;
    cands[n] = candidate(&arena, NULL, "the default schedule", n + 1);
    n++;
    if (written && own_ok) {
        cands[n] = candidate(&arena, (Schedule *)written, "the file's schedule", n + 1);
        n++;
    }
    Space *sp = tune_space_new(&arena, tg, written, TARGET_CPU);
    uint64_t seed = 0x243f6a8885a308d3u;
    for (size_t i = 0; i < size; i++)
        seed = (seed ^ data[i]) * 0x100000001b3u;
    int *point = sp ? arena_alloc(&arena, sizeof *point * (size_t)(sp->nparams + 1)) : NULL;
    for (int k = 0; sp && k < FUZZ_DIFF_POINTS; k++) {
        if (!tune_space_random(sp, &seed, point) || !tune_space_legal(sp, point))
            continue;
        cands[n] = candidate(&arena, tune_space_schedule(&arena, sp, point),
                             "a point of the tuner's space", n + 1);
        n++;
    }

    TuneOptions o = { .source_path = "fuzz.te", .target = TARGET_CPU, .quiet = true };
    Bench b;
    if (!tune_bench_init(&b, &arena, tg, &o, "texc_kernel")) {
        /* the reference failing with a diagnostic (a read out of bounds
           that a select does not guard) is the program's error */
        if (diag_errors > 0) {
            tune_bench_free(&b);
            goto out;
        }
        fuzz_fail("the tuner's bench could not be set up");
    }
    tune_build(&b, cands, n, FUZZ_DIFF_JOBS);
    for (int i = 0; i < n; i++) {
        Candidate *c = cands[i];
        if (c->status == TS_OK)
            tune_measure(&b, c, 10.0);
        fuzz_trace("%s: %s%s%s", c->key, tune_status_name(c->status), c->detail[0] ? ": " : "",
                   c->detail);
        TuneStatus s = c->status;
        bool fine = s == TS_OK || (s == TS_INVALID && i > 0);
        if (!fine) {
            fprintf(stderr, "fuzz: %s: %s: %s\n", c->key, tune_status_name(s), c->detail);
            if (c->schedule_text)
                fprintf(stderr, "fuzz: the schedule applied:\n%s\n", c->schedule_text);
            fuzz_fail("%s: %s", c->key, tune_status_name(s));
        }
        tune_discard(&b, c);
    }
    tune_bench_free(&b);
out:
    arena_free(&arena);
    return 0;
}
