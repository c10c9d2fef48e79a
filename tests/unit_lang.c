/* unit_lang.c — unit tests of lang/: dtype rounding, the arena,
 * diagnostics, the printer and canonical hash, the reference evaluator and
 * .npy I/O.  Output is TAP ("ok N - what", then the plan "1..N"); the exit
 * status is 0 exactly when every test passed.
 *
 * Graphs are built by hand with the ex_* constructors, the way sema builds
 * them, and their results are compared with values computed directly here.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* mkdtemp, dup, fileno */
#endif
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lang/texc.h"

#include "tests/tap.h"

/* Same double, NaN equal to NaN, and 0.0 distinct from -0.0. */
static bool same(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

static bool check_round(DType t, double in, double want)
{
    double got = dtype_round(t, in);
    bool ok = same(got, want);
    check(ok, "dtype_round(%s, %.17g) = %.17g", dtype_name(t), in, want);
    if (!ok)
        printf("# got %.17g\n", got);
    return ok;
}

/* Everything written to STREAM so far, as a malloc'ed string. */
static char *slurp(FILE *stream)
{
    fflush(stream);
    long n = ftell(stream);
    char *s = malloc((size_t)n + 1);
    rewind(stream);
    size_t got = fread(s, 1, (size_t)n, stream);
    s[got] = '\0';
    return s;
}

static bool check_text(const char *got, const char *want, const char *what)
{
    bool ok = strcmp(got, want) == 0;
    check(ok, "%s", what);
    if (!ok)
        printf("# got:\n%s# want:\n%s", got, want);
    return ok;
}

/* ---------------------------------------------------------------- */

/* bf16 as hardware and PyTorch round it: through the f32 bits. */
static double bf16_via_f32_bits(float f)
{
    union {
        float f;
        uint32_t u;
    } x = { f };
    if (isnan(f))
        return f;
    x.u = (x.u + 0x7fff + ((x.u >> 16) & 1)) & 0xffff0000u;
    return x.f;
}

static void test_dtypes(void)
{
    /* f16: the largest finite value, overflow, subnormals, ties. */
    check_round(DT_F16, 65504.0, 65504.0);
    check_round(DT_F16, 65519.99, 65504.0);
    check_round(DT_F16, 65520.0, INFINITY);
    check_round(DT_F16, -65520.0, -INFINITY);
    check_round(DT_F16, 1e-8, 0.0);
    check_round(DT_F16, -1e-8, -0.0);
    check_round(DT_F16, 3e-8, 0x1p-24);
    check_round(DT_F16, 1e-7, 0x1p-23);
    check_round(DT_F16, 0x1p-25, 0.0);             /* tie: to even (0) */
    check_round(DT_F16, 0x3p-25, 0x1p-23);         /* tie: to even (2) */
    check_round(DT_F16, 0x1p-14, 0x1p-14);         /* smallest normal */
    check_round(DT_F16, 1.0 + 0x1p-11, 1.0);       /* tie: to even */
    check_round(DT_F16, 1.0 + 0x3p-11, 1.0 + 0x1p-9);
    check_round(DT_F16, 0.1, 0.0999755859375);
    check_round(DT_F16, NAN, NAN);
    check_round(DT_F16, -INFINITY, -INFINITY);

    bool bits_ok = true;
    for (uint32_t b = 0; b < 0x10000 && bits_ok; b++) {
        double v = dtype_f16_value((uint16_t)b);
        bool nan = ((b >> 10) & 0x1f) == 0x1f && (b & 0x3ff);
        if (nan)
            bits_ok = isnan(v);
        else
            bits_ok = dtype_f16_bits(v) == b && dtype_round(DT_F16, v) == v;
        if (!bits_ok)
            printf("# bits 0x%04x -> %.17g -> 0x%04x\n", b, v, dtype_f16_bits(v));
    }
    check(bits_ok, "f16 bits round-trip for all 65536 patterns");
    check(dtype_f16_bits(1.0) == 0x3c00 && dtype_f16_bits(-2.0) == 0xc000 &&
              dtype_f16_bits(65504.0) == 0x7bff && dtype_f16_bits(1e6) == 0x7c00 &&
              dtype_f16_bits(0x1p-24) == 0x0001 && dtype_f16_bits(-0.0) == 0x8000,
          "f16 bit patterns of 1, -2, 65504, 1e6, 2^-24, -0");

    /* bf16: ties on the 8th fraction bit, overflow. */
    check_round(DT_BF16, 1.0 + 0x1p-8, 1.0);
    check_round(DT_BF16, 1.0 + 0x3p-8, 1.0 + 0x1p-6);
    check_round(DT_BF16, 1.0 + 0x1p-8 + 0x1p-20, 1.0 + 0x1p-7);
    check_round(DT_BF16, -(1.0 + 0x3p-8), -(1.0 + 0x1p-6));
    check_round(DT_BF16, FLT_MAX, INFINITY);
    check_round(DT_BF16, 0x1.fep127, 0x1.fep127); /* largest finite */
    check_round(DT_BF16, 0x1p-133, 0x1p-133);     /* smallest subnormal */
    uint64_t x = 12345;
    bool agree = true;
    for (int i = 0; i < 200000 && agree; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        union {
            uint32_t u;
            float f;
        } r = { (uint32_t)(x >> 32) };
        if (isnan(r.f))
            continue;
        agree = same(dtype_round(DT_BF16, r.f), bf16_via_f32_bits(r.f));
        if (!agree)
            printf("# %a: %a vs %a\n", r.f, dtype_round(DT_BF16, r.f),
                   bf16_via_f32_bits(r.f));
    }
    check(agree, "bf16 agrees with rounding the f32 bits on random floats");

    /* u8 and i8: truncation toward zero, saturation, NaN (language.md 4.2). */
    check_round(DT_U8, 255.9, 255.0);
    check_round(DT_U8, 256.0, 255.0);
    check_round(DT_U8, -0.5, 0.0);
    check_round(DT_U8, -1.0, 0.0);
    check_round(DT_U8, NAN, 0.0);
    check_round(DT_U8, INFINITY, 255.0);
    check_round(DT_I8, 127.9, 127.0);
    check_round(DT_I8, -128.9, -128.0);
    check_round(DT_I8, -129.0, -128.0);
    check_round(DT_I8, -2.5, -2.0);
    check_round(DT_I8, -INFINITY, -128.0);
    check_round(DT_I8, NAN, 0.0);
    check(dtype_bytes(DT_U8) == 1 && strcmp(dtype_npy(DT_I8), "|i1") == 0 &&
              strcmp(dtype_ctype(DT_U8), "uint8_t") == 0 && dtype_is_narrow_int(DT_I8) &&
              !dtype_is_narrow_int(DT_I32) && !dtype_is_float(DT_U8) &&
              dtype_lookup("u8", 2) == DT_U8 && dtype_lookup("i8", 2) == DT_I8,
          "u8 and i8 in the dtype tables");

    /* i32: truncation, saturation, NaN; bool; f32. */
    check_round(DT_I32, 2.9, 2.0);
    check_round(DT_I32, -2.9, -2.0);
    check_round(DT_I32, 3e9, 2147483647.0);
    check_round(DT_I32, -3e9, -2147483648.0);
    check_round(DT_I32, NAN, 0.0);
    check_round(DT_I32, INFINITY, 2147483647.0);
    check_round(DT_BOOL, 0.5, 1.0);
    check_round(DT_BOOL, -0.0, 0.0);
    check_round(DT_BOOL, NAN, 1.0);
    check_round(DT_F32, 0.1, (double)0.1f);
    check_round(DT_F64, 0.1, 0.1);

    check(dtype_lookup("bf16", 4) == DT_BF16 && dtype_lookup("f32x", 3) == DT_F32 &&
              dtype_lookup("f3", 2) == DT_NONE && dtype_lookup("none", 4) == DT_NONE,
          "dtype_lookup");
    check(dtype_bytes(DT_F16) == 2 && strcmp(dtype_npy(DT_BF16), "<f4") == 0 &&
              strcmp(dtype_ctype(DT_I32), "int32_t") == 0 &&
              dtype_is_float(DT_BF16) && !dtype_is_float(DT_I32),
          "dtype tables");
    check(strcmp(op_text(OP_LE), "<=") == 0 && op_arity(OP_SELECT) == 3 &&
              op_is_call(OP_MAX) && !op_is_call(OP_MOD),
          "operator tables");
    check(strcmp(reducer_name(RED_PROD), "prod") == 0 &&
              reducer_identity(RED_SUM) == 0.0 && reducer_identity(RED_PROD) == 1.0 &&
              reducer_identity(RED_MAX) == -INFINITY &&
              reducer_identity(RED_MIN) == INFINITY,
          "reducer tables");
}

/* The value of bf16 bits B (the top half of an f32). */
static double bf16_value(uint32_t b)
{
    union {
        uint32_t u;
        float f;
    } x = { b << 16 };
    return x.f;
}

/* Every finite bf16 or f16 pattern B of positive value V = VALUE(B), with
 * its successor W = VALUE(B + 1): V and W round to themselves, the midpoint
 * to the one of even significand, and the doubles just either side of the
 * midpoint to the nearer.  Negative values mirror positive ones (checked
 * by negating).  Round-to-nearest-even, decided at every boundary between
 * neighbouring values of the format: no pattern is skipped. */
static bool check_all_ties(DType t, double (*value)(uint32_t), uint32_t last_finite)
{
    for (uint32_t b = 0; b < last_finite; b++) {
        double v = value(b), w = value(b + 1), mid = (v + w) / 2; /* exact in double */
        double even = (b & 1) ? w : v;
        double below = nextafter(mid, 0.0), above = nextafter(mid, INFINITY);
        for (int sign = 1; sign >= -1; sign -= 2) {
            if (!same(dtype_round(t, sign * v), sign * v) || !same(dtype_round(t, sign * mid), sign * even) ||
                !same(dtype_round(t, sign * below), sign * v) ||
                !same(dtype_round(t, sign * above), sign * w)) {
                printf("# %s: pattern 0x%04x (%.17g), midpoint %.17g rounds to %.17g\n", dtype_name(t),
                       b, sign * v, sign * mid, dtype_round(t, sign * mid));
                return false;
            }
        }
    }
    /* past the largest finite value: the midpoint to 2^(emax+1) overflows */
    double top = value(last_finite), mid = top + (top - value(last_finite - 1)) / 2;
    return same(dtype_round(t, nextafter(mid, 0.0)), top) && same(dtype_round(t, mid), INFINITY) &&
           same(dtype_round(t, -mid), -INFINITY);
}

static double f16_value(uint32_t b)
{
    return dtype_f16_value((uint16_t)b);
}

/* bf16 and f16 conversions over every bit pattern (issue 20, ask 3): the
 * round trip of every value, and the rounding of every tie and its
 * neighbours, which is what the kernels' conversions must reproduce. */
static void test_narrow_float_patterns(void)
{
    check(check_all_ties(DT_F16, f16_value, 0x7bff),
          "f16: all 31743 positive finite patterns, their negatives and every midpoint round to nearest even");
    check(check_all_ties(DT_BF16, bf16_value, 0x7f7f),
          "bf16: all 32639 positive finite patterns, their negatives and every midpoint round to nearest even");
    bool bf16_ok = true;
    for (uint32_t b = 0; b < 0x10000 && bf16_ok; b++) {
        double v = bf16_value(b);
        bf16_ok = isnan(v) ? isnan(dtype_round(DT_BF16, v)) : same(dtype_round(DT_BF16, v), v) &&
                                                                  same(bf16_via_f32_bits((float)v), v);
        if (!bf16_ok)
            printf("# bf16 bits 0x%04x -> %.17g -> %.17g\n", b, v, dtype_round(DT_BF16, v));
    }
    check(bf16_ok, "bf16: all 65536 patterns are their own rounding (NaNs stay NaN)");
}

/* ---------------------------------------------------------------- */

static void test_arena(void)
{
    Arena a = { 0 };
    bool aligned = true, zeroed = true;
    unsigned char *ptrs[1000];
    for (int i = 0; i < 1000; i++) {
        size_t n = (size_t)(i % 97) * 13 + 1;
        unsigned char *p = arena_alloc(&a, n);
        aligned &= ((uintptr_t)p & 15) == 0;
        for (size_t k = 0; k < n; k++)
            zeroed &= p[k] == 0;
        memset(p, i & 0xff, n);
        ptrs[i] = p;
    }
    unsigned char *big = arena_alloc(&a, 1 << 20);
    aligned &= ((uintptr_t)big & 15) == 0;
    for (size_t k = 0; k < 1 << 20; k++)
        zeroed &= big[k] == 0;
    memset(big, 0xee, 1 << 20);
    unsigned char *after = arena_alloc(&a, 24);
    aligned &= ((uintptr_t)after & 15) == 0;
    bool intact = true;
    for (int i = 0; i < 1000; i++) {
        size_t n = (size_t)(i % 97) * 13 + 1;
        for (size_t k = 0; k < n; k++)
            intact &= ptrs[i][k] == (i & 0xff);
    }
    check(aligned, "arena allocations are 16-byte aligned");
    check(zeroed, "arena allocations are zeroed");
    check(intact, "arena allocations do not overlap");

    char *s = arena_strdup(&a, "hello");
    char *t = arena_strndup(&a, "world wide", 5);
    char *u = arena_printf(&a, "%s %s %d", s, t, 42);
    check(strcmp(u, "hello world 42") == 0, "arena_strdup/strndup/printf");

    PtrVec v = { 0 };
    for (intptr_t i = 0; i < 1000; i++)
        vec_push(&a, &v, (void *)i);
    bool vec_ok = v.len == 1000 && v.cap >= 1000;
    for (intptr_t i = 0; i < 1000 && vec_ok; i++)
        vec_ok = v.items[i] == (void *)i;
    /* An exact-size array (len == cap), as the AST's kids are. */
    void *three[3] = { s, t, u };
    PtrVec w = { three, 3, 3 };
    vec_push(&a, &w, big);
    vec_ok &= w.len == 4 && w.items != three && w.items[0] == s && w.items[3] == big;
    check(vec_ok, "vec_push grows by doubling and keeps items");
    arena_free(&a);
    check(a.head == NULL, "arena_free empties the arena");
    arena_free(&a);
}

/* ---------------------------------------------------------------- */

static bool check_diag(const char *text, size_t len, Span sp, const char *want,
                       const char *what)
{
    char *copy = malloc(len + 1);
    memcpy(copy, text, len + 1);
    Source src;
    src_from_string(&src, "t.te", copy, len);
    FILE *out = tmpfile();
    diag_stream = out;
    diag_error(&src, sp, "msg %d", 7);
    diag_stream = NULL;
    char *got = slurp(out);
    fclose(out);
    bool ok = check_text(got, want, what);
    free(got);
    free(copy);
    return ok;
}

/* TEXT is a string literal, which may hold NULs. */
#define CHECK_DIAG(text, ...) check_diag(text, sizeof text - 1, __VA_ARGS__)

static void test_diag(void)
{
    int errors = diag_errors;
    CHECK_DIAG("x = y + z;\n", (Span){ 4, 9 },
               "t.te:1:5: error: msg 7\nx = y + z;\n    ^~~~~\n", "diag: caret and span");
    CHECK_DIAG("ab\ncd ef\n", (Span){ 6, 8 },
               "t.te:2:4: error: msg 7\ncd ef\n   ^~\n", "diag: second line");
    CHECK_DIAG("a\tb = c;\n", (Span){ 6, 7 },
               "t.te:1:7: error: msg 7\na\tb = c;\n \t    ^\n", "diag: tabs kept");
    CHECK_DIAG("x = 1\n\n", (Span){ 7, 7 },
               "t.te:1:6: error: msg 7\nx = 1\n     ^\n", "diag: end of input");
    CHECK_DIAG("", (Span){ 0, 0 }, "t.te:1:1: error: msg 7\n\n^\n", "diag: empty file");
    CHECK_DIAG("ab\ncd", (Span){ 1, 5 }, "t.te:1:2: error: msg 7\nab\n ^\n",
               "diag: a span over two lines gets no underline");
    CHECK_DIAG("x = y;\r\nz\n", (Span){ 4, 5 }, "t.te:1:5: error: msg 7\nx = y;\n    ^\n",
               "diag: CRLF");
    CHECK_DIAG("ab\0cd\n", (Span){ 3, 4 }, "t.te:1:4: error: msg 7\nab\n   ^\n",
               "diag: line cut at an embedded NUL");
    check(diag_errors == errors + 8, "diag_errors counts errors");

    /* A long line: a window around the caret, cut with "...". */
    char line[302];
    memset(line, 'a', 300);
    line[300] = '\n';
    line[301] = '\0';
    char want[600];
    int n = snprintf(want, sizeof want, "t.te:1:251: error: msg 7\n...%.160s\n%114s\n",
                     line, "^");
    TE_ASSERT(n > 0);
    check_diag(line, 301, (Span){ 250, 251 }, want, "diag: long line cut around the caret");
    snprintf(want, sizeof want, "t.te:1:101: error: msg 7\n...%.160s...\n%84s%s\n", line,
             "^", "~~~~");
    check_diag(line, 301, (Span){ 100, 105 }, want, "diag: long line cut on both sides");

    /* Warnings, -q, notes. */
    Source src;
    char text[] = "let a = 1;\n";
    src_from_string(&src, "w.te", text, sizeof text - 1);
    FILE *out = tmpfile();
    diag_stream = out;
    int warnings = diag_warnings;
    diag_warning(&src, (Span){ 4, 5 }, "unused '%s'", "a");
    diag_note(&src, (Span){ 0, 3 }, "here");
    diag_quiet = true;
    diag_warning(&src, (Span){ 4, 5 }, "hidden");
    diag_note(&src, (Span){ 0, 3 }, "hidden too");
    diag_quiet = false;
    diag_stream = NULL;
    char *got = slurp(out);
    fclose(out);
    check_text(got,
               "w.te:1:5: warning: unused 'a'\nlet a = 1;\n    ^\n"
               "w.te:1:1: note: here\nlet a = 1;\n^~~\n",
               "diag: warning and note; -q hides a warning and its note");
    check(diag_warnings == warnings + 2, "diag_warnings counts hidden warnings too");
    free(got);
}

/* ---------------------------------------------------------------- */

static Tensor *new_tensor(Arena *a, const char *name, TensorKind kind, DType t,
                          int rank, const int64_t *shape)
{
    Tensor *x = arena_alloc(a, sizeof *x);
    x->name = name;
    x->kind = kind;
    x->dtype = t;
    x->rank = rank;
    if (rank)
        memcpy(x->shape, shape, (size_t)rank * sizeof *shape);
    return x;
}

static IterVar *new_var(Arena *a, const char *name, int64_t extent, bool reduce, int id)
{
    IterVar *v = arena_alloc(a, sizeof *v);
    v->name = name;
    v->extent = extent;
    v->reduce = reduce;
    v->id = id;
    return v;
}

static void graph_add(Arena *a, Graph *g, Tensor *t)
{
    PtrVec v = { (void **)g->tensors, g->ntensors, g->ntensors };
    vec_push(a, &v, t);
    g->tensors = (Tensor **)v.items;
    t->id = g->ntensors++;
    if (t->kind == TK_INPUT) {
        PtrVec in = { (void **)g->inputs, g->ninputs, g->ninputs };
        vec_push(a, &in, t);
        g->inputs = (Tensor **)in.items;
        g->ninputs++;
    }
}

static void graph_output(Arena *a, Graph *g, Tensor *t)
{
    PtrVec v = { (void **)g->outputs, g->noutputs, g->noutputs };
    vec_push(a, &v, t);
    g->outputs = (Tensor **)v.items;
    g->noutputs++;
    t->is_output = true;
}

/* Names of the test graph's tensors x, w, y, g and variables i, j, k (of
 * y) and i, j (of g). */
typedef struct Names {
    const char *x, *w, *y, *g, *yi, *yj, *k, *gi, *gj;
} Names;

/*     dim M = 3
 *     input x : f32[M, 4];  input w : const f32[4, 2];
 *     y[i, j] = sum(k) x[i, k] * w[k, j];
 *     g[i, j] = gelu(y[i, j] * SCALE) + select(j + 1 < 2, y[i, j + 1], 0.0);
 *     output g, y, x;
 * The select guards the load past y's last column. */
static Graph *build_graph(Arena *a, const Names *n, double scale)
{
    Span sp = { 0, 0 };
    Graph *g = arena_alloc(a, sizeof *g);
    g->dims = arena_alloc(a, sizeof *g->dims);
    g->dims[0] = (Dim){ .name = "M", .value = 3 };
    g->ndims = 1;

    Tensor *x = new_tensor(a, n->x, TK_INPUT, DT_F32, 2, (int64_t[]){ 3, 4 });
    Tensor *w = new_tensor(a, n->w, TK_INPUT, DT_F32, 2, (int64_t[]){ 4, 2 });
    w->is_const = true;
    Tensor *y = new_tensor(a, n->y, TK_STAGE, DT_F32, 2, (int64_t[]){ 3, 2 });
    Tensor *gt = new_tensor(a, n->g, TK_STAGE, DT_F32, 2, (int64_t[]){ 3, 2 });

    IterVar *yi = new_var(a, n->yi, 3, false, 0);
    IterVar *yj = new_var(a, n->yj, 2, false, 1);
    IterVar *k = new_var(a, n->k, 4, true, 2);
    IterVar *gi = new_var(a, n->gi, 3, false, 3);
    IterVar *gj = new_var(a, n->gj, 2, false, 4);
    g->nvars = 5;

    y->vars = arena_alloc(a, 2 * sizeof *y->vars);
    y->vars[0] = yi;
    y->vars[1] = yj;
    Expr *xi[] = { ex_var(a, sp, yi), ex_var(a, sp, k) };
    Expr *wi[] = { ex_var(a, sp, k), ex_var(a, sp, yj) };
    Expr *prod[] = { ex_load(a, sp, x, xi, 2), ex_load(a, sp, w, wi, 2) };
    Expr *mul = ex_op(a, sp, OP_MUL, DT_F32, prod, 2);
    y->body = ex_reduce(a, sp, RED_SUM, &k, 1, mul);

    gt->vars = arena_alloc(a, 2 * sizeof *gt->vars);
    gt->vars[0] = gi;
    gt->vars[1] = gj;
    Expr *yij[] = { ex_var(a, sp, gi), ex_var(a, sp, gj) };
    Expr *scaled[] = { ex_load(a, sp, y, yij, 2), ex_const(a, sp, DT_F32, scale) };
    Expr *gelu_arg = ex_op(a, sp, OP_MUL, DT_F32, scaled, 2);
    Expr *gelu = ex_op(a, sp, OP_GELU, DT_F32, &gelu_arg, 1);
    Expr *j1[] = { ex_var(a, sp, gj), ex_const(a, sp, DT_I32, 1) };
    Expr *jplus1 = ex_op(a, sp, OP_ADD, DT_I32, j1, 2);
    Expr *cmp[] = { jplus1, ex_const(a, sp, DT_I32, 2) };
    Expr *guard = ex_op(a, sp, OP_LT, DT_BOOL, cmp, 2);
    Expr *ynext_idx[] = { ex_var(a, sp, gi), jplus1 };
    Expr *sel[] = { guard, ex_load(a, sp, y, ynext_idx, 2), ex_const(a, sp, DT_F32, 0.0) };
    Expr *select = ex_op(a, sp, OP_SELECT, DT_F32, sel, 3);
    Expr *sum[] = { gelu, select };
    gt->body = ex_op(a, sp, OP_ADD, DT_F32, sum, 2);

    graph_add(a, g, x);
    graph_add(a, g, w);
    graph_add(a, g, y);
    graph_add(a, g, gt);
    graph_output(a, g, gt);
    graph_output(a, g, y);
    graph_output(a, g, x);
    return g;
}

static const Names plain_names = { "x", "w", "y", "g", "i", "j", "k", "i", "j" };
static const Names other_names = { "a", "b", "mm", "act", "r", "c", "red", "p", "q" };

static double gelu_ref(double v)
{
    return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
}

static void test_eval(void)
{
    Arena a = { 0 };
    Graph *g = build_graph(&a, &plain_names, 0.125);
    double x[12], w[8];
    te_random_input(g->inputs[0], 7, x);
    te_random_input(g->inputs[1], 7, w);
    double *inputs[] = { x, w };
    double *outputs[3] = { NULL, NULL, NULL };
    int rc = te_eval(g, inputs, outputs);
    check(rc == 0, "te_eval succeeds on the matmul + gelu graph");
    if (rc != 0) {
        arena_free(&a);
        return;
    }
    double y[3][2];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) {
            double acc = 0.0;
            for (int k = 0; k < 4; k++)
                acc += x[i * 4 + k] * w[k * 2 + j];
            y[i][j] = acc;
        }
    double err_y = 0, err_g = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) {
            double want_g = gelu_ref(y[i][j] * 0.125) + (j + 1 < 2 ? y[i][j + 1] : 0.0);
            err_y = fmax(err_y, fabs(outputs[1][i * 2 + j] - y[i][j]));
            err_g = fmax(err_g, fabs(outputs[0][i * 2 + j] - want_g));
        }
    check(err_y == 0.0, "te_eval: the matmul stage is exact");
    check(err_g < 1e-15, "te_eval: gelu + guarded select (max error %g)", err_g);
    check(memcmp(outputs[2], x, sizeof x) == 0, "te_eval: an input as an output is copied");
    check(outputs[2] != x, "te_eval: the copied input is a new array");
    for (int i = 0; i < 3; i++)
        free(outputs[i]);

    /* Inputs are in [-1, 1), deterministic per seed and name. */
    double again[12], other[12];
    te_random_input(g->inputs[0], 7, again);
    te_random_input(g->inputs[0], 8, other);
    bool in_range = true;
    for (int i = 0; i < 12; i++)
        in_range &= x[i] >= -1.0 && x[i] < 1.0 && x[i] == (double)(float)x[i];
    check(in_range, "te_random_input: f32 values in [-1, 1)");
    check(memcmp(again, x, sizeof x) == 0 && memcmp(other, x, sizeof x) != 0,
          "te_random_input: the same seed gives the same values, another seed others");
    Tensor *t16 = new_tensor(&a, "h", TK_INPUT, DT_F16, 1, (int64_t[]){ 4096 });
    Tensor *ti = new_tensor(&a, "n", TK_INPUT, DT_I32, 1, (int64_t[]){ 4096 });
    Tensor *tb = new_tensor(&a, "b", TK_INPUT, DT_BOOL, 1, (int64_t[]){ 4096 });
    double *vals = malloc(4096 * sizeof *vals);
    te_random_input(t16, 1, vals);
    bool ok16 = true;
    for (int i = 0; i < 4096; i++)
        ok16 &= vals[i] >= -1.0 && vals[i] < 1.0 && dtype_round(DT_F16, vals[i]) == vals[i];
    te_random_input(ti, 1, vals);
    bool oki = true, lo = false, hi = false;
    for (int i = 0; i < 4096; i++) {
        oki &= vals[i] >= -100 && vals[i] < 100 && vals[i] == trunc(vals[i]);
        lo |= vals[i] == -100;
        hi |= vals[i] == 99;
    }
    te_random_input(tb, 1, vals);
    bool okb = true;
    int ones = 0;
    for (int i = 0; i < 4096; i++) {
        okb &= vals[i] == 0.0 || vals[i] == 1.0;
        ones += vals[i] == 1.0;
    }
    free(vals);
    check(ok16, "te_random_input: f16 values are f16 and in [-1, 1)");
    check(oki && lo && hi, "te_random_input: i32 values cover [-100, 100)");
    check(okb && ones > 1500 && ones < 2600, "te_random_input: bool values are 0 or 1");
    arena_free(&a);
}

