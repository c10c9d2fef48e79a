/* unit_passes.c — unit tests of the optimizer's passes, the layout step
 * that follows them in every build (sched/layout.c), and the memory
 * planner.  Output is TAP ("ok N - what", then the plan "1..N"); the exit
 * status is 0 exactly when every test passed.
 *
 * Each rewrite rule has a case where it fires and a case where it must
 * not (because it would be wrong there: a float rewrite under
 * -fstrict-fp, an identity with its indices swapped, two stages of
 * different shapes, ...).  A case is a small program, parsed and checked
 * by the frontend, then run through the listed passes; the test looks for
 * stage lines in the printed graph (te_print_graph, the --dump format),
 * checks the pass's counter, and evaluates the program before and after
 * on the same random inputs: bit for bit where every rule that fired is
 * exact, within a relative 1e-6 (a few f32 ulps) where one changes
 * rounding.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#endif
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "sched/sched.h"

#include "tests/tap.h"

/* ---------------------------------------------------------------- */
/* Building and running graphs.                                      */

static Graph *parse(Arena *a, const char *text)
{
    Source *src = arena_alloc(a, sizeof *src);
    char *copy = arena_strdup(a, text);
    src_from_string(src, "test.te", copy, strlen(copy));
    Parser p = { .arena = a, .src = src };
    Program prog = { 0 };
    if (!fe_parse(&p, &prog))
        return NULL;
    return fe_sema(a, src, &prog, NULL, 0);
}

static char *print_graph(const Graph *g)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    te_print_graph(out, g);
    te_print_kernels(out, g); /* with the fusion pass's reasons */
    fclose(out);
    return text;
}

/* The passes a case runs, in TE_PASSES order; LAYOUT: then the build's
 * layout step (sched/build.c) for cpu under the file's cpu schedule, as
 * texc runs it after the passes. */
#define P(name) (1u << PASS_##name)
#define LAYOUT (1u << 31)
#define ALL_MINE (P(constfold) | P(dce) | P(cse) | P(simplify) | P(substitute))

static void run_passes(Arena *a, Graph *g, unsigned passes, bool strict, OptStats *stats)
{
    OptOptions o = { .disabled = ~passes, .strict_fp = strict, .dump = stdout };
    TE_ASSERT(te_optimize(a, g, &o, stats));
    if (passes & LAYOUT) {
        /* the layouts ask the cpu scheduler for its tile sizes */
        const Schedule *written = sch_file_schedule(g, TARGET_CPU);
        g->layouts = true;
        sch_build_layout(&(SchedBuild){ .arena = a, .g = g, .target = TARGET_CPU, .sched = written,
                                        .layout_notes = &stats->layout_notes });
        stats->packed = stats->layout_notes.len;
    }
}

/* Evaluates A and B (the same program, B optimized) on the same random
 * inputs; compares every output exactly or within RTOL. */
static bool same_outputs(const Graph *a, const Graph *b, double rtol, char *why, size_t nwhy)
{
    if (a->ninputs != b->ninputs || a->noutputs != b->noutputs) {
        snprintf(why, nwhy, "inputs or outputs differ in number");
        return false;
    }
    double **in = calloc((size_t)a->ninputs + 1, sizeof *in);
    double **out_a = calloc((size_t)a->noutputs + 1, sizeof *out_a);
    double **out_b = calloc((size_t)a->noutputs + 1, sizeof *out_b);
    for (int i = 0; i < a->ninputs; i++) {
        in[i] = malloc(sizeof(double) * (size_t)tensor_elems(a->inputs[i]));
        te_random_input(a->inputs[i], 7, in[i]);
    }
    bool ok = te_eval(a, in, out_a) == 0 && te_eval(b, in, out_b) == 0;
    if (!ok)
        snprintf(why, nwhy, "evaluation failed");
    for (int o = 0; ok && o < a->noutputs; o++) {
        if (strcmp(a->outputs[o]->name, b->outputs[o]->name) != 0 ||
            tensor_elems(a->outputs[o]) != tensor_elems(b->outputs[o])) {
            snprintf(why, nwhy, "output %d is %s before, %s after", o, a->outputs[o]->name,
                     b->outputs[o]->name);
            ok = false;
            break;
        }
        for (int64_t k = 0; k < tensor_elems(a->outputs[o]); k++) {
            double x = out_a[o][k], y = out_b[o][k];
            bool same = rtol == 0 ? (x == y && signbit(x) == signbit(y)) || (isnan(x) && isnan(y))
                                  : fabs(x - y) <= rtol * fabs(x) + 1e-12 ||
                                        (isnan(x) && isnan(y));
            if (!same) {
                snprintf(why, nwhy, "%s[%lld]: %.17g before, %.17g after", a->outputs[o]->name,
                         (long long)k, x, y);
                ok = false;
                break;
            }
        }
    }
    for (int i = 0; i < a->ninputs; i++)
        free(in[i]);
    for (int o = 0; o < a->noutputs; o++) {
        free(out_a[o]);
        free(out_b[o]);
    }
    free(in);
    free(out_a);
    free(out_b);
    return ok;
}

enum { EXACT, ROUNDED };

typedef struct Case {
    const char *what;
    const char *program;
    unsigned passes;
    bool strict;
    const char *want[4];   /* lines the printed graph must contain */
    const char *unwant[2]; /* text it must not contain */
    int stat_offset;       /* offsetof(OptStats, counter) ... */
    int count;             /* ... and its expected value */
    int exactness;         /* EXACT: outputs bit-identical */
    const char *note;      /* a note that must be recorded, or NULL */
} Case;

#define STAT(field) (int)offsetof(OptStats, field)

