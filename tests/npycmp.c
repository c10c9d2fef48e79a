/* npycmp.c — compares a kernel's output with the reference evaluator's.
 *
 *     npycmp [-s SCALE] REF.npy GOT.npy
 *
 * Both files are NumPy .npy arrays (format 1.0, 2.0 or 3.0, C order) with
 * one of the descrs texc writes: '<f8', '<f4', '<f2', '<i4', '|u1', '|i1', '|b1', and
 * '<u2', which texc's harness uses for bf16 (NumPy has none; the
 * reference writes bf16 as '<f4' holding bf16-rounded values, so REF and
 * GOT may differ in descr).  The shapes must be equal.  Every element must
 * satisfy
 *
 *     |got - ref| <= atol + rtol * |ref|
 *
 * with the tolerance of GOT's dtype (GOT is what was computed in that
 * precision; the reference is computed in double):
 *
 *     dtype   rtol    atol    why
 *     f64     1e-9    1e-9    reassociated sums of a few thousand terms
 *     f32     1e-4    1e-4    ~1000 f32 ulps: reassociated reductions of
 *                             the test sizes (a few hundred terms)
 *     f16     1e-2    1e-2    ~20 f16 ulps (f16 values are computed in
 *                             float and rounded when stored)
 *     bf16    5e-2    5e-2    ~20 bf16 ulps, as for f16
 *     i32     0       0       exact
 *     u8, i8  0       0       exact
 *     bool    0       0       exact
 *
 * The absolute term keeps results that cancel to nearly zero from failing
 * on noise; it cannot grow with the reduction's length here, since the
 * files do not say how long the reduction was, so the test sizes are kept
 * small enough for these values.  NaN in GOT passes only where REF is NaN
 * (the harness poisons outputs with NaN, so a forgotten element fails);
 * an infinity matches only the same infinity.
 *
 * Prints one line: the number of elements, the number of mismatches and
 * the worst element (its index, ref, got): the one with the largest error
 * relative to its tolerance.  -s SCALE (>= 1, or 0) multiplies the float
 * tolerances: for a deep program (a transformer block's six matmuls, two
 * layer norms and a softmax), whose f32 rounding compounds; -s 0 asks
 * for the same values exactly (tests/conversions.sh: a conversion has one
 * right answer).
 * Exit status: 0 all match, 1 a mismatch (values or shapes), 2 a usage
 * error or a file that cannot be read.  Standalone: no part of texc is
 * linked, so a bug in texc's own .npy code cannot hide itself.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_RANK = 32, MAX_HEADER = 1 << 20 };

/* One array, its values converted to double. */
typedef struct Npy {
    const char *path;
    char descr[8];   /* as in the header, e.g. "<f4" */
    int rank;
    int64_t shape[MAX_RANK];
    int64_t n;       /* elements */
    double *data;
} Npy;

/* What each descr holds and how exactly it must match. */
typedef struct DtypeInfo {
    const char *descr;
    const char *name;
    int size;        /* bytes per element */
    double rtol, atol;
} DtypeInfo;

static const DtypeInfo dtypes[] = {
    { "<f8", "f64", 8, 1e-9, 1e-9 },
    { "<f4", "f32", 4, 1e-4, 1e-4 },
    { "<f2", "f16", 2, 1e-2, 1e-2 },
    { "<u2", "bf16", 2, 5e-2, 5e-2 },
    { "<i4", "i32", 4, 0, 0 },
    { "|b1", "bool", 1, 0, 0 },
    { "|u1", "u8", 1, 0, 0 },
    { "|i1", "i8", 1, 0, 0 },
};

static _Noreturn void fail(const char *path, const char *msg)
{
    fprintf(stderr, "npycmp: %s: %s\n", path, msg);
    exit(2);
}

static const DtypeInfo *dtype_of(const char *descr)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcmp(dtypes[i].descr, descr) == 0)
            return &dtypes[i];
    return NULL;
}

/* The value of KEY in the header dict: a pointer just past "'KEY':" and
 * its spaces, or NULL. */