/* a[i] = x[i] * 2; b[i] = a[i] + 1; c[i] = b[i] * b[i]; output c, c:
 * intermediates are freed early (ASan would see a use after free) and a
 * repeated output gets its own copy. */
static void test_eval_chain(void)
{
    Arena a = { 0 };
    Span sp = { 0, 0 };
    Graph g = { 0 };
    Tensor *x = new_tensor(&a, "x", TK_INPUT, DT_F64, 1, (int64_t[]){ 5 });
    graph_add(&a, &g, x);
    Tensor *prev = x;
    for (int s = 0; s < 3; s++) {
        Tensor *t = new_tensor(&a, s == 0 ? "a" : s == 1 ? "b" : "c", TK_STAGE, DT_F64, 1,
                               (int64_t[]){ 5 });
        IterVar *i = new_var(&a, "i", 5, false, g.nvars++);
        t->vars = arena_alloc(&a, sizeof *t->vars);
        t->vars[0] = i;
        Expr *idx = ex_var(&a, sp, i);
        Expr *load = ex_load(&a, sp, prev, &idx, 1);
        Expr *rhs = s == 2 ? ex_load(&a, sp, prev, &idx, 1) : ex_const(&a, sp, DT_F64, s ? 1 : 2);
        Expr *args[] = { load, rhs };
        t->body = ex_op(&a, sp, s == 1 ? OP_ADD : OP_MUL, DT_F64, args, 2);
        graph_add(&a, &g, t);
        prev = t;
    }
    graph_output(&a, &g, prev);
    graph_output(&a, &g, prev);
    double xv[5] = { -2, -1, 0, 1, 2.5 };
    double *inputs[] = { xv };
    double *outputs[2] = { NULL, NULL };
    bool ok = te_eval(&g, inputs, outputs) == 0 && outputs[0] != outputs[1];
    for (int i = 0; i < 5 && ok; i++) {
        double b = xv[i] * 2 + 1;
        ok = outputs[0][i] == b * b && outputs[1][i] == b * b;
    }
    check(ok, "te_eval: a chain of stages, intermediates freed, a repeated output");
    free(outputs[0]);
    free(outputs[1]);
    arena_free(&a);
}