static void run_case(const Case *k)
{
    Arena a = { 0 }, b = { 0 };
    Graph *before = parse(&a, k->program);
    Graph *g = parse(&b, k->program);
    if (!check(before && g, "%s: the program parses", k->what)) {
        arena_free(&a);
        arena_free(&b);
        return;
    }
    OptStats stats = { 0 };
    run_passes(&b, g, k->passes, k->strict, &stats);
    char *text = print_graph(g);
    bool ok = true;
    for (int i = 0; i < 4 && k->want[i]; i++)
        if (!strstr(text, k->want[i])) {
            printf("# missing: %s\n", k->want[i]);
            ok = false;
        }
    for (int i = 0; i < 2 && k->unwant[i]; i++)
        if (strstr(text, k->unwant[i])) {
            printf("# unexpected: %s\n", k->unwant[i]);
            ok = false;
        }
    int got = *(int *)((char *)&stats + k->stat_offset);
    if (got != k->count) {
        printf("# counter: got %d, want %d\n", got, k->count);
        ok = false;
    }
    if (k->note) {
        bool found = false;
        for (int i = 0; i < stats.notes.len; i++)
            found |= strcmp(stats.notes.items[i], k->note) == 0;
        for (int i = 0; i < stats.layout_notes.len; i++)
            found |= strcmp(stats.layout_notes.items[i], k->note) == 0;
        if (!found) {
            printf("# note missing: %s\n", k->note);
            ok = false;
        }
    }
    if (!ok)
        printf("# graph after:\n%s", text);
    check(ok, "%s", k->what);
    char why[256] = "";
    check(same_outputs(before, g, k->exactness == EXACT ? 0 : 1e-6, why, sizeof why),
          "%s: same outputs %s%s%s", k->what, k->exactness == EXACT ? "bit for bit" : "within 1e-6",
          why[0] ? ": " : "", why);
    free(text);
    arena_free(&a);
    arena_free(&b);
}

/* ---------------------------------------------------------------- */
/* The cases.                                                        */

#define VEC "dim N = 4; input x : f32[N]; input x2 : f32[N]; input n : i32[N];\n"
#define MAT "dim M = 3, K = 5, N = 4; input x : f32[M, K]; input w : f32[K, N];\n"
#define SQ "dim N = 4; input a : f32[N, N];\n"

