/* unit_sema.c — unit tests of sema's run-time dims (frontend/sema.c): the
 * range, hint and graph value interval arithmetic gives a dim computed
 * from run-time dims, what -D does to them, and which programs it must
 * refuse.  (The refusals' exact messages are goldens in tests/diag.)
 * Output is TAP; the exit status is 0 exactly when every test passed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"

static int tests_run, tests_failed;

static void check(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void check(bool cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d - ", cond ? "ok" : "not ok", ++tests_run);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    if (!cond)
        tests_failed++;
}

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
    check(g && te_require_static_dims(g), "a program with every run-time dim given by -D builds");
    arena_free(&a);

    check(!sema_of(&a, "dim M in 1..4096;", "M", 4097) && diag_errors == 1,
          "-D M=4097 outside 1..4096 is refused");
    arena_free(&a);
    g = sema_of(&a, "dim M in 1..4096; dim MP = M + 2;", NULL, 0);
    check(g && !te_require_static_dims(g) && diag_errors == 1,
          "a graph with a run-time dim left is refused with one diagnostic");
    arena_free(&a);
}

int main(void)
{
    diag_quiet = true;
    diag_stream = getenv("UNIT_SEMA_DIAG") ? stderr : fopen("/dev/null", "w"); /* goldens elsewhere */
    test_ranges();
    test_specialize();
    printf("1..%d\n", tests_run);
    return tests_failed != 0;
}