/* Integer division, laziness, NaN-propagating min/max, reductions. */
static void test_eval_ops(void)
{
    Arena a = { 0 };
    Span sp = { 0, 0 };
    Graph g = { 0 };
    /* s[i] = OP(i - 3, 2) over i in 0..7, one stage per case. */
    struct {
        Op op;
        DType t;
        double rhs;
        double want[7];
    } cases[] = {
        { OP_DIV, DT_I32, 2, { -1, -1, 0, 0, 0, 1, 1 } },
        { OP_MOD, DT_I32, 2, { -1, 0, -1, 0, 1, 0, 1 } },
        { OP_DIV, DT_I32, 0, { 0, 0, 0, 0, 0, 0, 0 } },
        { OP_MOD, DT_I32, 0, { 0, 0, 0, 0, 0, 0, 0 } },
        /* wraps modulo 2^32, not saturating when stored */
        { OP_MUL, DT_I32, 1e9,
          { 1294967296, -2000000000, -1e9, 0, 1e9, 2e9, 3e9 - 4294967296.0 } },
        { OP_DIV, DT_F64, 2, { -1.5, -1, -0.5, 0, 0.5, 1, 1.5 } },
        { OP_MAX, DT_F64, NAN, { NAN, NAN, NAN, NAN, NAN, NAN, NAN } },
        { OP_MIN, DT_F64, 0, { -3, -2, -1, 0, 0, 0, 0 } },
        { OP_LE, DT_BOOL, 0, { 1, 1, 1, 1, 0, 0, 0 } },
    };
    int ncases = (int)(sizeof cases / sizeof cases[0]);
    Tensor **stages = arena_alloc(&a, (size_t)ncases * sizeof *stages);
    for (int c = 0; c < ncases; c++) {
        Tensor *s = new_tensor(&a, "s", TK_STAGE, cases[c].t, 1, (int64_t[]){ 7 });
        IterVar *i = new_var(&a, "i", 7, false, g.nvars++);
        s->vars = arena_alloc(&a, sizeof *s->vars);
        s->vars[0] = i;
        Expr *sub[] = { ex_var(&a, sp, i), ex_const(&a, sp, DT_I32, 3) };
        DType operand = cases[c].t == DT_BOOL ? DT_I32 : cases[c].t;
        Expr *lhs = ex_op(&a, sp, OP_SUB, DT_I32, sub, 2);
        if (operand != DT_I32)
            lhs = ex_op(&a, sp, OP_CAST, operand, &lhs, 1);
        Expr *args[] = { lhs, ex_const(&a, sp, operand, cases[c].rhs) };
        s->body = ex_op(&a, sp, cases[c].op, cases[c].t, args, 2);
        graph_add(&a, &g, s);
        graph_output(&a, &g, s);
        stages[c] = s;
    }
    /* r = prod(k in 1..5) k; m = max(k in -2..1, l in 0..2) k * l. */
    IterVar *k = new_var(&a, "k", 4, true, g.nvars++);
    k->lo = 1;
    Tensor *r = new_tensor(&a, "r", TK_STAGE, DT_I32, 0, NULL);
    r->body = ex_reduce(&a, sp, RED_PROD, &k, 1, ex_var(&a, sp, k));
    graph_add(&a, &g, r);
    graph_output(&a, &g, r);
    IterVar *mk[] = { new_var(&a, "k", 3, true, g.nvars), new_var(&a, "l", 2, true, g.nvars + 1) };
    g.nvars += 2;
    mk[0]->lo = -2;
    Expr *kl[] = { ex_var(&a, sp, mk[0]), ex_var(&a, sp, mk[1]) };
    Tensor *m = new_tensor(&a, "m", TK_STAGE, DT_I32, 0, NULL);
    m->body = ex_reduce(&a, sp, RED_MAX, mk, 2, ex_op(&a, sp, OP_MUL, DT_I32, kl, 2));
    graph_add(&a, &g, m);
    graph_output(&a, &g, m);
    /* e[i] = i < 6 && s0[i + 1] > -5 and f[i] = i >= 6 || s0[i + 1] > -5:
     * the right operand would load s0[7] if it were evaluated at i = 6. */
    for (int c = 0; c < 2; c++) {
        Tensor *e = new_tensor(&a, c ? "f" : "e", TK_STAGE, DT_BOOL, 1, (int64_t[]){ 7 });
        IterVar *i = new_var(&a, "i", 7, false, g.nvars++);
        e->vars = arena_alloc(&a, sizeof *e->vars);
        e->vars[0] = i;
        Expr *vi = ex_var(&a, sp, i);
        Expr *bound[] = { vi, ex_const(&a, sp, DT_I32, 6) };
        Expr *in = ex_op(&a, sp, c ? OP_GE : OP_LT, DT_BOOL, bound, 2);
        Expr *next[] = { vi, ex_const(&a, sp, DT_I32, 1) };
        Expr *idx = ex_op(&a, sp, OP_ADD, DT_I32, next, 2);
        Expr *cmp[] = { ex_load(&a, sp, stages[0], &idx, 1), ex_const(&a, sp, DT_I32, -5) };
        Expr *rhs = ex_op(&a, sp, OP_GT, DT_BOOL, cmp, 2);
        Expr *both[] = { in, rhs };
        e->body = ex_op(&a, sp, c ? OP_OR : OP_AND, DT_BOOL, both, 2);
        graph_add(&a, &g, e);
        graph_output(&a, &g, e);
    }

    double **outs = calloc((size_t)g.noutputs, sizeof *outs);
    int rc = te_eval(&g, NULL, outs);
    check(rc == 0, "te_eval succeeds on the operator cases");
    if (rc == 0) {
        for (int c = 0; c < ncases; c++) {
            bool ok = true;
            for (int i = 0; i < 7; i++)
                ok &= same(outs[c][i], cases[c].want[i]) ||
                      (cases[c].want[i] == 0 && outs[c][i] == 0);
            check(ok, "te_eval: %s: (i - 3) %s %g", dtype_name(cases[c].t),
                  op_text(cases[c].op), cases[c].rhs);
        }
        check(outs[ncases][0] == 24.0, "te_eval: prod reduction from lo = 1");
        check(outs[ncases + 1][0] == 0.0, "te_eval: max over two axes (got %g)",
              outs[ncases + 1][0]);
        bool lazy = true;
        for (int i = 0; i < 7; i++)
            lazy &= outs[ncases + 2][i] == (i < 6) && outs[ncases + 3][i] == 1.0;
        check(lazy, "te_eval: && and || do not evaluate their right operand needlessly");
    }
    for (int i = 0; i < g.noutputs; i++)
        free(outs[i]);
    free(outs);
    arena_free(&a);
}