static const Case cases[] = {
    /* constfold */
    { "constfold: 1.0 / sqrt(64.0) -> 0.125",
      VEC "y[i] = x[i] * (1.0 / sqrt(64.0)); output y;", P(constfold), false,
      { "y[i] = x[i] * 0.125\n" }, { 0 }, STAT(folded), 1, EXACT, NULL },
    { "constfold: folds with the dtype's rounding (f32)",
      VEC "y[i] = x[i] * (1.0 / 3.0); output y;", P(constfold), true,
      { "y[i] = x[i] * 0.333333343\n" }, { 0 }, STAT(folded), 1, ROUNDED, NULL },
    { "constfold: folds with the dtype's rounding (f64)",
      "dim N = 4; input x : f64[N]; y[i] = x[i] * (1.0 / 3.0); output y;", P(constfold), true,
      { "y[i] = x[i] * 0.3333333333333333\n" }, { 0 }, STAT(folded), 1, EXACT, NULL },
    { "constfold: f16 arithmetic folds in f32, as the generated code computes it",
      "dim N = 4; input x : f16[N]; y[i] = x[i] * (1.0 / 3.0); output y;", P(constfold), true,
      { "y[i] = x[i] * 0.333333343\n" }, { 0 }, STAT(folded), 1, ROUNDED, NULL },
    { "constfold: a cast to f16 rounds to f16",
      "dim N = 4; input x : f16[N]; y[i] = x[i] * f16(0.1); output y;", P(constfold), true,
      { "y[i] = x[i] * 0.0999755859\n" }, { 0 }, STAT(folded), 1, EXACT, NULL },
    { "constfold: i32 division by zero folds to 0, as the evaluator does",
      VEC "y[i] = n[i] + 7 / 0 + (-7) % 2; output y;", P(constfold), true,
      { "y[i] = n[i] + 0 + -1\n" }, { 0 }, STAT(folded), 2, EXACT, NULL },
    { "constfold: i32 arithmetic folds wrapping modulo 2^32, as the evaluator computes it",
      VEC "y[i] = n[i] + (2147483647 + 1) + 1000000000 * 1000000000 + (-2147483648) / -1;\n"
      "output y;", P(constfold), false,
      { "y[i] = n[i] + -2147483648 + -1486618624 + -2147483648\n" }, { 0 }, STAT(folded), 3,
      EXACT, NULL },
    { "constfold: i32 remainder by -1 and abs at INT32_MIN",
      VEC "y[i] = n[i] + (-2147483648) % -1 + abs(-2147483648); output y;", P(constfold), false,
      { "y[i] = n[i] + 0 + -2147483648\n" }, { 0 }, STAT(folded), 2, EXACT, NULL },
    { "constfold: loads and index variables are not constants",
      VEC "y[i] = x[i] * 2.0 + f32(i * 2 + 1); output y;", P(constfold), false,
      { "y[i] = x[i] * 2.0 + f32(i * 2 + 1)\n" }, { 0 }, STAT(folded), 0, EXACT, NULL },
    { "constfold: a constant stage is folded into its readers",
      VEC "c = 2.0 * 3.0; y[i] = x[i] * c; output y;", P(constfold), false,
      { "y[i] = x[i] * 6.0\n" }, { "stage c" }, STAT(folded), 1, EXACT, NULL },
    { "constfold: a constant output stage stays",
      VEC "c = 2.0 * 3.0; y[i] = x[i] * c; output y, c;", P(constfold), false,
      { "c = 6.0\n", "y[i] = x[i] * c\n" }, { 0 }, STAT(folded), 1, EXACT, NULL },
    { "constfold: select with a constant condition picks its operand",
      VEC "y[i] = select(1 < 2, x[i], x2[i]); output y;", P(constfold), false,
      { "y[i] = x[i]\n" }, { 0 }, STAT(folded), 1, EXACT, NULL },
    { "constfold: NaN results are folded too",
      VEC "y[i] = x[i] + sqrt(-1.0); output y;", P(constfold), false,
      { "y[i] = x[i] + nan\n" }, { 0 }, STAT(folded), 1, EXACT, NULL },

    /* dce */
    { "dce: z = g + 0.0 becomes an alias (fast-math)",
      VEC "g[i] = exp(x[i]); z[i] = g[i] + 0.0; output z;", P(dce), false,
      { "stage z : f32[4]  z[i] = exp(x[i])\n", "output z\n" }, { "stage g" }, STAT(removed), 1,
      EXACT, "z is an identity of g: g renamed z" },
    { "dce: z = g + 0.0 stays under -fstrict-fp (-0.0 + 0.0 is +0.0)",
      VEC "g[i] = exp(x[i]); z[i] = g[i] + 0.0; output z;", P(dce), true,
      { "z[i] = g[i] + 0.0\n" }, { 0 }, STAT(removed), 0, EXACT, NULL },
    { "dce: g * 1, g - 0.0 and g + (-0.0) are exact identities",
      VEC "g[i] = exp(x[i]); a[i] = g[i] * 1.0; b[i] = a[i] - 0.0; z[i] = b[i] + -0.0;"
          " output z;", P(constfold) | P(dce), true,
      { "stage z : f32[4]  z[i] = exp(x[i])\n" }, { "stage a", "stage b" }, STAT(removed), 3,
      EXACT, NULL },
    { "dce: g - (-0.0) is not an identity",
      VEC "g[i] = exp(x[i]); z[i] = g[i] - -0.0; output z;", P(dce), true,
      { "z[i] = g[i] - -0.0\n" }, { 0 }, STAT(removed), 0, EXACT, NULL },
    { "dce: i32 n + 0 is an identity under -fstrict-fp",
      VEC "g[i] = n[i] * n[i]; z[i] = g[i] + 0; output z;", P(dce), true,
      { "stage z : i32[4]  z[i] = n[i] * n[i]\n" }, { 0 }, STAT(removed), 1, EXACT, NULL },
    { "dce: a copy with its indices swapped is no identity",
      SQ "g[i, j] = exp(a[i, j]); z[i, j] = g[j, i] * 1.0; output z;", P(dce), false,
      { "z[i, j] = g[j, i] * 1.0\n" }, { 0 }, STAT(removed), 0, EXACT, NULL },
    { "dce: a copy of part of a stage is no identity",
      VEC "g[i] = exp(x[i]); z[i in 2] = g[i]; output z;", P(dce), false,
      { "z[i] = g[i]\n" }, { 0 }, STAT(removed), 0, EXACT, NULL },
    { "dce: an identity between two outputs stays (two parameters)",
      VEC "g[i] = exp(x[i]); z[i] = g[i] * 1.0; output g, z;", P(dce), false,
      { "z[i] = g[i] * 1.0\n" }, { 0 }, STAT(removed), 0, EXACT, NULL },
    { "dce: an output copy of an input stays",
      VEC "z[i] = x[i] * 1.0; output z;", P(dce), false,
      { "z[i] = x[i] * 1.0\n" }, { 0 }, STAT(removed), 0, EXACT, NULL },
    { "dce: an intermediate copy of an input is bypassed",
      VEC "c[i] = x[i] * 1.0; y[i] = c[i] + 2.0; output y;", P(dce), false,
      { "y[i] = x[i] + 2.0\n" }, { "stage c" }, STAT(removed), 1, EXACT,
      "c is an identity of x: its readers read x" },
    { "dce: stages no output needs are dropped",
      VEC "u[i] = x[i] * 2.0; v[i] = u[i] + 1.0; y[i] = x[i] + 1.0; output y;", P(dce), false,
      { "y[i] = x[i] + 1.0\n" }, { "stage u", "stage v" }, STAT(removed), 2, EXACT, NULL },

    /* cse */
    { "cse: two stages computing the same thing merge",
      MAT "a[i, j] = exp(x[i, j]); b[p, q] = exp(x[p, q]); c[i, j] = a[i, j] + b[i, j]; output c;",
      P(cse), true, { "c[i, j] = a[i, j] + a[i, j]\n" }, { "stage b" }, STAT(cse), 1, EXACT,
      "b computes the same as a: merged" },
    { "cse: reductions equal up to their axes' names merge",
      MAT "s1[i] = sum(k) x[i, k]; s2[r] = sum(l) x[r, l]; c[i] = s1[i] * s2[i]; output c;",
      P(cse), true, { "c[i] = s1[i] * s1[i]\n" }, { "stage s2" }, STAT(cse), 1, EXACT, NULL },
    { "cse: stages of different shapes stay apart",
      VEC "a[i] = exp(x[i]); b[i in 2] = exp(x[i]); c[i in 2] = a[i] + b[i]; output c;",
      P(cse), true, { "c[i] = a[i] + b[i]\n" }, { 0 }, STAT(cse), 0, EXACT, NULL },
    { "cse: reductions over different ranges stay apart",
      MAT "s1[i] = sum(k in 0..4) x[i, k]; s2[i] = sum(k in 0..5) x[i, k]; c[i] = s1[i] * s2[i];"
          " output c;",
      P(cse), true, { "c[i] = s1[i] * s2[i]\n" }, { 0 }, STAT(cse), 0, EXACT, NULL },
    { "cse: two equal outputs stay apart",
      VEC "a[i] = exp(x[i]); b[i] = exp(x[i]); output a, b;", P(cse), true,
      { "stage a", "stage b" }, { 0 }, STAT(cse), 0, EXACT, NULL },
    { "cse: an output equal to an earlier stage takes its place",
      VEC "a[i] = exp(x[i]); b[i] = exp(x[i]); c[i] = a[i] + 1.0; output c, b;", P(cse), true,
      { "stage b : f32[4]  b[i] = exp(x[i])\n", "c[i] = b[i] + 1.0\n", "output c\noutput b\n" },
      { "stage a" }, STAT(cse), 1, EXACT, "b computes the same as a: a renamed b" },
    { "cse: equal subexpressions of one stage are shared",
      VEC "y[i] = exp(x[i] + 1.0) * exp(x[i] + 1.0); output y;", P(cse), true,
      { "y[i] = exp(x[i] + 1.0) * exp(x[i] + 1.0)\n" }, { 0 }, STAT(cse), 1, EXACT, NULL },
    { "cse: different subexpressions are not shared",
      VEC "y[i] = exp(x[i] + 1.0) * exp(x2[i] + 1.0); output y;", P(cse), true,
      { 0 }, { 0 }, STAT(cse), 0, EXACT, NULL },

    /* simplify */
    { "simplify: x * 1 and 1 * x inside an expression",
      VEC "y[i] = exp(x[i] * 1.0) + 1.0 * x2[i]; output y;", P(simplify), true,
      { "y[i] = exp(x[i]) + x2[i]\n" }, { 0 }, STAT(simplified), 2, EXACT, NULL },
    { "simplify: x + 0.0 under fast-math",
      VEC "y[i] = exp(x[i] + 0.0); output y;", P(simplify), false,
      { "y[i] = exp(x[i])\n" }, { 0 }, STAT(simplified), 1, EXACT, NULL },
    { "simplify: x + 0.0 stays under -fstrict-fp",
      VEC "y[i] = exp(x[i] + 0.0); output y;", P(simplify), true,
      { "y[i] = exp(x[i] + 0.0)\n" }, { 0 }, STAT(simplified), 0, EXACT, NULL },
    { "simplify: x + 0.0 stays in f64 (no fast-math for f64)",
      "dim N = 4; input x : f64[N]; y[i] = exp(x[i] + 0.0); output y;", P(simplify), false,
      { "y[i] = exp(x[i] + 0.0)\n" }, { 0 }, STAT(simplified), 0, EXACT, NULL },
    { "simplify: x - x -> 0 for i32, even under -fstrict-fp",
      VEC "y[i] = n[i] * 2 + (n[i] - n[i]); output y;", P(simplify), true,
      { "y[i] = n[i] * 2\n" }, { 0 }, STAT(simplified), 2, EXACT, NULL },
    { "simplify: x - x stays for floats under -fstrict-fp (inf - inf is NaN)",
      VEC "y[i] = exp(x[i]) - exp(x[i]); output y;", P(simplify), true,
      { "y[i] = exp(x[i]) - exp(x[i])\n" }, { 0 }, STAT(simplified), 0, EXACT, NULL },
    { "simplify: x - x -> 0.0 for floats under fast-math",
      VEC "y[i] = x2[i] + (exp(x[i]) - exp(x[i])); output y;", P(simplify), false,
      { "y[i] = x2[i]\n" }, { 0 }, STAT(simplified), 2, EXACT, NULL },
    { "simplify: x - y is not x - x",
      "dim N = 4; input n : i32[N]; y[i in 3] = n[i] - n[i + 1]; output y;", P(simplify), false,
      { "y[i] = n[i] - n[i + 1]\n" }, { 0 }, STAT(simplified), 0, EXACT, NULL },
    { "simplify: double negation",
      VEC "y[i] = -(-x[i]) * 2.0; output y;", P(simplify), true,
      { "y[i] = x[i] * 2.0\n" }, { 0 }, STAT(simplified), 1, EXACT, NULL },
    { "simplify: a single negation stays",
      VEC "y[i] = -x[i] * 2.0; output y;", P(simplify), true,
      { "y[i] = -x[i] * 2.0\n" }, { 0 }, STAT(simplified), 0, EXACT, NULL },
    { "simplify: (A^T)^T reads A",
      SQ "t1[i, j] = a[j, i]; t2[i, j] = t1[j, i]; output t2;", P(simplify), true,
      { "stage t2 : f32[4, 4]  t2[i, j] = a[i, j]\n" }, { "stage t1" }, STAT(simplified), 1,
      EXACT, "t2 reads a directly: copies through t1 composed" },
    { "simplify: permutations of rank 3 compose",
      "dim A = 2, B = 3, C = 4; input a : f32[A, B, C];"
      " t1[r, p, q] = a[p, q, r]; t2[q, r, p] = t1[r, p, q]; output t2;", P(simplify), true,
      { "t2[q, r, p] = a[p, q, r]\n" }, { "stage t1" }, STAT(simplified), 1, EXACT, NULL },
    { "simplify: a transpose of a computed stage is not a copy",
      SQ "t1[i, j] = a[j, i] + 1.0; t2[i, j] = t1[j, i]; output t2;", P(simplify), true,
      { "t2[i, j] = t1[j, i]\n" }, { 0 }, STAT(simplified), 0, EXACT, NULL },
    { "simplify: a diagonal read is no permutation",
      SQ "t1[i, j in 4] = a[i, i]; t2[i, j] = t1[j, i]; output t2;", P(simplify), true,
      { "t2[i, j] = t1[j, i]\n" }, { 0 }, STAT(simplified), 0, EXACT, NULL },
    { "simplify: (x @ w) * c puts c on the reduction's result",
      MAT "y[i, j] = sum(k) x[i, k] * w[k, j]; ys[i, j] = y[i, j] * 0.125; output ys;",
      P(simplify), true,
      { "stage ys : f32[3, 4]  ys[i, j] = (sum(k in 0..5) x[i, k] * w[k, j]) * 0.125\n" },
      { "stage y " }, STAT(simplified), 1, EXACT, "scale folded into y" },
    { "simplify: the scale stays apart when the reduction has another reader",
      MAT "y[i, j] = sum(k) x[i, k] * w[k, j]; ys[i, j] = y[i, j] * 0.125;"
          " z[i, j] = ys[i, j] + y[i, j]; output z;", P(simplify), true,
      { "ys[i, j] = y[i, j] * 0.125\n" }, { 0 }, STAT(simplified), 0, EXACT, NULL },
    { "simplify: the scale stays apart when the reduction is an output",
      MAT "y[i, j] = sum(k) x[i, k] * w[k, j]; ys[i, j] = y[i, j] * 0.125; output y, ys;",
      P(simplify), true, { "ys[i, j] = y[i, j] * 0.125\n" }, { 0 }, STAT(simplified), 0, EXACT,
      NULL },
    { "simplify: a transposed read of the reduction is no scale",
      "dim N = 4; input x : f32[N, N]; y[i, j] = sum(k) x[i, k] * x[k, j];"
      " ys[i, j] = y[j, i] * 0.125; output ys;", P(simplify), true,
      { "ys[i, j] = y[j, i] * 0.125\n" }, { 0 }, STAT(simplified), 0, EXACT, NULL },
    { "simplify: constant factors combine under fast-math",
      VEC "y[i] = x[i] * 3.0 * 0.5; output y;", P(simplify), false,
      { "y[i] = x[i] * 1.5\n" }, { 0 }, STAT(simplified), 1, ROUNDED, NULL },
    { "simplify: a constant divisor joins a constant factor under fast-math",
      VEC "y[i] = x[i] * 3.0 / 4.0; output y;", P(simplify), false,
      { "y[i] = x[i] * 0.75\n" }, { 0 }, STAT(simplified), 1, ROUNDED, NULL },
    { "simplify: a constant divisor stays apart under -fstrict-fp",
      VEC "y[i] = x[i] * 3.0 / 4.0; output y;", P(simplify), true,
      { "y[i] = x[i] * 3.0 / 4.0\n" }, { 0 }, STAT(simplified), 0, EXACT, NULL },
    { "simplify: constant factors stay apart under -fstrict-fp",
      VEC "y[i] = x[i] * 3.0 * 0.5; output y;", P(simplify), true,
      { "y[i] = x[i] * 3.0 * 0.5\n" }, { 0 }, STAT(simplified), 0, EXACT, NULL },
    { "simplify: a constant factor leaves the sum under fast-math",
      MAT "y[i, j] = sum(k) 0.5 * x[i, k] * w[k, j]; ys[i, j] = y[i, j] * 0.25; output ys;",
      P(simplify), false,
      { "ys[i, j] = (sum(k in 0..5) x[i, k] * w[k, j]) * 0.125\n" }, { 0 }, STAT(simplified), 3,
      ROUNDED, "constant factor moved out of the sum in y" },
    { "simplify: a constant factor stays in the sum under -fstrict-fp",
      MAT "y[i, j] = sum(k) 0.5 * x[i, k] * w[k, j]; output y;", P(simplify), true,
      { "y[i, j] = sum(k in 0..5) 0.5 * x[i, k] * w[k, j]\n" }, { 0 }, STAT(simplified), 0,
      EXACT, NULL },

    /* substitute */
    { "substitute: x / 4.0 -> x * 0.25, exact even under -fstrict-fp",
      VEC "y[i] = x[i] / 4.0; output y;", P(substitute), true,
      { "y[i] = x[i] * 0.25\n" }, { 0 }, STAT(substituted), 1, EXACT, NULL },
    { "substitute: x / 3.0 stays under -fstrict-fp",
      VEC "y[i] = x[i] / 3.0; output y;", P(substitute), true,
      { "y[i] = x[i] / 3.0\n" }, { 0 }, STAT(substituted), 0, EXACT, NULL },
    { "substitute: x / 3.0 -> x * 0.333333343 under fast-math",
      VEC "y[i] = x[i] / 3.0; output y;", P(substitute), false,
      { "y[i] = x[i] * 0.333333343\n" }, { 0 }, STAT(substituted), 1, ROUNDED, NULL },
    { "substitute: i32 division is never a multiplication",
      VEC "y[i] = n[i] / 2; output y;", P(substitute), false,
      { "y[i] = n[i] / 2\n" }, { 0 }, STAT(substituted), 0, EXACT, NULL },
    { "substitute: pow(x, 2) -> x * x",
      VEC "y[i] = pow(x[i] + 1.0, 2.0); output y;", P(substitute), true,
      { "y[i] = (x[i] + 1.0) * (x[i] + 1.0)\n" }, { 0 }, STAT(substituted), 1, ROUNDED, NULL },
    { "substitute: pow(exp(x), 2) stays (exp would run twice)",
      VEC "y[i] = pow(exp(x[i]), 2.0); output y;", P(substitute), false,
      { "y[i] = pow(exp(x[i]), 2.0)\n" }, { 0 }, STAT(substituted), 0, EXACT, NULL },
    { "substitute: pow(x, 1) -> x",
      VEC "y[i] = pow(x[i], 1.0) + 1.0; output y;", P(substitute), true,
      { "y[i] = x[i] + 1.0\n" }, { 0 }, STAT(substituted), 1, EXACT, NULL },
    { "substitute: pow(x, 0.5) -> sqrt(x) under fast-math",
      VEC "y[i] = pow(x[i] + 1.0, 0.5); output y;", P(substitute), false,
      { "y[i] = sqrt(x[i] + 1.0)\n" }, { 0 }, STAT(substituted), 1, ROUNDED, NULL },
    { "substitute: pow(x, 0.5) stays under -fstrict-fp (pow(-0, 0.5) is +0)",
      VEC "y[i] = pow(x[i], 0.5); output y;", P(substitute), true,
      { "y[i] = pow(x[i], 0.5)\n" }, { 0 }, STAT(substituted), 0, EXACT, NULL },
    { "substitute: x * -1 -> -x",
      VEC "y[i] = x[i] * -1.0 + -1.0 * x2[i]; output y;", P(constfold) | P(substitute), true,
      { "y[i] = -x[i] + -x2[i]\n" }, { 0 }, STAT(substituted), 2, EXACT, NULL },
    { "substitute: x * -2 stays",
      VEC "y[i] = x[i] * -2.0; output y;", P(constfold) | P(substitute), false,
      { "y[i] = x[i] * -2.0\n" }, { 0 }, STAT(substituted), 0, EXACT, NULL },
    { "substitute: softmax keeps its max-subtraction, and divides once per row",
      "dim M = 3, N = 5; input x : f32[M, N]; mx[i] = max(j) x[i, j];"
      " e[i, j] = exp(x[i, j] - mx[i]); s[i] = sum(j) e[i, j]; p[i, j] = e[i, j] / s[i];"
      " output p;", ALL_MINE, false,
      { "e[i, j] = exp(x[i, j] - mx[i])\n", "p[i, j] = e[i, j] * (1.0 / s[i])\n" }, { 0 },
      STAT(substituted), 1, ROUNDED, NULL },
    { "substitute: under -fstrict-fp, softmax divides every element",
      "dim M = 3, N = 5; input x : f32[M, N]; s[i] = sum(j) x[i, j];"
      " p[i, j] = x[i, j] / s[i]; output p;", ALL_MINE, true,
      { "p[i, j] = x[i, j] / s[i]\n" }, { 0 }, STAT(substituted), 0, EXACT, NULL },
    { "substitute: a divisor that varies along the innermost axis is divided by",
      "dim M = 3, N = 5; input x : f32[M, N]; input y : f32[N];"
      " p[i, j] = x[i, j] / y[j]; output p;", ALL_MINE, false,
      { "p[i, j] = x[i, j] / y[j]\n" }, { 0 }, STAT(substituted), 0, EXACT, NULL },

    /* fuse: the cost model (recomputation against a store and a load) */
#define NORM "dim M = 3, K = 5, N = 200; input x : f32[M, K]; input g : f32[K];" \
             " input w : f32[K, N];\n"
    { "fuse: a normalization stays out of the matmul that would recompute it per column",
      NORM "n[i, k] = x[i, k] * g[k] + 1.0; y[i, j] = sum(k) n[i, k] * w[k, j]; output y;",
      P(fuse), false,
      { "kernel n\n  not fused: y reads it inside a reduction, once per j (200 times an "
        "element): recomputing its 2 operations there costs more than a store and a load\n" },
      { "fuses n" }, STAT(fused), 0, EXACT, NULL },
    { "fuse: a transpose moves data only, and is inlined into the matmul",
      "dim M = 3, K = 5, N = 200; input x : f32[K, M]; input w : f32[K, N];"
      " t[i, k] = x[k, i]; y[i, j] = sum(k) t[i, k] * w[k, j]; output y;", P(fuse), false,
      { "kernel y: fuses t\n  t: elementwise, inlined into its only reader (recomputed 200 "
        "times an element, 0 operations: cheaper than a store and a load)\n" },
      { "kernel t" }, STAT(fused), 1, EXACT, NULL },
    { "fuse: a cheap producer recomputed twice an element is inlined",
      "dim M = 3, K = 5, N = 2; input x : f32[M, K]; input w : f32[K, N];"
      " n[i, k] = x[i, k] * 2.0; y[i, j] = sum(k) n[i, k] * w[k, j]; output y;", P(fuse), false,
      { "kernel y: fuses n\n" }, { "not fused" }, STAT(fused), 1, EXACT, NULL },
    { "fuse: a producer read in an epilogue, once an element, is inlined",
      NORM "n[i, j in N] = exp(x[i, 0]) * 3.0; y[i, j] = (sum(k) x[i, k] * w[k, j]) + n[i, j];"
      " output y;", P(fuse), false, { "kernel y: fuses n\n  n: elementwise, inlined into its only reader\n" },
      { "not fused" }, STAT(fused), 1, EXACT, NULL },
    { "fuse: each stage says why it is not fused",
      "dim M = 3, N = 5; input x : f32[M, N]; mx[i] = max(j) x[i, j];"
      " e[i, j] = exp(x[i, j] - mx[i]); s[i] = sum(j) e[i, j]; p[i, j] = e[i, j] / s[i];"
      " output p;", P(fuse), false,
      { "kernel mx\n  not fused: a reduction of another shape than e\n",
        "kernel e\n  not fused: read by 2 kernels (s, p): each would recompute it\n" },
      { 0 }, STAT(fused), 0, EXACT, NULL },

    /* layout: const B operands of a matmul read in panels of the tile */
#define CMAT "dim M = 3, K = 5, N = 200; input x : f32[M, K]; input w : const f32[K, N];\n"
    { "layout: a const weight is packed in panels of the default tile (64)",
      CMAT "y[i, j] = sum(k) x[i, k] * w[k, j]; output y;", LAYOUT, false,
      { "stage w_packed : f32[4, 5, 64]  w_packed[p, a0, l] = select(p * 64 + l < 200, "
        "w[a0, min(p * 64 + l, 199)], 0.0)\n",
        "y[i, j] = sum(k in 0..5) x[i, k] * w_packed[j / 64, k, j % 64]\n" },
      { 0 }, STAT(packed), 1, EXACT, "w prepacked in panels of 64 for y (w_packed)" },
    { "layout: the panel is the schedule's tile of j, a knob's value",
      CMAT "y[i, j] = sum(k) x[i, k] * w[k, j]; output y;"
           " schedule cpu { y.tile(i, j, 2, ?TJ in [32, 16]) -> io, jo, ii, ji; }",
      LAYOUT, false, { "w_packed[j / 32, k, j % 32]" }, { 0 }, STAT(packed), 1, EXACT, NULL },
    { "layout: a panel that divides the columns needs no select",
      CMAT "y[i, j] = sum(k) x[i, k] * w[k, j]; output y;"
           " schedule cpu { y.split(j, 40) -> jo, ji; }",
      LAYOUT, false, { "w_packed[p, a0, l] = w[a0, p * 40 + l]\n" }, { "select" },
      STAT(packed), 1, EXACT, NULL },
    { "layout: an input that is not const is read as it is (packing would copy every call)",
      MAT "y[i, j] = sum(k) x[i, k] * w[k, j]; output y;", LAYOUT, false,
      { "y[i, j] = sum(k in 0..5) x[i, k] * w[k, j]\n" }, { "packed" }, STAT(packed), 0, EXACT,
      NULL },
    { "layout: a weight two kernels read keeps its layout",
      CMAT "y[i, j] = sum(k) x[i, k] * w[k, j]; y2[i, j] = sum(k) x[i, k] * w[k, j] * 2.0;"
           " output y, y2;", LAYOUT, false,
      { "y[i, j] = sum(k in 0..5) x[i, k] * w[k, j]\n" }, { "packed" }, STAT(packed), 0, EXACT,
      NULL },
    { "layout: a weight read along the reduction (w[j, k]) is packed in panels of its rows",
      "dim M = 3, K = 5, N = 200; input x : f32[M, K]; input w : const f32[N, K];"
      " y[i, j] = sum(k) x[i, k] * w[j, k]; output y;", LAYOUT, false,
      { "stage w_packed : f32[4, 5, 64]  w_packed[p, a0, l] = select(p * 64 + l < 200, "
        "w[min(p * 64 + l, 199), a0], 0.0)\n",
        "y[i, j] = sum(k in 0..5) x[i, k] * w_packed[j / 64, k, j % 64]\n" },
      { 0 }, STAT(packed), 1, EXACT, "w prepacked in panels of 64 for y (w_packed)" },
    { "layout: an intermediate read along the reduction is packed at every call",
      "dim M = 3, K = 5, N = 200; input x : f32[M, K]; input v : f32[N, K];"
      " t[j, k] = v[j, k] * 2.0; y[i, j] = sum(k) x[i, k] * t[j, k]; output y;", LAYOUT, false,
      { "stage t_packed : f32[4, 5, 64]  t_packed[p, a0, l] = select(p * 64 + l < 200, "
        "t[min(p * 64 + l, 199), a0], 0.0)\n",
        "y[i, j] = sum(k in 0..5) x[i, k] * t_packed[j / 64, k, j % 64]\n" },
      { 0 }, STAT(packed), 1, EXACT, "t packed in panels of 64 along j for y at every call (t_packed)" },
    { "layout: an intermediate read along its rows keeps them (no copy)",
      "dim M = 3, K = 5, N = 200; input x : f32[M, K]; input v : f32[K, N];"
      " t[k, j] = v[k, j] * 2.0; y[i, j] = sum(k) x[i, k] * t[k, j]; output y;", LAYOUT, false,
      { "y[i, j] = sum(k in 0..5) x[i, k] * t[k, j]\n" }, { "packed" }, STAT(packed), 0, EXACT,
      NULL },
    { "layout: no panels when the schedule does not tile j",
      CMAT "y[i, j] = sum(k) x[i, k] * w[k, j]; output y; schedule cpu { y.parallel(i); }",
      LAYOUT, false, { "x[i, k] * w[k, j]\n" }, { "packed" }, STAT(packed), 0, EXACT, NULL },
    { "layout: no panels when the kernel stages w with cache_read",
      CMAT "y[i, j] = sum(k) x[i, k] * w[k, j]; output y;"
           " schedule cpu { y.split(j, 32) -> jo, ji; wl = w.cache_read(local, y) at jo; }",
      LAYOUT, false, { "x[i, k] * w[k, j]\n" }, { "packed" }, STAT(packed), 0, EXACT, NULL },
    { "layout: no panels as wide as the weight",
      "dim M = 3, K = 5, N = 16; input x : f32[M, K]; input w : const f32[K, N];"
      " y[i, j] = sum(k) x[i, k] * w[k, j]; output y;", LAYOUT, false,
      { "x[i, k] * w[k, j]\n" }, { "packed" }, STAT(packed), 0, EXACT, NULL },
    { "layout: the fused matmul_gelu kernel reads w in panels",
      CMAT "input b : f32[N]; y[i, j] = sum(k) x[i, k] * w[k, j];"
           " z[i, j] = gelu(y[i, j] * 0.125 + b[j]); output z;", P(fuse) | LAYOUT, false,
      { "z[i, j] = gelu((sum(k in 0..5) x[i, k] * w_packed[j / 64, k, j % 64]) * 0.125 + b[j])\n" },
      { 0 }, STAT(packed), 1, EXACT, "w prepacked in panels of 64 for z (w_packed)" },

    /* everything together */
    { "all passes: matmul_gelu's chain",
      MAT "input b : f32[N]; let scale = 1.0 / sqrt(64.0);"
          " y[i, j] = sum(k) x[i, k] * w[k, j]; ys[i, j] = y[i, j] * scale;"
          " yb[i, j] = ys[i, j] + b[j]; g[i, j] = gelu(yb[i, j]); z[i, j] = g[i, j] + 0.0;"
          " output z;", ALL_MINE, false,
      { "stage ys : f32[3, 4]  ys[i, j] = (sum(k in 0..5) x[i, k] * w[k, j]) * 0.125\n",
        "stage z : f32[3, 4]  z[i, j] = gelu(yb[i, j])\n" }, { "stage g" }, STAT(folded), 1,
      EXACT, "scale folded into y" },
};

