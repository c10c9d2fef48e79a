/* tests/unit_vmath.c — the vector math text of codegen/vmath.c, compiled
 * the way generated kernels are and checked against double-precision libm.
 *
 * This file is two programs.  Built normally (make check) it is the harness:
 * it writes a header holding the kernels' prelude (te_v16f, te_splat) and
 * every piece of cg_vmath_helpers in order, compiles this same file against
 * it with -DUNIT_VMATH_DRIVER using $CC -std=gnu11 -O3 -march=native (the
 * flags texc compiles kernels with; the text alone is also compiled with
 * -std=c11 -pedantic -Werror, and so is each function with only the pieces
 * it uses, as cg_print_helpers picks them), runs the result and passes its
 * TAP lines on.  The driver sweeps the float bit patterns with a fixed odd stride
 * (TEXC_VMATH_STRIDE, default 97; 1 sweeps all 2^32), every pattern of the
 * ranges around each region boundary and the subnormal results, and a list of
 * special values, and fails a function whose result is ever more than
 * its bound (1 ulp; 2 for gelu) from the correctly rounded one (the double result rounded to
 * float), returns a non-NaN for NaN or NaN for a number, or gets the sign of
 * a zero wrong.  Extra flags for the driver's compilation: TEXC_VMATH_CFLAGS;
 * TEXC_VMATH_ONLY=NAME sweeps only the functions whose name contains NAME
 * (with TEXC_VMATH_STRIDE=1, an exhaustive check of one function).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L   /* mkdtemp, popen, clock_gettime */
#endif
#ifndef UNIT_VMATH_DRIVER

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "codegen/vmath.c"

/* the kernels' prelude before the vector math (c.c's), as pieces too */
static const CgHelper prelude[] = {
    { "te_v16f",
      "#include <math.h>\n"
      "#include <string.h>\n"
      "typedef float te_v16f __attribute__((vector_size(64)));\n" },
    { "te_splat", "static inline te_v16f te_splat(float x) { return (te_v16f){ x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x }; }\n" },
};
#define NPRELUDE (int)(sizeof prelude / sizeof prelude[0])

static const CgHelper *piece(int i)
{
    return i < NPRELUDE ? &prelude[i] : &cg_vmath_helpers[i - NPRELUDE];
}

static int ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Does TEXT use one of the space-separated NAMES, as a whole identifier? */
static int uses_any(const char *text, const char *names)
{
    char name[64];
    for (const char *c = names; *c; c += strspn(c, " ")) {
        size_t n = strcspn(c, " ");
        if (n >= sizeof name) abort();
        memcpy(name, c, n);
        name[n] = 0;
        c += n;
        for (const char *u = text; (u = strstr(u, name)); u++)
            if ((u == text || !ident_char(u[-1])) && !ident_char(u[n]))
                return 1;
    }
    return 0;
}

/* Writes to PATH the prelude's and the vector math's pieces in order: all
 * of them (CODE NULL), or those CODE needs, picked as cg_print_helpers
 * picks them (what CODE or a piece picked uses), then CODE. */
static int write_pieces(const char *path, const char *code)
{
    int n = NPRELUDE + cg_vmath_nhelpers, chosen[NPRELUDE + 64] = { 0 };
    if (n > (int)(sizeof chosen / sizeof chosen[0])) abort();
    for (int grew = 1; grew;) {
        grew = 0;
        for (int i = 0; i < n; i++) {
            int used = !code || uses_any(code, piece(i)->names);
            for (int j = 0; j < n && !used; j++)
                used = chosen[j] && uses_any(piece(j)->text, piece(i)->names);
            if (used && !chosen[i]) chosen[i] = grew = 1;
        }
    }
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int i = 0; i < n; i++)
        if (chosen[i]) fputs(piece(i)->text, f);
    if (code) fputs(code, f);
    return fclose(f);
}

