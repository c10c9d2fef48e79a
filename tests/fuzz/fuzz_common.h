/* fuzz_common.h — what the fuzz targets share (tests/fuzz/fuzz_*.c).
 *
 * Each target is one LLVMFuzzerTestOneInput; the same files link into a
 * replay binary (replay.c) that runs a corpus through them under gcc in
 * `make check`, and into the libFuzzer binaries of `make fuzz`.  A
 * diagnostic is a correct answer: only a crash, a sanitizer report, an
 * internal error (te_internal_error aborts), a hang, or a differential
 * check that fails (fuzz_fail) is a finding. */
#ifndef TEXC_FUZZ_COMMON_H
#define TEXC_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>

#include "codegen/codegen.h"
#include "frontend/frontend.h"
#include "tuner/tuner.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* /dev/null, opened once; diagnostics go there (fuzz_quiet). */
FILE *fuzz_devnull(void);
/* Sends diagnostics to /dev/null and clears their counts. */
void fuzz_quiet(void);
/* A finding that is not a crash: says what differs and aborts, so that
 * libFuzzer keeps the input. */
_Noreturn void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* With TEXC_FUZZ_TRACE set, prints what a target did to stderr (so that
 * a replay shows that the builds ran, not only that nothing crashed). */
void fuzz_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One fuzzed program, parsed once per graph: sema (and the optimizer)
 * change what they are given, and a build changes its graph in place
 * (layouts), so every build gets a fresh graph of its own. */
typedef struct FuzzProgram {
    Arena *arena;
    Source src;
} FuzzProgram;
/* Copies DATA into ARENA as a NUL-terminated program called fuzz.te. */
void fuzz_program(FuzzProgram *p, Arena *arena, const uint8_t *data, size_t size);
/* Parses and checks the program (no -D); NULL after a diagnostic. */
Graph *fuzz_graph(const FuzzProgram *p);
/* The same, then optimized (OPT; NULL: the defaults) and checked against
 * its schedules as texc does before a build; NULL after a diagnostic. */
Graph *fuzz_optimized(const FuzzProgram *p, const OptOptions *opt);

/* Work the reference evaluator does on G: every stage's points times its
 * reductions' extents, summed (saturating at INT64_MAX). */
int64_t fuzz_work(const Graph *g);

/* Builds G for TARGET under SCHED (NULL: the default schedule) as texc
 * does and emits the code to /dev/null: the C and header, or the CUDA C
 * for sm_80.  False after a diagnostic. */
bool fuzz_build(Arena *a, Graph *g, Target target, const Schedule *sched);

#endif
