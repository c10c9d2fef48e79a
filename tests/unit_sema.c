/* unit_sema.c — unit tests of sema's run-time dims (frontend/sema.c): the
 * range, hint and graph value interval arithmetic gives a dim computed
 * from run-time dims, what -D does to them, and which programs it must
 * refuse; index bounds over the ranges and the run-time checks left for
 * what they cannot decide; and the evaluator at given sizes (lang/eval.c,
 * te_eval_at) against the -D specialized graph, on two samples.  (The
 * refusals' exact messages are goldens in tests/diag.)
 * Output is TAP; the exit status is 0 exactly when every test passed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"

#include "tests/tap.h"

/* DIMS (the dim statements), then an input of every dim, a stage and an
 * output around them, checked by sema under -D DNAME=DVALUE (none if
 * DNAME is NULL). */
static Graph *sema_of(Arena *a, const char *dims, const char *dname, int64_t dvalue)
{
    diag_errors = 0; /* fe_parse fails while any error is counted */
    Source *src = arena_alloc(a, sizeof *src);
    char *text = arena_printf(a, "%s\ninput x : f32[4];\ny[i] = x[i];\noutput y;\n", dims);
    src_from_string(src, "test.te", text, strlen(text));
    Parser p = { .arena = a, .src = src };
    Program prog = { 0 };
    if (!fe_parse(&p, &prog))
        return NULL;
    DimOverride d = { dname, dvalue, false };
    return fe_sema(a, src, &prog, &d, dname ? 1 : 0);
}

static const Dim *dim_named(const Graph *g, const char *name)
{
    for (int i = 0; g && i < g->ndims; i++)
        if (strcmp(g->dims[i].name, name) == 0)
            return &g->dims[i];
    return NULL;
}

/* A dim NAME of the program DIMS has the range LO..HI, the hint HINT and
 * the value VALUE in the graph, and is run-time exactly when RUNTIME. */
static void expect_dim(const char *dims, const char *name, bool runtime, int64_t lo,
                       int64_t hi, int64_t hint, int64_t value)
{
    Arena a = { 0 };
    const Dim *d = dim_named(sema_of(&a, dims, NULL, 0), name);
    check(d && d->runtime == runtime && d->lo == lo && d->hi == hi && d->hint == hint &&
              d->value == value,
          "%s: %s is %s %lld..%lld = %lld, %lld in the graph (got %s %lld..%lld = %lld, %lld)",
          dims, name, runtime ? "run-time" : "static", (long long)lo, (long long)hi,
          (long long)hint, (long long)value, !d ? "none" : d->runtime ? "run-time" : "static",
          d ? (long long)d->lo : 0LL, d ? (long long)d->hi : 0LL, d ? (long long)d->hint : 0LL,
          d ? (long long)d->value : 0LL);
    arena_free(&a);
}

static void expect_refused(const char *dims, const char *why)
{
    Arena a = { 0 };
    Graph *g = sema_of(&a, dims, NULL, 0);
    check(!g && diag_errors == 1, "%s is refused: %s", dims, why);
    arena_free(&a);
}

static void test_ranges(void)
{
    /* declared */
    expect_dim("dim M in 1..4096;", "M", true, 1, 4096, 4096, 4096);
    expect_dim("dim M in 1..4096 = 512;", "M", true, 1, 4096, 512, 4096);
    expect_dim("dim M in 7..7;", "M", true, 7, 7, 7, 7);
    expect_dim("dim K = 8; dim M in K..4 * K = 2 * 8;", "M", true, 8, 32, 16, 32);
    expect_dim("dim M in 1..4096, N = 3072;", "N", false, 3072, 3072, 3072, 3072);
    /* computed: + - * / % min max over the ranges */
    expect_dim("dim M in 1..4096 = 512; dim MP = M + 2;", "MP", true, 3, 4098, 514, 4098);
    expect_dim("dim M in 3..10 = 5; dim D = M - 2;", "D", true, 1, 8, 3, 8);
    expect_dim("dim M in 2..10 = 4; dim D = 20 - M;", "D", true, 10, 18, 16, 10);
    expect_dim("dim M in 2..10 = 4, N in 3..5; dim P = M * N;", "P", true, 6, 50, 20, 50);
    expect_dim("dim M in 2..10 = 4; dim Q = 100 / M;", "Q", true, 10, 50, 25, 10);
    expect_dim("dim M in 8..64 = 16; dim T = (M + 3) / 4;", "T", true, 2, 16, 4, 16);
    expect_dim("dim M in 1..100 = 50; dim R = M % 7 + 1;", "R", true, 1, 7, 2, 3);
    expect_dim("dim M in 1..100 = 50; dim C = min(M, 16);", "C", true, 1, 16, 16, 16);
    expect_dim("dim M in 1..100 = 50; dim C = max(M, 16);", "C", true, 16, 100, 50, 100);
    expect_dim("dim M in 1..100 = 50; dim S = 1 - -M;", "S", true, 2, 101, 51, 101);
    /* interval arithmetic alone is sound, not tight (M - M + 1 would be
       -98..100); the size expression is simplified first, so it is 1 */
    expect_dim("dim M in 1..100; dim Z = M - M + 1;", "Z", false, 1, 1, 1, 1);
    expect_dim("dim M in 1..100 = 50; dim Z = (M + 2) - M + M * 2 - M;", "Z", true, 3, 102, 52, 102);
    expect_refused("dim M in 1..100; dim Z = 10 / (M - 5);", "a divisor whose range holds 0");
    expect_refused("dim M in 1..100; dim Z = M * 4611686018427387904;", "overflow over the range");
    expect_refused("dim M in 5..4;", "an empty range");
    expect_refused("dim M in 0..4;", "a range from 0");
    expect_refused("dim M in 1..4 = 5;", "a hint outside the range");
    expect_refused("dim M in 1..4; dim N in 1..8 = M;", "a range on a computed dim");
    expect_refused("dim M in 1..4; dim N in M..8;", "a run-time bound");
}