/* ---------------------------------------------------------------- */
/* Details the table cannot express.                                 */

static Tensor *find(Graph *g, const char *name)
{
    for (int i = 0; i < g->ntensors; i++)
        if (strcmp(g->tensors[i]->name, name) == 0)
            return g->tensors[i];
    return NULL;
}

static bool has_alias(const Tensor *t, const char *name)
{
    for (int i = 0; t && i < t->naliases; i++)
        if (strcmp(t->aliases[i], name) == 0)
            return true;
    return false;
}

static void test_details(void)
{
    Arena a = { 0 };
    OptStats stats = { 0 };

    Graph *g = parse(&a, VEC "g[i] = exp(x[i]); z[i] = g[i] + 0.0; output z;");
    run_passes(&a, g, P(dce), false, &stats);
    Tensor *z = find(g, "z");
    check(z && z->is_output && g->outputs[0] == z && has_alias(z, "g"),
          "dce: the surviving stage carries the output's name and flag, its old name an alias");

    g = parse(&a, MAT "y[i, j] = sum(k) x[i, k] * w[k, j]; ys[p, q] = y[p, q] * 0.125;"
                      " output ys;");
    run_passes(&a, g, P(simplify), true, &stats);
    Tensor *ys = find(g, "ys");
    check(ys && ys->anchor && strcmp(ys->anchor, "y") == 0 && has_alias(ys, "y") &&
              strcmp(ys->vars[0]->name, "i") == 0 && strcmp(ys->vars[1]->name, "j") == 0,
          "simplify: the scaled reduction is anchored at y, takes y's variables, aliases y");

    g = parse(&a, VEC "y[i] = exp(x[i] + 1.0) * exp(x[i] + 1.0); output y;");
    run_passes(&a, g, P(cse), true, &stats);
    Tensor *y = find(g, "y");
    check(y && y->body->kind == EX_OP && y->body->args[0] == y->body->args[1],
          "cse: the shared subexpression is one node");

    g = parse(&a, MAT "s1[i] = sum(k) x[i, k]; s2[r] = sum(l) x[r, l]; output s1;");
    Tensor *s1 = find(g, "s1"), *s2 = find(g, "s2");
    check(te_expr_equiv(s1->body, s2->body, s1->vars, s2->vars, 1),
          "te_expr_equiv: equal up to the stage's variables and the reduction's axes");
    check(!te_expr_equiv(s1->body, s2->body, NULL, NULL, 0),
          "te_expr_equiv: not equal when the stage variables must be the same");
    arena_free(&a);
}