static void test_eval_oob(void)
{
    Arena a = { 0 };
    char text[] = "h[i, j] = x[i, j + 1];\n";
    Source src;
    src_from_string(&src, "test.te", text, sizeof text - 1);
    Graph g = { .src = &src };
    Tensor *x = new_tensor(&a, "x", TK_INPUT, DT_F32, 2, (int64_t[]){ 3, 4 });
    Tensor *h = new_tensor(&a, "h", TK_STAGE, DT_F32, 2, (int64_t[]){ 3, 4 });
    IterVar *i = new_var(&a, "i", 3, false, 0);
    IterVar *j = new_var(&a, "j", 4, false, 1);
    g.nvars = 2;
    h->vars = arena_alloc(&a, 2 * sizeof *h->vars);
    h->vars[0] = i;
    h->vars[1] = j;
    Expr *jp1[] = { ex_var(&a, (Span){ 15, 16 }, j), ex_const(&a, (Span){ 19, 20 }, DT_I32, 1) };
    Expr *idx[] = { ex_var(&a, (Span){ 12, 13 }, i),
                    ex_op(&a, (Span){ 15, 20 }, OP_ADD, DT_I32, jp1, 2) };
    h->body = ex_load(&a, (Span){ 10, 21 }, x, idx, 2);
    graph_add(&a, &g, x);
    graph_add(&a, &g, h);
    graph_output(&a, &g, h);

    double xv[12];
    te_random_input(x, 1, xv);
    double *inputs[] = { xv };
    double *outputs[1] = { NULL };
    FILE *out = tmpfile();
    diag_stream = out;
    int errors = diag_errors;
    int rc = te_eval(&g, inputs, outputs);
    diag_stream = NULL;
    char *got = slurp(out);
    fclose(out);
    check(rc == -1 && outputs[0] == NULL && diag_errors == errors + 1,
          "te_eval: an out-of-bounds load fails once");
    check_text(got,
               "test.te:1:11: error: index 4 of 'x' is out of bounds [0, 4) at dimension 1\n"
               "h[i, j] = x[i, j + 1];\n"
               "          ^~~~~~~~~~~\n",
               "te_eval: the out-of-bounds diagnostic");
    free(got);
    arena_free(&a);
}

