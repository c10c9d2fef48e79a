/* fuzz_log.c — the tuning log's reader and its users on fuzzed logs.
 *
 * Each input is a whole log file, written to a private temporary file
 * (the reader takes a path: it checks that it reads a regular file within
 * its limit).  What reads it:
 *   - tune_log_read, as every user does, and tune_record_matches of each
 *     record against a small matmul's workload on this machine;
 *   - --log-summary (tune_log_summary), its table sent to /dev/null;
 *   - a build that takes its schedule from the log (tune_best), for the
 *     matmul once with its knobs and once without a schedule (the auto
 *     space), then builds the schedule it returns.
 * The seeds (tests/fuzz/corpus-log) are logs tune.sh's kind of run
 * writes, so that mutations reach the records that match.  A message is
 * a correct answer; a crash, a sanitizer report or an internal error is
 * a finding. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz_common.h"

static const char knob_program[] =
    "dim M = 5, N = 7, K = 19;\n"
    "input x : f32[M, K];\n"
    "input w : const f32[K, N];\n"
    "y[i, j] = sum(k) x[i, k] * w[k, j];\n"
    "output y;\n"
    "schedule cpu {\n"
    "  y.tile(i, j, ?TI in [1, 2, 4], ?TJ in [8, 16]) -> io, jo, ii, ji;\n"
    "  y.parallel(io);\n"
    "}\n";

/* The part of KNOB_PROGRAM without its schedule: the auto space. */
static size_t auto_length(void)
{
    return (size_t)(strstr(knob_program, "schedule") - knob_program);
}

static void build_from_log(const char *path, size_t length)
{
    Arena arena = {0};
    FuzzProgram p;
    fuzz_program(&p, &arena, (const uint8_t *)knob_program, length);
    Graph *g = fuzz_optimized(&p, NULL);
    if (g) {
        TuneOptions o = { .source_path = "fuzz.te", .target = TARGET_CPU, .log_path = path,
                          .quiet = true };
        const char *from = NULL;
        const Schedule *best =
            tune_best(&arena, g, sch_file_schedule(g, TARGET_CPU), &o, &from);
        fuzz_trace("tune_best: %s", from ? from : "no record");
        (void)fuzz_build(&arena, g, TARGET_CPU, best);
    }
    arena_free(&arena);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    static int fd = -1;
    if (fd < 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(path, sizeof path, "%.40s/fuzz-log.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        fd = mkstemp(path);
        if (fd < 0) {
            perror("fuzz_log: mkstemp");
            abort();
        }
    }
    fuzz_quiet();
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) {
        perror("fuzz_log: writing the log");
        abort();
    }
    FILE *saved_out = stdout, *saved_err = stderr;
    stdout = stderr = fuzz_devnull(); /* glibc lets them be assigned */

    json_t **recs = NULL;
    int invalid = 0;
    int n = tune_log_read(path, NULL, &recs, &invalid, true); /* the whole log */
    if (n > 0) {
        Arena arena = {0};
        FuzzProgram p;
        fuzz_program(&p, &arena, (const uint8_t *)knob_program, sizeof knob_program - 1);
        Graph *g = fuzz_optimized(&p, NULL);
        if (g) {
            TuneOptions o = { .source_path = "fuzz.te", .target = TARGET_CPU };
            Workload w;
            Machine m;
            tune_workload(&arena, g, &o, &w);
            tune_machine(&m, TARGET_CPU, NULL);
            for (int i = 0; i < n; i++) {
                const char *why = NULL;
                (void)tune_record_matches(recs[i], &w, &m, &why);
            }
            json_decref(w.shapes);
            json_decref(w.dims);
        }
        arena_free(&arena);
    }
    for (int i = 0; i < n; i++)
        json_decref(recs[i]);
    free(recs);
    (void)tune_log_summary(path);
    build_from_log(path, sizeof knob_program - 1);
    build_from_log(path, auto_length());

    stdout = saved_out;
    stderr = saved_err;
    return 0;
}