/* ---------------------------------------------------------------- */
/* The memory planner.                                               */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int64_t aligned(int64_t b)
{
    return (b + 63) / 64 * 64;
}

/* Checks a plan's invariants; returns a reason or NULL. */
static const char *plan_error(const PlanBuf *b, int n, int64_t naive, int64_t peak)
{
    int64_t sum = 0, top = 0;
    for (int i = 0; i < n; i++) {
        sum += aligned(b[i].bytes);
        if (b[i].offset % 64 != 0 || b[i].offset < 0)
            return "an offset is not 64-byte aligned";
        if (b[i].bytes && b[i].offset + aligned(b[i].bytes) > top)
            top = b[i].offset + aligned(b[i].bytes);
        for (int j = 0; j < i; j++) {
            bool live = b[i].first <= b[j].last && b[j].first <= b[i].last;
            bool bytes = b[i].bytes && b[j].bytes && b[i].offset < b[j].offset + b[j].bytes &&
                         b[j].offset < b[i].offset + b[i].bytes;
            if (live && bytes)
                return "two live buffers share bytes";
        }
    }
    if (naive != sum)
        return "naive is not the sum of the aligned sizes";
    if (peak != top)
        return "the peak is not the end of the highest buffer";
    if (peak > naive)
        return "the planned peak exceeds the naive one";
    /* no plan beats the most bytes live at one step */
    int steps = 0;
    for (int i = 0; i < n; i++)
        if (b[i].last + 1 > steps)
            steps = b[i].last + 1;
    for (int s = 0; s < steps; s++) {
        int64_t live = 0;
        for (int i = 0; i < n; i++)
            if (b[i].first <= s && s <= b[i].last)
                live += aligned(b[i].bytes);
        if (peak < live)
            return "the peak is below the bytes live at one step";
    }
    return NULL;
}