/* ---------------------------------------------------------------- */

static char *print_to_string(const Expr *e, const Graph *g)
{
    FILE *out = tmpfile();
    if (e)
        te_print_expr(out, e);
    else
        te_print_graph(out, g);
    char *s = slurp(out);
    fclose(out);
    return s;
}

static void check_expr(const Expr *e, const char *want)
{
    char *got = print_to_string(e, NULL);
    check(strcmp(got, want) == 0, "print: %s", want);
    if (strcmp(got, want) != 0)
        printf("# got: %s\n", got);
    free(got);
}

static void test_print(void)
{
    Arena a = { 0 };
    Graph *g = build_graph(&a, &plain_names, 0.125);
    char *got = print_to_string(NULL, g);
    check_text(got,
               "dim M = 3\n"
               "input x : f32[3, 4]\n"
               "input w : const f32[4, 2]\n"
               "stage y : f32[3, 2]  y[i, j] = sum(k in 0..4) x[i, k] * w[k, j]\n"
               "stage g : f32[3, 2]  g[i, j] = gelu(y[i, j] * 0.125) + "
               "select(j + 1 < 2, y[i, j + 1], 0.0)\n"
               "output g\n"
               "output y\n"
               "output x\n",
               "te_print_graph");
    free(got);

    const char *canon = te_canonical(&a, g);
    check_text(canon,
               "input t0 : f32[3, 4]\n"
               "input t1 : const f32[4, 2]\n"
               "stage t2 : f32[3, 2]  t2[v0, v1] = sum(v2 in 0..4) t0[v0, v2] * t1[v2, v1]\n"
               "stage t3 : f32[3, 2]  t3[v0, v1] = gelu(t2[v0, v1] * 0.125:f32) + "
               "select(v1 + 1:i32 < 2:i32, t2[v0, v1 + 1:i32], 0.0:f32)\n"
               "output t3\n"
               "output t2\n"
               "output t0\n",
               "te_canonical");

    char h1[33], h2[33], h3[33];
    te_hash(g, h1);
    te_hash(build_graph(&a, &other_names, 0.125), h2);
    te_hash(build_graph(&a, &plain_names, 0.25), h3);
    bool hex = strlen(h1) == 32 && strspn(h1, "0123456789abcdef") == 32;
    check(hex, "te_hash: 32 lowercase hex digits (%s)", h1);
    check(strcmp(h1, h2) == 0, "te_hash: renaming keeps the hash");
    check(strcmp(h1, h3) != 0, "te_hash: changing a constant changes the hash");

    /* Precedence and constants. */
    Span sp = { 0, 0 };
    IterVar *i = new_var(&a, "i", 4, false, 0), *j = new_var(&a, "j", 4, false, 1);
    IterVar *k = new_var(&a, "k", 8, true, 2);
    k->lo = 2;
    Expr *vi = ex_var(&a, sp, i), *vj = ex_var(&a, sp, j), *vk = ex_var(&a, sp, k);
#define BIN(op, l, r) ex_op(&a, sp, op, DT_I32, (Expr *[]){ l, r }, 2)
#define UN(op, x) ex_op(&a, sp, op, DT_I32, (Expr *[]){ x }, 1)
    check_expr(BIN(OP_MUL, BIN(OP_ADD, vi, vj), vk), "(i + j) * k");
    check_expr(BIN(OP_ADD, vi, BIN(OP_MUL, vj, vk)), "i + j * k");
    check_expr(BIN(OP_SUB, BIN(OP_SUB, vi, vj), vk), "i - j - k");
    check_expr(BIN(OP_SUB, vi, BIN(OP_SUB, vj, vk)), "i - (j - k)");
    check_expr(BIN(OP_OR, BIN(OP_AND, vi, vj), BIN(OP_LT, vi, vk)), "i && j || i < k");
    check_expr(BIN(OP_AND, BIN(OP_OR, vi, vj), vk), "(i || j) && k");
    check_expr(BIN(OP_EQ, BIN(OP_LT, vi, vj), vk), "i < j == k");
    check_expr(BIN(OP_LT, BIN(OP_LT, vi, vj), vk), "(i < j) < k");
    check_expr(UN(OP_NEG, UN(OP_NEG, vi)), "-(-i)");
    check_expr(UN(OP_NEG, BIN(OP_ADD, vi, vj)), "-(i + j)");
    check_expr(UN(OP_NOT, UN(OP_NOT, vi)), "!!i");
    check_expr(BIN(OP_SUB, vi, UN(OP_NEG, vj)), "i - -j");
    check_expr(BIN(OP_MOD, vi, ex_const(&a, sp, DT_I32, -3)), "i % -3");
    check_expr(UN(OP_NEG, ex_const(&a, sp, DT_F32, -1.5)), "-(-1.5)");
    Expr *red = ex_reduce(&a, sp, RED_MAX, (IterVar *[]){ k, i }, 2, BIN(OP_MUL, vk, vi));
    check_expr(red, "max(k in 2..10, i in 0..4) k * i");
    check_expr(BIN(OP_MUL, ex_const(&a, sp, DT_F32, 2), red),
               "2.0 * (max(k in 2..10, i in 0..4) k * i)");
    check_expr(ex_op(&a, sp, OP_EXP, DT_F32, (Expr *[]){ red }, 1),
               "exp(max(k in 2..10, i in 0..4) k * i)");
    check_expr(ex_op(&a, sp, OP_CAST, DT_F64, &vi, 1), "f64(i)");
    check_expr(ex_op(&a, sp, OP_POW, DT_F64, (Expr *[]){ vi, vj }, 2), "pow(i, j)");
    check_expr(ex_const(&a, sp, DT_F32, 1e-5), "1e-05");
    check_expr(ex_const(&a, sp, DT_F32, 1.0), "1.0");
    check_expr(ex_const(&a, sp, DT_F64, 0.1), "0.1");
    check_expr(ex_const(&a, sp, DT_F64, 1.0 / 3.0), "0.3333333333333333");
    check_expr(ex_const(&a, sp, DT_F32, (float)0.1), "0.100000001");
    check_expr(ex_const(&a, sp, DT_F64, 1e20), "1e+20");
    check_expr(ex_const(&a, sp, DT_NONE, 1e20), "1e+20");
    check_expr(ex_const(&a, sp, DT_NONE, 42), "42");
    check_expr(ex_const(&a, sp, DT_BOOL, 1), "1");
    check_expr(ex_const(&a, sp, DT_F32, -INFINITY), "-inf");
    check_expr(ex_const(&a, sp, DT_F32, NAN), "nan");
#undef BIN
#undef UN
    arena_free(&a);
}