static const char *dict_value(const char *header, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = header; (p = strpbrk(p, "'\"")) != NULL; p++) {
        if (strncmp(p + 1, key, n) == 0 && p[1 + n] == p[0]) {
            const char *v = p + 2 + n;
            while (*v == ' ')
                v++;
            if (*v != ':')
                continue;
            v++;
            while (*v == ' ')
                v++;
            return v;
        }
    }
    return NULL;
}

static void parse_header(Npy *a, const char *header)
{
    const char *v = dict_value(header, "descr");
    if (!v || (*v != '\'' && *v != '"'))
        fail(a->path, "the header has no 'descr'");
    const char *end = strchr(v + 1, *v);
    if (!end || end - v - 1 >= (long)sizeof a->descr)
        fail(a->path, "bad 'descr'");
    memcpy(a->descr, v + 1, (size_t)(end - v - 1));
    a->descr[end - v - 1] = '\0';
    v = dict_value(header, "fortran_order");
    if (!v || strncmp(v, "False", 5) != 0)
        fail(a->path, "not in C order ('fortran_order' is not False)");
    v = dict_value(header, "shape");
    if (!v || *v != '(')
        fail(a->path, "the header has no 'shape'");
    v++;
    a->rank = 0;
    a->n = 1;
    for (;;) {
        while (*v == ' ' || *v == ',')
            v++;
        if (*v == ')')
            break;
        char *after;
        long long d = strtoll(v, &after, 10);
        if (after == v || d < 0 || a->rank == MAX_RANK)
            fail(a->path, "bad 'shape'");
        if (__builtin_mul_overflow(a->n, (int64_t)d, &a->n))
            fail(a->path, "the shape's size overflows");
        a->shape[a->rank++] = d;
        v = after;
    }
}

static double half_to_double(uint16_t h)
{
    int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (exp == 0x1f)
        return mant ? NAN : sign * INFINITY;
    if (exp == 0)
        return sign * ldexp(mant, -24);
    return sign * ldexp(mant + 1024, exp - 25);
}