static void test_memplan(void)
{
    /* a chain: y feeds z feeds out; y and out never live together */
    PlanBuf chain[] = {
        { "y", 100, 0, 1, -1 },
        { "z", 200, 1, 2, -1 },
        { "out", 100, 2, 3, -1 },
    };
    int64_t naive;
    int64_t peak = te_memplan(chain, 3, &naive);
    check(naive == 128 + 256 + 128 && peak == 384 && chain[1].offset == 0 &&
              chain[0].offset == 256 && chain[2].offset == 256,
          "memplan: a chain shares the bytes of buffers that are never live together");
    check(!plan_error(chain, 3, naive, peak), "memplan: the chain's plan is valid");

    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    te_print_memplan(out, chain, 3, naive, peak);
    fclose(out);
    const char *want = "buffer y : 100 bytes, live [0, 1], offset 256\n"
                       "buffer z : 200 bytes, live [1, 2], offset 0\n"
                       "buffer out : 100 bytes, live [2, 3], offset 256\n"
                       "naive peak 512 bytes, planned peak 384 bytes (25.0% less)\n";
    check(strcmp(text, want) == 0, "memplan: the --dump=memory format");
    if (strcmp(text, want) != 0)
        printf("# got:\n%s", text);
    free(text);

    PlanBuf all_live[] = { { "a", 64, 0, 2, -1 }, { "b", 1, 1, 1, -1 }, { "c", 0, 0, 3, -1 } };
    peak = te_memplan(all_live, 3, &naive);
    check(peak == 128 && naive == 128 && all_live[2].offset == 0 &&
              !plan_error(all_live, 3, naive, peak),
          "memplan: overlapping buffers get their own bytes; an empty one takes none");
    check(te_memplan(NULL, 0, &naive) == 0 && naive == 0, "memplan: no buffers, no bytes");

    const char *failure = NULL;
    int trials = 2000, better = 0;
    for (int t = 0; t < trials && !failure; t++) {
        PlanBuf b[40];
        int n = 1 + (int)(rng() % 40);
        int steps = 1 + (int)(rng() % 12);
        for (int i = 0; i < n; i++) {
            int f = (int)(rng() % (uint64_t)steps);
            int l = f + (int)(rng() % (uint64_t)(steps - f));
            b[i] = (PlanBuf){ "b", (int64_t)(rng() % 5000), f, l, -1 };
        }
        peak = te_memplan(b, n, &naive);
        failure = plan_error(b, n, naive, peak);
        better += peak < naive;
    }
    check(!failure, "memplan: %d random instances: no live overlap, aligned, peak <= naive%s%s",
          trials, failure ? ": " : "", failure ? failure : "");
    check(better > trials / 2, "memplan: most random instances need less than the naive peak "
                               "(%d of %d)", better, trials);
}

int main(void)
{
    diag_quiet = true; /* the test programs leave inputs unused on purpose */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
    test_details();
    test_memplan();
    return tap_done();
}