/* ---------------------------------------------------------------- */

static char *tmp_dir;

static void test_npy(void)
{
    Arena a = { 0 };
    DType dtypes[] = { DT_F32, DT_F64, DT_I32, DT_F16, DT_BOOL, DT_BF16 };
    struct {
        int rank;
        int64_t shape[2];
        const char *text;
    } shapes[] = { { 2, { 3, 4 }, "(3, 4)" }, { 1, { 5, 0 }, "(5,)" }, { 0, { 0, 0 }, "()" } };
    char *path = arena_printf(&a, "%s/t.npy", tmp_dir);
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
        for (size_t s = 0; s < 3; s++) {
            Tensor *t = new_tensor(&a, "x", TK_INPUT, dtypes[d], shapes[s].rank,
                                   shapes[s].shape);
            double data[12], back[12];
            te_random_input(t, 3, data);
            int64_t n = tensor_elems(t);
            bool ok = npy_write(path, t, data) == 0;
            /* The header: its dict, its padding, data on a 64-byte line. */
            FILE *f = fopen(path, "rb");
            unsigned char head[128];
            size_t got = fread(head, 1, sizeof head, f);
            fseek(f, 0, SEEK_END);
            long size = ftell(f);
            fclose(f);
            int hlen = head[8] | head[9] << 8;
            char *dict = arena_printf(&a, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                                      dtype_npy(dtypes[d]), shapes[s].text);
            int elem = dtypes[d] == DT_BF16 ? 4 : dtype_bytes(dtypes[d]);
            ok = ok && got >= 64 && memcmp(head, "\x93NUMPY\x01\x00", 8) == 0 &&
                 (10 + hlen) % 64 == 0 && memcmp(head + 10, dict, strlen(dict)) == 0 &&
                 head[10 + hlen - 1] == '\n' && head[10 + strlen(dict)] == ' ' &&
                 size == 10 + hlen + n * elem;
            ok = ok && npy_read(path, t, back) == 0 && memcmp(data, back, (size_t)n * 8) == 0;
            check(ok, "npy round trip %s%s", dtype_name(dtypes[d]), shapes[s].text);
        }
    }

    /* Values are converted to the tensor's dtype on the way out. */
    Tensor *t = new_tensor(&a, "x", TK_INPUT, DT_I32, 1, (int64_t[]){ 4 });
    double in[4] = { 2.7, -2.7, 1e10, NAN }, back[4];
    npy_write(path, t, in);
    t->dtype = DT_F64; /* any numeric file converts */
    check(npy_read(path, t, back) == 0 && back[0] == 2 && back[1] == -2 &&
              back[2] == 2147483647.0 && back[3] == 0,
          "npy: i32 output truncated and saturated, read back into f64");

    /* A shape mismatch names both shapes. */
    Tensor *x34 = new_tensor(&a, "x", TK_INPUT, DT_F32, 2, (int64_t[]){ 3, 4 });
    Tensor *x43 = new_tensor(&a, "x", TK_INPUT, DT_F32, 2, (int64_t[]){ 4, 3 });
    double data[12] = { 0 };
    npy_write(path, x34, data);
    fflush(stderr);
    int saved = dup(2);
    FILE *err = tmpfile();
    dup2(fileno(err), 2);
    int rc = npy_read(path, x43, data);
    /* And a file that is not a .npy at all. */
    char *bogus = arena_printf(&a, "%s/bogus.npy", tmp_dir);
    FILE *bogus_file = fopen(bogus, "wb");
    fputs("hello", bogus_file);
    fclose(bogus_file);
    int rc2 = npy_read(bogus, x43, data);
    int rc3 = npy_read(arena_printf(&a, "%s/missing.npy", tmp_dir), x43, data);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *msg = slurp(err);
    fclose(err);
    char *want = arena_printf(&a,
                              "texc: %s: shape (3, 4) does not match x's shape (4, 3)\n"
                              "texc: %s: not a .npy file\n"
                              "texc: %s/missing.npy: No such file or directory\n",
                              path, bogus, tmp_dir);
    check(rc == -1 && rc2 == -1 && rc3 == -1, "npy_read fails on bad files");
    check_text(msg, want, "npy_read: error messages");
    free(msg);
    remove(bogus);

    /* A version 2.0 file with a hand-written header and i2 data. */
    FILE *f = fopen(path, "wb");
    const char *hdr = "{\"shape\": (2,3), \"fortran_order\": False, \"descr\": \"<i2\"}\n";
    unsigned char pre[12] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0 };
    pre[8] = (unsigned char)strlen(hdr);
    fwrite(pre, 1, 12, f);
    fputs(hdr, f);
    short vals[6] = { 1, -2, 300, -32768, 32767, 0 };
    for (int i = 0; i < 6; i++) {
        fputc(vals[i] & 0xff, f);
        fputc((vals[i] >> 8) & 0xff, f);
    }
    fclose(f);
    Tensor *t23 = new_tensor(&a, "x", TK_INPUT, DT_F32, 2, (int64_t[]){ 2, 3 });
    double got[6];
    bool ok = npy_read(path, t23, got) == 0;
    for (int i = 0; i < 6 && ok; i++)
        ok = got[i] == vals[i];
    check(ok, "npy_read: version 2.0, keys in another order, <i2 data");

    check(npy_write(arena_printf(&a, "%s/no/such/dir.npy", tmp_dir), t23, got) == -1,
          "npy_write fails on an unwritable path");
    remove(path);
    arena_free(&a);
}

