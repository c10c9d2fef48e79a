/* fuzz_compile.c — the whole compile of a fuzzed program, past the parser.
 *
 * Each input is one .te program (with its schedules).  What runs on it:
 *   - the reference evaluator on the program as written and after the
 *     optimizer under -fstrict-fp, on the same seeded inputs, when it is
 *     small (fuzz_work below FUZZ_EVAL_WORK): the two must agree within
 *     the dtype's tolerance (the optimizer keeps the program's numbers);
 *   - the optimizer's passes, the schedule checks and the whole build
 *     (layouts, schedule, default schedule, lowering, memory plan, code
 *     generation) for the cpu target and for CUDA sm_80, each under the
 *     file's schedule and under the default one, as texc builds it;
 *   - the tuner's search space for the cpu target and builds of three
 *     points drawn from it at random (seeded by the input).
 * The code goes to /dev/null: tests/fuzz/fuzz_diff.c compiles and runs
 * it.  A crash, a sanitizer report, an internal error, or a disagreement
 * of the evaluators (fuzz_fail) is a finding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_common.h"

enum { FUZZ_EVAL_WORK = 1 << 20, FUZZ_SPACE_POINTS = 3 };

/* Does the optimized graph OPT compute what the program G computes? */
static void compare_evaluators(const FuzzProgram *p, Graph *g)
{
    OptOptions strict = { .strict_fp = true, .dump = fuzz_devnull() };
    Graph *opt = fuzz_optimized(p, &strict);
    if (!opt || opt->ninputs != g->ninputs || opt->noutputs != g->noutputs)
        return;
    int n_in = g->ninputs, n_out = g->noutputs;
    double **in = calloc((size_t)n_in + 1, sizeof *in);
    double **ref = calloc((size_t)n_out + 1, sizeof *ref);
    double **got = calloc((size_t)n_out + 1, sizeof *got);
    bool ok = in && ref && got;
    for (int i = 0; ok && i < n_in; i++) {
        in[i] = malloc(sizeof(double) * (size_t)tensor_elems(g->inputs[i]) + 1);
        ok = in[i] != NULL;
        if (ok)
            te_random_input(g->inputs[i], 1, in[i]);
    }
    if (ok && te_eval(g, in, ref) == 0 && te_eval(opt, in, got) == 0) {
        fuzz_trace("evaluated as written and optimized: %d outputs", n_out);
        for (int o = 0; o < n_out; o++) {
            const Tensor *t = g->outputs[o];
            /* f32 1e-4 (npycmp's), looser for the narrow floats */
            double tol = t->dtype == DT_F64 ? 1e-9 : t->dtype == DT_F32 ? 1e-4
                       : dtype_is_float(t->dtype) ? 5e-2 : 0;
            for (int64_t k = 0; k < tensor_elems(t); k++) {
                double r = ref[o][k], v = got[o][k];
                if (isnan(r) ? isnan(v) : (r == v || fabs(v - r) <= tol * (1 + fabs(r))))
                    continue;
                fuzz_fail("output '%s'[%lld]: %.17g as written, %.17g optimized (-fstrict-fp)",
                          t->name, (long long)k, r, v);
            }
        }
    }
    for (int i = 0; i < n_in && in; i++)
        free(in[i]);
    for (int o = 0; o < n_out; o++) {
        if (ref)
            free(ref[o]);
        if (got)
            free(got[o]);
    }
    free(in);
    free(ref);
    free(got);
}

/* Builds of points the tuner could draw from its cpu space. */
static void build_space_points(const FuzzProgram *p, uint64_t seed)
{
    Graph *g = fuzz_optimized(p, NULL);
    if (!g)
        return;
    Space *sp = tune_space_new(p->arena, g, sch_file_schedule(g, TARGET_CPU), TARGET_CPU);
    if (!sp)
        return;
    tune_space_print(fuzz_devnull(), sp);
    int *point = arena_alloc(p->arena, sizeof *point * (size_t)(sp->nparams + 1));
    for (int k = 0; k < FUZZ_SPACE_POINTS; k++) {
        if (!tune_space_random(sp, &seed, point) || !tune_space_legal(sp, point))
            continue;
        Schedule *sched = tune_space_schedule(p->arena, sp, point);
        json_decref(tune_space_config(sp, point));
        Graph *fresh = fuzz_optimized(p, NULL);
        if (fresh)
            (void)fuzz_build(p->arena, fresh, TARGET_CPU, sched);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    Arena arena = {0};
    FuzzProgram p;
    fuzz_program(&p, &arena, data, size);
    Graph *g = fuzz_graph(&p);
    if (g) {
        if (fuzz_work(g) <= FUZZ_EVAL_WORK)
            compare_evaluators(&p, g);
        for (Target t = 0; t < TARGET_COUNT; t++) {
            Graph *own = fuzz_optimized(&p, NULL);
            if (own)
                (void)fuzz_build(&arena, own, t, sch_file_schedule(own, t));
            Graph *dflt = fuzz_optimized(&p, NULL);
            if (dflt)
                (void)fuzz_build(&arena, dflt, t, NULL);
        }
        uint64_t seed = 0x9e3779b97f4a7c15u ^ size;
        for (size_t i = 0; i < size; i++)
            seed = (seed ^ data[i]) * 0x100000001b3u;
        build_space_points(&p, seed);
    }
    arena_free(&arena);
    return 0;
}