static void test_specialize(void)
{
    Arena a = { 0 };
    Graph *g = sema_of(&a, "dim M in 1..4096 = 512; dim MP = M + 2;", "M", 100);
    const Dim *m = dim_named(g, "M"), *mp = dim_named(g, "MP");
    check(m && !m->runtime && m->overridden && m->value == 100 && m->lo == 100 && m->hi == 100,
          "-D M=100 makes M static 100");
    check(mp && !mp->runtime && mp->value == 102 && mp->lo == 102 && mp->hi == 102,
          "-D M=100 makes MP = M + 2 static 102");
    check(g && te_require_static_dims(g, "--tune"), "a program with every run-time dim given by -D builds");
    arena_free(&a);

    check(!sema_of(&a, "dim M in 1..4096;", "M", 4097) && diag_errors == 1,
          "-D M=4097 outside 1..4096 is refused");
    arena_free(&a);
    g = sema_of(&a, "dim M in 1..4096; dim MP = M + 2;", NULL, 0);
    check(g && !te_require_static_dims(g, "--tune") && diag_errors == 1,
          "a graph with a run-time dim left is refused with one diagnostic");
    arena_free(&a);
}

/* TEXT, checked by sema under the -D overrides OV[0..N). */
static Graph *graph_of(Arena *a, const char *text, DimOverride *ov, int n)
{
    diag_errors = 0;
    Source *src = arena_alloc(a, sizeof *src);
    char *copy = arena_strdup(a, text);
    src_from_string(src, "test.te", copy, strlen(copy));
    Parser p = { .arena = a, .src = src };
    Program prog = { 0 };
    if (!fe_parse(&p, &prog))
        return NULL;
    for (int i = 0; i < n; i++)
        ov[i].used = false;
    return fe_sema(a, src, &prog, ov, n);
}