static void test_src_load(void)
{
    Arena a = { 0 };
    char *path = arena_printf(&a, "%s/src.te", tmp_dir);
    FILE *f = fopen(path, "wb");
    fwrite("ab\0cd\n", 1, 6, f);
    fclose(f);
    Source src;
    bool ok = src_load(&a, &src, path);
    check(ok && src.len == 6 && memcmp(src.text, "ab\0cd\n", 7) == 0 &&
              strcmp(src.path, path) == 0,
          "src_load keeps embedded NULs and NUL-terminates");
    remove(path);

    fflush(stderr);
    int saved = dup(2);
    FILE *err = tmpfile();
    dup2(fileno(err), 2);
    ok = src_load(&a, &src, path);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *msg = slurp(err);
    fclose(err);
    check(!ok, "src_load fails on a missing file");
    check_text(msg, arena_printf(&a, "texc: cannot read %s: No such file or directory\n", path),
               "src_load: error message");
    free(msg);
    arena_free(&a);
}

/* i32 arithmetic wraps modulo 2^32 (te_i32_arith, which the evaluator and
 * the constant folder share): each case at the boundaries, and operands
 * out of i32's range taken modulo 2^32 first. */
static void test_i32_arith(void)
{
    const double max = 2147483647.0, min = -2147483648.0;
    struct {
        Op op;
        double a, b, want;
    } cases[] = {
        { OP_ADD, max, 1, min },
        { OP_ADD, min, -1, max },
        { OP_ADD, max, max, -2 },
        { OP_SUB, min, 1, max },
        { OP_SUB, 0, min, min },
        { OP_MUL, min, -1, min },
        { OP_MUL, 65536, 65536, 0 },
        { OP_MUL, 46341, 46341, -2147479015 },
        { OP_MUL, 1000000000, 1000000000, -1486618624 },
        { OP_NEG, min, 0, min },
        { OP_NEG, max, 0, -max },
        { OP_ABS, min, 0, min },
        { OP_ABS, -max, 0, max },
        { OP_DIV, min, -1, min },
        { OP_DIV, 7, 0, 0 },
        { OP_DIV, -7, 2, -3 },
        { OP_MOD, min, -1, 0 },
        { OP_MOD, 7, 0, 0 },
        { OP_MOD, -7, 2, -1 },
        { OP_ADD, 4294967296.0 + 5, 0, 5 },  /* an operand beyond i32 */
        { OP_ADD, -2147483649.0, 0, max },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t got = te_i32_arith(cases[i].op, cases[i].a, cases[i].b);
        check(got == cases[i].want, "te_i32_arith: %.0f %s %.0f = %.0f (got %d)", cases[i].a,
              op_text(cases[i].op), cases[i].b, cases[i].want, got);
    }
    check(te_i32_wrap(NAN) == 0 && te_i32_wrap(INFINITY) == 0 && te_i32_wrap(-2.5) == -2 &&
              te_i32_wrap(1e300) == te_i32_wrap(fmod(1e300, 4294967296.0)),
          "te_i32_wrap: NaN and infinities are 0, fractions truncate, huge values wrap");
    check(te_i32_wraps(OP_MUL) && !te_i32_wraps(OP_MIN) && !te_i32_wraps(OP_CAST),
          "te_i32_wraps: the operators that wrap, not min or a cast");
}