static double decode(const DtypeInfo *t, const unsigned char *p)
{
    uint64_t u = 0;
    for (int i = 0; i < t->size; i++)
        u |= (uint64_t)p[i] << (8 * i);
    switch (t->descr[1]) {
    case 'b':
        return p[0] != 0;
    case 'i':
        return t->size == 1 ? (int8_t)(uint8_t)u : (int32_t)(uint32_t)u;
    case 'u': { /* u8, or bf16: the high half of an f32 */
        if (t->size == 1)
            return (double)u;
        uint32_t bits = (uint32_t)u << 16;
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    default:
        break;
    }
    if (t->size == 2)
        return half_to_double((uint16_t)u);
    if (t->size == 4) {
        uint32_t bits = (uint32_t)u;
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static void read_npy(Npy *a, const char *path)
{
    a->path = path;
    FILE *f = fopen(path, "rb");
    if (!f)
        fail(path, "cannot open");
    unsigned char pre[12];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0)
        fail(path, "not a .npy file");
    size_t hlen = pre[8] | (size_t)pre[9] << 8;
    if (pre[6] == 2 || pre[6] == 3) {
        if (fread(pre + 10, 1, 2, f) != 2)
            fail(path, "truncated header");
        hlen |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    } else if (pre[6] != 1) {
        fail(path, "unknown .npy version");
    }
    if (hlen > MAX_HEADER)
        fail(path, "header too long");
    char *header = malloc(hlen + 1);
    if (!header || fread(header, 1, hlen, f) != hlen)
        fail(path, "truncated header");
    header[hlen] = '\0';
    parse_header(a, header);
    free(header);
    const DtypeInfo *t = dtype_of(a->descr);
    if (!t)
        fail(path, "unsupported descr (want <f8 <f4 <f2 <u2 <i4 |u1 |i1 |b1)");
    size_t bytes = (size_t)a->n * (size_t)t->size;
    unsigned char *raw = malloc(bytes + 1);
    a->data = malloc(sizeof *a->data * (size_t)(a->n + 1));
    if (!raw || !a->data)
        fail(path, "out of memory");
    if (fread(raw, 1, bytes, f) != bytes)
        fail(path, "shorter than its shape says");
    if (fgetc(f) != EOF)
        fail(path, "longer than its shape says");
    fclose(f);
    for (int64_t i = 0; i < a->n; i++)
        a->data[i] = decode(t, raw + (size_t)i * (size_t)t->size);
    free(raw);
}

static void print_shape(const Npy *a)
{
    putchar('(');
    for (int d = 0; d < a->rank; d++)
        printf("%s%lld", d ? ", " : "", (long long)a->shape[d]);
    printf("%s)", a->rank == 1 ? "," : "");
}

static void print_index(const Npy *a, int64_t flat)
{
    int64_t idx[MAX_RANK];
    for (int d = a->rank - 1; d >= 0; d--) {
        idx[d] = a->shape[d] ? flat % a->shape[d] : 0;
        flat = a->shape[d] ? flat / a->shape[d] : 0;
    }
    putchar('[');
    for (int d = 0; d < a->rank; d++)
        printf("%s%lld", d ? ", " : "", (long long)idx[d]);
    putchar(']');
}

/* How far beyond its tolerance GOT is: <= 1 passes.  An error where the
 * tolerance is 0 (exact types) counts as infinitely far. */
static double excess(double ref, double got, double rtol, double atol)
{
    if (isnan(ref) || isnan(got))
        return isnan(ref) && isnan(got) ? 0 : INFINITY;
    if (isinf(ref) || isinf(got))
        return ref == got ? 0 : INFINITY;
    double err = fabs(got - ref), tol = atol + rtol * fabs(ref);
    if (err == 0)
        return 0;
    return tol == 0 ? INFINITY : err / tol;
}

int main(int argc, char **argv)
{
    double scale = 1;
    if (argc == 5 && strcmp(argv[1], "-s") == 0) {
        scale = atof(argv[2]);
        argv += 2;
        argc -= 2;
    }
    if (argc != 3 || !(scale >= 1 || scale == 0)) {
        fprintf(stderr, "usage: npycmp [-s SCALE] REF.npy GOT.npy\n");
        return 2;
    }
    Npy ref, got;
    read_npy(&ref, argv[1]);
    read_npy(&got, argv[2]);
    bool same_shape = ref.rank == got.rank;
    for (int d = 0; same_shape && d < ref.rank; d++)
        same_shape = ref.shape[d] == got.shape[d];
    if (!same_shape) {
        printf("npycmp: shapes differ: %s is ", argv[1]);
        print_shape(&ref);
        printf(", %s is ", argv[2]);
        print_shape(&got);
        putchar('\n');
        free(ref.data);
        free(got.data);
        return 1;
    }
    const DtypeInfo *dt = dtype_of(got.descr);
    DtypeInfo scaled = *dt;
    scaled.rtol *= scale;
    scaled.atol *= scale;
    const DtypeInfo *t = &scaled;
    int64_t worst = -1, bad = 0;
    double worst_excess = -1, worst_err = -1;
    for (int64_t i = 0; i < ref.n; i++) {
        double x = excess(ref.data[i], got.data[i], t->rtol, t->atol);
        double err = fabs(got.data[i] - ref.data[i]);
        if (x > 1)
            bad++;
        if (x > worst_excess || (x == worst_excess && err > worst_err)) {
            worst = i;
            worst_excess = x;
            worst_err = err;
        }
    }
    printf("npycmp: %s (%s, rtol %g, atol %g): %lld of %lld elements differ",
           argv[2], t->name, t->rtol, t->atol, (long long)bad, (long long)ref.n);
    if (worst >= 0) {
        printf("; worst at ");
        print_index(&ref, worst);
        printf(": ref %.9g, got %.9g", ref.data[worst], got.data[worst]);
    }
    putchar('\n');
    free(ref.data);
    free(got.data);
    return bad ? 1 : 0;
}