static void test_bounds(void)
{
    Arena a = { 0 };
    static const char ok[] =
        "dim M in 1..4096; dim MP = M + 2;\ninput x : f32[MP];\n"
        "y[i in M] = x[i + 2] + x[i];\nz[i in MP] = x[i];\noutput y, z;\n";
    Graph *g = graph_of(&a, ok, NULL, 0);
    check(g && g->nchecks == 0, "x[i + 2] with i in 0..M and x of M + 2 is in bounds at every M");
    arena_free(&a);
    check(!graph_of(&a, "dim M in 1..4096;\ninput x : f32[M + 2];\ny[i in M] = x[i + 3];\noutput y;\n",
                    NULL, 0),
          "x[i + 3] with i in 0..M and x of M + 2 is refused");
    arena_free(&a);
    /* (M / 2) * 2 - M is 0 or -1: the intervals cannot tell */
    g = graph_of(&a, "dim M in 1..64;\ninput x : f32[M / 2 * 2 + 1];\ny[i in M] = x[i + 1];\noutput y;\n",
                 NULL, 0);
    check(g && g->nchecks == 1, "an undecided bound becomes one run-time check (got %d)",
          g ? g->nchecks : -1);
    if (g && g->nchecks == 1) {
        int64_t m4[1] = { 4 }, m3[1] = { 3 };
        double x[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, *in[1] = { x }, *out[1] = { NULL };
        check(te_eval_at(g, m4, in, out) == 0 && out[0][3] == 5, "the check holds at M = 4");
        free(out[0]);
        out[0] = NULL;
        check(te_eval_at(g, m3, in, out) == -1 && diag_errors == 1, "the check fails at M = 3");
        int64_t m0[1] = { 0 };
        check(te_eval_at(g, m0, in, out) == -1, "M = 0 is outside M's range");
    }
    arena_free(&a);
    check(!graph_of(&a, "dim M in 1..8;\ninput x : f32[M];\ny[i in M] = x[i] * M;\noutput y;\n", NULL, 0) &&
              diag_errors == 1,
          "a run-time dim used as a value is refused");
    arena_free(&a);
}

/* The text of PATH with its first FROM replaced by TO. */
static char *sample_with(Arena *a, const char *path, const char *from, const char *to)
{
    const char *dir = getenv("srcdir") ? getenv("srcdir") : ".";
    Source src;
    if (!src_load(a, &src, arena_printf(a, "%s/%s", dir, path)))
        return NULL;
    char *at = strstr(src.text, from);
    if (!at)
        return NULL;
    return arena_printf(a, "%.*s%s%s", (int)(at - src.text), src.text, to, at + strlen(from));
}

/* Evaluating SAMPLE with FROM (its dim M's static declaration) made TO (a
 * run-time dim up to MAX) at M = k gives exactly what the -D M=k graph
 * gives, before and after the optimizer, for each k of SIZES.  OV holds
 * the other dims' -D (smaller sizes, for speed). */
static void expect_eval_at(const char *sample, const char *from, const char *to,
                           DimOverride *ov, int nov, const int64_t *sizes, int nsizes)
{
    for (int opt = 0; opt < 2; opt++)
        for (int s = 0; s < nsizes; s++) {
            Arena a = { 0 };
            char *text = sample_with(&a, sample, from, to);
            DimOverride all[8];
            memcpy(all, ov, sizeof *ov * (size_t)nov);
            Graph *rt = text ? graph_of(&a, text, all, nov) : NULL;
            all[nov] = (DimOverride){ "M", sizes[s], false };
            Graph *st = text ? graph_of(&a, text, all, nov + 1) : NULL;
            bool same = rt && st && te_require_static_dims(st, "--tune");
            OptOptions o = { .dump = stdout };
            OptStats stats = { 0 };
            if (same && opt)
                same = te_optimize(&a, rt, &o, &stats) && te_optimize(&a, st, &o, &stats);
            int64_t *dims = arena_alloc(&a, sizeof *dims * (size_t)(rt ? rt->ndims + 1 : 1));
            for (int i = 0; same && i < rt->ndims; i++)
                dims[i] = strcmp(rt->dims[i].name, "M") == 0 ? sizes[s] : rt->dims[i].value;
            double *in[8] = { 0 }, *got[8] = { 0 }, *want[8] = { 0 };
            for (int i = 0; same && i < st->ninputs; i++) {
                same = te_elems_at(rt->inputs[i], dims) == tensor_elems(st->inputs[i]);
                in[i] = malloc(sizeof(double) * (size_t)tensor_elems(st->inputs[i]));
                te_random_input(st->inputs[i], 7, in[i]);
            }
            same = same && te_eval_at(rt, dims, in, got) == 0 && te_eval(st, in, want) == 0;
            for (int i = 0; same && i < st->noutputs; i++)
                same = te_elems_at(rt->outputs[i], dims) == tensor_elems(st->outputs[i]) &&
                       memcmp(got[i], want[i], sizeof(double) * (size_t)tensor_elems(st->outputs[i])) == 0;
            check(same, "%s with %s%s: evaluated at M = %lld, the same as -D M=%lld", sample, to,
                  opt ? ", optimized" : "", (long long)sizes[s], (long long)sizes[s]);
            for (int i = 0; i < 8; i++) {
                free(in[i]);
                free(got[i]);
                free(want[i]);
            }
            arena_free(&a);
        }
}

static void test_eval_at(void)
{
    DimOverride mg[2] = { { "N", 48, false }, { "K", 16, false } };
    static const int64_t mg_sizes[] = { 1, 2, 7, 63, 64 };
    expect_eval_at("samples/matmul_gelu.te", "dim M = 512", "dim M in 1..64 = 16", mg, 2, mg_sizes, 5);
    DimOverride sm[1] = { { "N", 37, false } };
    static const int64_t sm_sizes[] = { 1, 3, 100, 255, 256 };
    expect_eval_at("samples/softmax.te", "dim M = 256", "dim M in 1..256", sm, 1, sm_sizes, 5);
}

int main(void)
{
    diag_quiet = true;
    diag_stream = getenv("UNIT_SEMA_DIAG") ? stderr : fopen("/dev/null", "w"); /* goldens elsewhere */
    test_ranges();
    test_specialize();
    test_bounds();
    test_eval_at();
    return tap_done();
}