/* Size expressions (lang/size.c): the normal form, intervals, evaluation
 * and text, over two dims M in 1..4096 and N in 2..8. */
static const SizeExpr *sz_parse(Arena *a, const char **p);

/* A tiny prefix reader for the tests: "(+ M 2)", "(min M N)", numbers. */
static const SizeExpr *sz_parse(Arena *a, const char **p)
{
    while (**p == ' ')
        ++*p;
    if (**p == '(') {
        ++*p;
        static const char *const names[] = { "+", "-", "*", "/", "%", "min", "max" };
        static const SizeKind kinds[] = { SZ_ADD, SZ_SUB, SZ_MUL, SZ_DIV, SZ_MOD, SZ_MIN, SZ_MAX };
        int k = 0;
        while (strncmp(*p, names[k], strlen(names[k])) != 0)
            k++;
        *p += strlen(names[k]);
        const SizeExpr *x = sz_parse(a, p), *y = sz_parse(a, p);
        while (**p == ' ')
            ++*p;
        ++*p; /* ')' */
        return te_size_op(a, kinds[k], x, y);
    }
    if (**p == 'M' || **p == 'N') {
        const char *name = **p == 'M' ? "M" : "N";
        ++*p;
        return te_size_dim(a, name[0] == 'M' ? 0 : 1, name);
    }
    char *end;
    long long v = strtoll(*p, &end, 10);
    *p = end;
    return te_size_num(a, v);
}

static const Dim size_dims[2] = {
    { .name = "M", .runtime = true, .declared = true, .lo = 1, .hi = 4096, .hint = 4096 },
    { .name = "N", .runtime = true, .declared = true, .lo = 2, .hi = 8, .hint = 8 },
};

/* PREFIX simplifies to TEXT, whose range is LO..HI (exact or not). */
static void expect_size(const char *prefix, const char *text, int64_t lo, int64_t hi, bool exact)
{
    Arena a = { 0 };
    const char *p = prefix;
    const SizeExpr *e = te_size_simplify(&a, sz_parse(&a, &p));
    const char *got = te_size_str(&a, e);
    int64_t glo = 0, ghi = 0;
    bool ranged = te_size_range(e, size_dims, &glo, &ghi);
    check(strcmp(got, text) == 0 && ranged && glo == lo && ghi == hi && te_size_exact(e) == exact,
          "size %s is %s in %lld..%lld%s (got %s in %lld..%lld%s)", prefix, text, (long long)lo,
          (long long)hi, exact ? ", exact" : "", got, (long long)glo, (long long)ghi,
          te_size_exact(e) ? ", exact" : "");
    arena_free(&a);
}

static void test_size_expr(void)
{
    expect_size("(- (+ M 2) (+ M 2))", "0", 0, 0, true);
    expect_size("(- (+ M 2) M)", "2", 2, 2, true);
    expect_size("(+ (* M 1) 0)", "M", 1, 4096, true);
    expect_size("(+ 2 M)", "M + 2", 3, 4098, true);
    expect_size("(- (* 2 M) (+ M M))", "0", 0, 0, true);
    expect_size("(- 3 M)", "3 - M", -4093, 2, true);
    expect_size("(- 0 M)", "-M", -4096, -1, true);
    expect_size("(- (+ N M) 1)", "M + N - 1", 2, 4103, true);
    expect_size("(* (+ M 1) N)", "M * N + N", 4, 32776, false);
    expect_size("(* (+ M 1) (- M 1))", "M * M - 1", 0, 16777215, false);
    expect_size("(/ (* 4 M) 2)", "2 * M", 2, 8192, true);
    expect_size("(% (* 4 M) 2)", "0", 0, 0, true);
    expect_size("(/ (+ M 3) 4)", "(M + 3) / 4", 1, 1024, false);
    expect_size("(- (/ (+ M 3) 4) (/ (+ 3 M) 4))", "0", 0, 0, true);
    expect_size("(min (+ M 2) (+ M 1))", "M + 1", 2, 4097, true);
    expect_size("(max N M)", "max(M, N)", 2, 4096, false);
    expect_size("(- (max N M) (max M N))", "0", 0, 0, true);
    expect_size("(+ 7 (* 3 5))", "22", 22, 22, true);
    expect_size("(% M 7)", "M % 7", 0, 6, false);
    /* a flat view's index over a run-time dim: never negative, so / is floor */
    expect_size("(/ (- (* 8 M) 1) 8)", "M - 1", 0, 4095, true);
    expect_size("(% (- (* 8 M) 1) 8)", "7", 7, 7, true);
    expect_size("(/ (+ (* 8 (* M N)) 3) 8)", "M * N", 2, 32768, true);
    expect_size("(/ (- (* 8 M) 9) 8)", "(8 * M - 9) / 8", 0, 4094, false); /* -1 at M = 1 */
    expect_size("(/ (- (* 8 M) (+ (* 8 N) 1)) 8)", "(8 * M - 8 * N - 1) / 8", -7, 4093, false);

    Arena a = { 0 };
    const char *p = "(- (* M N) (/ M 3))";
    const SizeExpr *e = sz_parse(&a, &p);
    int64_t at[2] = { 100, 5 }, v = 0;
    check(te_size_eval(e, at, &v) && v == 100 * 5 - 100 / 3, "size M * N - M / 3 at M=100, N=5 is 467");
    int64_t zero[2] = { 0, 5 };
    p = "(/ N M)";
    check(!te_size_eval(sz_parse(&a, &p), zero, &v), "size N / M at M = 0 does not evaluate");
    p = "(+ M N)";
    const SizeExpr *mn = te_size_simplify(&a, sz_parse(&a, &p));
    p = "(+ N M)";
    const SizeExpr *nm = te_size_simplify(&a, sz_parse(&a, &p));
    check(te_size_same(mn, nm) && strcmp(te_size_canonical(&a, mn), "d0 + d1") == 0,
          "M + N and N + M have one normal form, canonically d0 + d1");
    check(te_size_uses(mn, 1) && !te_size_uses(te_size_num(&a, 3), 0), "te_size_uses");
    p = "(* M 4611686018427387904)";
    const SizeExpr *big = sz_parse(&a, &p);
    int64_t lo, hi;
    check(!te_size_range(big, size_dims, &lo, &hi), "a size that may overflow has no range");
    p = "(* (* M 4611686018427387904) 4)";
    big = sz_parse(&a, &p);
    check(te_size_simplify(&a, big) == big, "a coefficient that would overflow leaves the size as it is");
    arena_free(&a);
}

int main(void)
{
    char templ[] = "/tmp/unit_lang.XXXXXX";
    tmp_dir = mkdtemp(templ);
    if (!tmp_dir) {
        perror("mkdtemp");
        return 1;
    }
    test_dtypes();
    test_narrow_float_patterns();
    test_arena();
    test_diag();
    test_eval();
    test_eval_chain();
    test_eval_ops();
    test_i32_arith();
    test_eval_oob();
    test_print();
    test_npy();
    test_src_load();
    test_size_expr();
    rmdir(tmp_dir);
    return tap_done();
}