int main(void)
{
    const char *srcdir = getenv("srcdir");
    const char *cc = getenv("CC");
    const char *extra = getenv("TEXC_VMATH_CFLAGS");
    const char *tmp = getenv("TMPDIR");
    if (!srcdir || !*srcdir) srcdir = ".";
    if (!cc || !*cc) cc = "cc";
    if (!extra) extra = "";
    if (!tmp || !*tmp) tmp = "/tmp";

    char dir[4096], hdr[4200], chk[4200], drv[4200], cmd[16384];
    snprintf(dir, sizeof dir, "%s/unit_vmath.XXXXXX", tmp);
    if (!mkdtemp(dir)) { printf("not ok 1 - mkdtemp %s\n1..1\n", dir); return 1; }
    snprintf(hdr, sizeof hdr, "%s/vmath_gen.h", dir);
    snprintf(chk, sizeof chk, "%s/vmath_only.c", dir);
    snprintf(drv, sizeof drv, "%s/driver", dir);
    if (write_pieces(hdr, NULL) || write_pieces(chk, NULL)) {
        printf("not ok 1 - writing %s\n1..1\n", hdr);
        return 1;
    }

    int n = 0, fails = 0;
    /* the text alone, as strict as a user's -Werror build could be */
    snprintf(cmd, sizeof cmd, "%s -std=c11 -O2 -march=native -Wall -Wextra -pedantic -Werror -Wno-unused-function -c -o %s/vmath_only.o '%s'",
             cc, dir, chk);
    int rc = system(cmd);
    printf("%s %d - cg_vmath_helpers compile alone with -std=c11 -Wall -Wextra -pedantic -Werror\n", rc ? "not ok" : "ok", ++n);
    fails += rc != 0;

    /* each function with only the pieces it needs: all there, each after
     * those it uses, none unused (where $CC is clang: gcc does not warn of
     * an unused static inline); with AVX-512 where the machine has it, and
     * the portable code (-Wpsabi: c.c's prelude turns it off) */
    static const char *const fast[] = { "te_vexp_fast", "te_verf_fast", "te_vtanh_fast", "te_vgelu_fast", "te_vsigmoid_fast" };
    for (int i = 0; i < (int)(sizeof fast / sizeof fast[0]); i++) {
        char code[512];
        snprintf(code, sizeof code, "void f(float *p);\n"
                 "void f(float *p) { te_v16f x; memcpy(&x, p, sizeof x); x = %s(x); memcpy(p, &x, sizeof x); }\n", fast[i]);
        static const char *const isa[] = { "-march=native", "-Wno-psabi" };
        rc = write_pieces(chk, code);
        for (int k = 0; k < 2 && !rc; k++) {
            snprintf(cmd, sizeof cmd, "%s -std=c11 -O2 %s -Wall -Wextra -pedantic -Werror -c -o %s/vmath_only.o '%s'",
                     cc, isa[k], dir, chk);
            rc = system(cmd);
        }
        printf("%s %d - %s with only the pieces it uses compiles with -std=c11 -Wall -Wextra -pedantic -Werror\n",
               rc ? "not ok" : "ok", ++n, fast[i]);
        fails += rc != 0;
    }

    snprintf(cmd, sizeof cmd, "%s -std=gnu11 -O3 -march=native %s -D_POSIX_C_SOURCE=200809L -DUNIT_VMATH_DRIVER -include '%s' -o '%s' '%s/tests/unit_vmath.c' -lm",
             cc, extra, hdr, drv, srcdir);
    rc = system(cmd);
    printf("%s %d - driver compiles: %s -std=gnu11 -O3 -march=native %s (as texc compiles kernels)\n", rc ? "not ok" : "ok", ++n, cc, extra);
    fflush(stdout);
    if (rc) { printf("1..%d\n", n); return 1; }

    /* the driver numbers its tests from n + 1 and prints the plan */
    snprintf(cmd, sizeof cmd, "'%s' %d", drv, n);
    FILE *p = popen(cmd, "r");
    char line[1024];
    int plan = 0, last = n;
    while (p && fgets(line, sizeof line, p)) {
        fputs(line, stdout);
        if (!strncmp(line, "1..", 3)) plan = 1;
        else if (!strncmp(line, "ok ", 3)) last = atoi(line + 3);
        else if (!strncmp(line, "not ok ", 7)) last = atoi(line + 7);
    }
    rc = p ? pclose(p) : -1;
    if (!plan) {
        printf("not ok %d - driver exited before finishing (status %d)\n1..%d\n", last + 1, rc, last + 1);
        return 1;
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (rc == 0 && !fails) (void)!system(cmd);
    return rc == 0 && !fails ? 0 : 1;
}

#else /* UNIT_VMATH_DRIVER: compiled by the harness with the generated text */

#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>


typedef te_v16f (*vfn)(te_v16f);
static te_v16f v_exp(te_v16f x) { return te_vexp_fast(x); }
static te_v16f v_erf(te_v16f x) { return te_verf_fast(x); }
static te_v16f v_tanh(te_v16f x) { return te_vtanh_fast(x); }
static te_v16f v_gelu(te_v16f x) { return te_vgelu_fast(x); }
static te_v16f v_sigmoid(te_v16f x) { return te_vsigmoid_fast(x); }
static double r_exp(double x) { return exp(x); }
static double r_erf(double x) { return erf(x); }
static double r_tanh(double x) { return tanh(x); }
/* 0.5*x*(1+erf(x/sqrt2)) without the cancellation for negative x; gelu(-inf)
   is defined as its limit, -0 */
static double r_gelu(double x) { return isinf(x) && x < 0 ? -0.0 : 0.5 * x * erfc(-x * 0.70710678118654752440); }
static double r_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

struct fn {
    const char *name;
    vfn f;
    double (*ref)(double);
    int bound;              /* the most ulp from the correctly rounded float the test allows */
    float dense[8][2];      /* value ranges swept pattern by pattern, both signs */
    /* results */
    long long tested, not_cr, bad_nan, bad_zero;
    long long max_ulp; float max_ulp_x;
    double max_frac; float max_frac_x;
    long long max_ulp_big; float max_ulp_big_x;    /* over |ref| > 1e-30 */
    double max_frac_big;
};

static struct fn fns[] = {
    /* exp: [86.9, 88.1] both signs crosses its float fast path's bounds */
    { "te_vexp_fast", v_exp, r_exp, 1, { { 87.0f, 104.5f }, { 88.5f, 89.5f }, { 86.9f, 88.1f } } },
    { "te_verf_fast", v_erf, r_erf, 1, { { 0.99f, 1.01f }, { 3.8f, 4.0f }, { 5.9f, 6.1f } } },
    { "te_vtanh_fast", v_tanh, r_tanh, 1, { { 0.0615f, 0.0635f }, { 9.9f, 10.1f } } },
    /* gelu: 2 ulp on its float fast path (|x| <= 5.9), 1 on the double one */
    { "te_vgelu_fast", v_gelu, r_gelu, 2, { { 12.0f, 15.5f }, { 1.41f, 1.42f }, { 5.85f, 5.95f }, { 0x1p-149f, 0x1p-140f } } },
    { "te_vsigmoid_fast", v_sigmoid, r_sigmoid, 1, { { 86.0f, 104.5f }, { 16.0f, 18.0f } } },
};
#define NFN (int)(sizeof fns / sizeof fns[0])

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
/* monotonic integer image of a float (both zeros map to 0) */
static long long key(float f)
{
    uint32_t u = fbits(f);
    return u & 0x80000000u ? -(long long)(u & 0x7fffffffu) : (long long)u;
}
static double ulp_of(float f)
{
    f = fabsf(f);
    if (f < FLT_MIN) return ldexp(1.0, -149);
    int e;
    frexp(f, &e);
    return ldexp(1.0, e - 24);
}

static void check16(struct fn *F, const uint32_t *bits)
{
    float xs[16], ys[16];
    te_v16f x, y;
    memcpy(xs, bits, sizeof xs);
    memcpy(&x, xs, sizeof x);
    y = F->f(x);
    memcpy(ys, &y, sizeof ys);
    for (int l = 0; l < 16; l++) {
        double rd = F->ref(xs[l]);
        float rf = (float)rd, g = ys[l];
        F->tested++;
        if (isnan(rf) || isnan(g)) {
            if (!(isnan(rf) && isnan(g))) {
                if (F->bad_nan++ < 5)
                    printf("# %s(%a): got %a, want %a\n", F->name, xs[l], g, rf);
            }
            continue;
        }
        if (rf == 0 && g == 0 && signbit(rf) != signbit(g)) {
            if (F->bad_zero++ < 5)
                printf("# %s(%a): got %a, want %a\n", F->name, xs[l], g, rf);
        }
        long long d = llabs(key(g) - key(rf));
        double fr = isinf(rf) || isinf(g) ? (d ? INFINITY : 0) : fabs((double)g - rd) / ulp_of(rf);
        if (d) F->not_cr++;
        if (d > F->max_ulp) { F->max_ulp = d; F->max_ulp_x = xs[l]; }
        if (fr > F->max_frac) { F->max_frac = fr; F->max_frac_x = xs[l]; }
        if (fabs(rd) > 1e-30) {
            if (d > F->max_ulp_big) { F->max_ulp_big = d; F->max_ulp_big_x = xs[l]; }
            if (fr > F->max_frac_big) F->max_frac_big = fr;
        }
    }
}

/* all patterns in [lo, hi) fed through check16, 16 at a time */
static void sweep(struct fn *F, uint64_t lo, uint64_t hi, uint64_t stride)
{
    uint32_t buf[16];
    int k = 0;
    for (uint64_t u = lo; u < hi; u += stride) {
        buf[k++] = (uint32_t)u;
        if (k == 16) { check16(F, buf); k = 0; }
    }
    if (k) {
        for (int i = k; i < 16; i++) buf[i] = buf[0];
        check16(F, buf);
        F->tested -= 16 - k;
    }
}

static const float specials[] = {
    0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1.0f, -1.0f, 0.5f, -0.5f, 2.0f, -2.0f,
    FLT_MIN, -FLT_MIN, FLT_MAX, -FLT_MAX, FLT_TRUE_MIN, -FLT_TRUE_MIN, 1e-30f, -1e-30f,
    88.72283f, 88.72284f, -87.33654f, -87.33655f, -103.97208f, -103.97209f, -104.0f, 89.0f,
    0.0625f, -0.0625f, 10.0f, -10.0f, 4.0f, -4.0f, 6.0f, -6.0f, 15.0f, -15.0f, 1.4142135f, -1.4142135f,
    -0x1p-149f, -0x1p-148f, -0x1.8p-148f, 0x1p-149f, 5.9f, -5.9f, 0.375f, -0.375f,
};

static int exact_specials(void)
{
    struct { vfn f; const char *name; float x, want; } t[] = {
        { v_exp, "exp", INFINITY, INFINITY }, { v_exp, "exp", -INFINITY, 0.0f },
        { v_exp, "exp", 89.0f, INFINITY }, { v_exp, "exp", -0.0f, 1.0f }, { v_exp, "exp", 0.0f, 1.0f },
        { v_exp, "exp", -104.0f, 0.0f },
        { v_erf, "erf", INFINITY, 1.0f }, { v_erf, "erf", -INFINITY, -1.0f }, { v_erf, "erf", -0.0f, -0.0f },
        { v_erf, "erf", 0.0f, 0.0f }, { v_erf, "erf", 5.0f, 1.0f }, { v_erf, "erf", -FLT_TRUE_MIN, -FLT_TRUE_MIN },
        { v_tanh, "tanh", INFINITY, 1.0f }, { v_tanh, "tanh", -INFINITY, -1.0f }, { v_tanh, "tanh", -0.0f, -0.0f },
        { v_tanh, "tanh", 0.0f, 0.0f }, { v_tanh, "tanh", -FLT_TRUE_MIN, -FLT_TRUE_MIN },
        { v_gelu, "gelu", INFINITY, INFINITY }, { v_gelu, "gelu", -INFINITY, -0.0f }, { v_gelu, "gelu", -0.0f, -0.0f },
        { v_gelu, "gelu", 0.0f, 0.0f }, { v_gelu, "gelu", -100.0f, -0.0f },
        { v_sigmoid, "sigmoid", INFINITY, 1.0f }, { v_sigmoid, "sigmoid", -INFINITY, 0.0f },
        { v_sigmoid, "sigmoid", 0.0f, 0.5f }, { v_sigmoid, "sigmoid", -0.0f, 0.5f },
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        float y = t[i].f(te_splat(t[i].x))[3];
        if (fbits(y) != fbits(t[i].want)) {
            printf("# %s(%a) = %a, want %a\n", t[i].name, t[i].x, y, t[i].want);
            bad++;
        }
    }
    vfn all[] = { v_exp, v_erf, v_tanh, v_gelu, v_sigmoid };
    for (int i = 0; i < 5; i++) {
        float y = all[i](te_splat(NAN))[7], z = all[i](te_splat(-NAN))[0];
        if (!isnan(y) || !isnan(z)) { printf("# function %d: NaN in, %a/%a out\n", i, y, z); bad++; }
    }
    return bad;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 0, fails = 0;
    const char *s = getenv("TEXC_VMATH_STRIDE");
    uint64_t stride = s && *s ? strtoull(s, 0, 10) : 97;
    if (stride < 1) stride = 1;
    double t0 = now();

    const char *only = getenv("TEXC_VMATH_ONLY");
    for (int i = 0; i < NFN; i++) {
        struct fn *F = &fns[i];
        if (only && *only && !strstr(F->name, only)) {
            printf("ok %d - %s # SKIP not in TEXC_VMATH_ONLY=%s\n", ++n, F->name, only);
            continue;
        }
        double t1 = now();
        sweep(F, 0, 1ull << 32, stride);
        for (int r = 0; r < 8 && F->dense[r][1] > 0; r++)
            for (int sign = 0; sign < 2; sign++) {
                uint64_t a = fbits(F->dense[r][0]), b = fbits(F->dense[r][1]);
                sweep(F, a | (sign ? 0x80000000u : 0), (b | (sign ? 0x80000000u : 0)) + 1, 1);
            }
        uint32_t sp[16];
        int nsp = sizeof specials / sizeof specials[0];
        for (int k = 0; k < nsp; k += 16) {
            for (int l = 0; l < 16; l++) sp[l] = fbits(specials[(k + l) % nsp]);
            check16(F, sp);
        }
        int ok = F->max_ulp <= F->bound && !F->bad_nan && !F->bad_zero;
        fails += !ok;
        printf("%s %d - %s within %d ulp of the correctly rounded result, NaN and signed zeros right (%lld inputs)\n",
               ok ? "ok" : "not ok", ++n, F->name, F->bound, F->tested);
        printf("#   %s: max %lld ulp vs correctly rounded (at %a), max %.4f ulp vs exact (at %a), "
               "%.2g%% not correctly rounded; over |result| > 1e-30: %lld ulp (at %a), %.4f ulp; %.1f s\n",
               F->name, F->max_ulp, F->max_ulp_x, F->max_frac, F->max_frac_x,
               100.0 * F->not_cr / F->tested, F->max_ulp_big, F->max_ulp_big_x, F->max_frac_big, now() - t1);
        fflush(stdout);
    }

    int bad = exact_specials();
    fails += bad != 0;
    printf("%s %d - exact special values (inf, -inf, NaN, -0, overflow, underflow)\n", bad ? "not ok" : "ok", ++n);

    /* throughput, for information */
    enum { N = 4096 };
    static float in[N], out[N];
    for (int i = 0; i < N; i++) in[i] = (float)(i - N / 2) * (8.0f / N);
    for (int i = 0; i < NFN; i++) {
        double best = INFINITY;     /* the best of 10 runs of 4096 elements */
        for (int rep = 0; rep < 10; rep++) {
            double t1 = now();
            for (int j = 0; j < N; j += 16) {
                te_v16f v;
                memcpy(&v, in + j, sizeof v);
                v = fns[i].f(v);
                memcpy(out + j, &v, sizeof v);
            }
            if (now() - t1 < best) best = now() - t1;
        }
        printf("#   %s: %.2f ns per element (through a function pointer)\n", fns[i].name, best * 1e9 / N);
    }
    printf("# stride %llu over all 2^32 patterns plus dense ranges; %.1f s in all\n",
           (unsigned long long)stride, now() - t0);
    printf("1..%d\n", n);
    return fails ? 1 : 0;
}

#endif
