/* rtdims_run.c — one kernel with run-time dims, run at many sizes in one
 * process and compared with the reference evaluator at each.
 *
 *     rtdims_run KERNEL.so NAME FILE.te [-t SCALE] [-D DIM=V]... DIM=SIZES...
 *
 * KERNEL.so is texc's C for FILE.te (built with the same -D), compiled as
 * a shared object; NAME its entry point.  Each DIM=SIZES names a declared
 * run-time dim and the sizes to run it at ("1-300,511,4096"); every
 * combination of them runs (a dim not named stays at its hint).  At each:
 * seeded random inputs, the outputs poisoned (NaN, or 0x7f bytes), the
 * kernel through NAME_prepack_args and NAME_packed_args, and every output
 * element compared with te_eval_at's (the program as written: the
 * reference) within npycmp's tolerance of its dtype (f32: rtol 1e-4, atol
 * 1e-4; i32 and bool exact), the float ones times SCALE with -t (a deep
 * program, whose f32 rounding compounds over several reductions).  Then, for each named dim, the sizes 0, -1
 * and its maximum + 1 (the others at their minimum): the kernel must
 * return NAME_ERANGE (-1) and leave the poisoned outputs as they were.
 *
 * TAP: one line per size (a failure says the worst element) and one per
 * out-of-range size.  The build's sanitizer flags compile KERNEL.so too
 * (tests/rtdims.sh), so under ASan and UBSan every access the kernel
 * makes at every size is checked.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "tests/tap.h"

typedef size_t (*bytes_fn)(void);
typedef void (*prepack_fn)(void *const *args, void *packed);
typedef int (*run_fn)(const int64_t *dims, void *const *args, const void *packed);

typedef struct Kernel {
    bytes_fn prepacked_bytes;
    prepack_fn prepack_args;
    run_fn packed_args;
} Kernel;

typedef struct Sizes {
    int dim;         /* its index in Graph.dims */
    int64_t *values;
    int n;
} Sizes;

static void *must(void *p)
{
    if (!p) {
        fputs("rtdims_run: out of memory\n", stderr);
        exit(2);
    }
    return p;
}

static _Noreturn void usage(const char *why)
{
    fprintf(stderr, "rtdims_run: %s\nusage: rtdims_run KERNEL.so NAME FILE.te [-t SCALE] [-D DIM=V]... DIM=SIZES...\n",
            why);
    exit(2);
}

/* "1-300,511" into S->values */
static void parse_sizes(const char *text, Sizes *s)
{
    int cap = 16;
    s->values = must(malloc(sizeof *s->values * (size_t)cap));
    for (const char *p = text; *p;) {
        char *end;
        long long lo = strtoll(p, &end, 10), hi = lo;
        if (end == p)
            usage("bad sizes");
        if (*end == '-') {
            p = end + 1;
            hi = strtoll(p, &end, 10);
            if (end == p || hi < lo)
                usage("bad size range");
        }
        for (long long v = lo; v <= hi; v++) {
            if (s->n == cap)
                s->values = must(realloc(s->values, sizeof *s->values * (size_t)(cap *= 2)));
            s->values[s->n++] = v;
        }
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            usage("bad sizes");
    }
}

/* The element size the kernel stores DT in. */
static size_t elem_bytes(DType dt)
{
    return (size_t)dtype_bytes(dt);
}

static void store(DType dt, void *buf, int64_t i, double v)
{
    switch (dt) {
    case DT_F32: ((float *)buf)[i] = (float)v; break;
    case DT_F64: ((double *)buf)[i] = v; break;
    case DT_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case DT_BOOL: ((unsigned char *)buf)[i] = v != 0; break;
    default: usage("only f32, f64, i32 and bool tensors are supported");
    }
}

static double load(DType dt, const void *buf, int64_t i)
{
    switch (dt) {
    case DT_F32: return ((const float *)buf)[i];
    case DT_F64: return ((const double *)buf)[i];
    case DT_I32: return ((const int32_t *)buf)[i];
    case DT_BOOL: return ((const unsigned char *)buf)[i];
    default: usage("only f32, f64, i32 and bool tensors are supported");
    }
}

static void poison(DType dt, void *buf, int64_t n)
{
    if (dt == DT_F32 || dt == DT_F64)
        for (int64_t i = 0; i < n; i++)
            store(dt, buf, i, NAN);
    else
        memset(buf, 0x7f, (size_t)n * elem_bytes(dt));
}

static double scale = 1; /* -t */

static void tolerance(DType dt, double *rtol, double *atol)
{
    *rtol = *atol = scale * (dt == DT_F32 ? 1e-4 : dt == DT_F64 ? 1e-9 : 0);
}

/* Runs the kernel at DIMS (one per g->dims) and compares; the TAP line. */
static void run_at(const Graph *g, const Kernel *k, const char *label, const int64_t *dims,
                   const int64_t *rt, uint64_t seed)
{
    int nin = g->ninputs, nout = g->noutputs;
    double **ref_in = must(calloc((size_t)nin + 1, sizeof *ref_in));
    double **ref_out = must(calloc((size_t)nout + 1, sizeof *ref_out));
    void **args = must(calloc((size_t)(nin + nout) + 1, sizeof *args));
    for (int i = 0; i < nin; i++) {
        const Tensor *t = g->inputs[i];
        int64_t n = te_elems_at(t, dims);
        ref_in[i] = must(malloc(sizeof(double) * (size_t)(n + 1)));
        Tensor at = te_tensor_at(t, dims); /* the evaluator's inputs, at these sizes */
        te_random_input(&at, seed, ref_in[i]);
        args[i] = must(aligned_alloc(64, ((size_t)n * elem_bytes(t->dtype) + 64) / 64 * 64));
        for (int64_t e = 0; e < n; e++)
            store(t->dtype, args[i], e, ref_in[i][e]);
    }
    for (int o = 0; o < nout; o++) {
        const Tensor *t = g->outputs[o];
        int64_t n = te_elems_at(t, dims);
        args[nin + o] = must(aligned_alloc(64, ((size_t)n * elem_bytes(t->dtype) + 64) / 64 * 64));
        poison(t->dtype, args[nin + o], n);
    }
    void *packed = must(aligned_alloc(64, (k->prepacked_bytes() + 63) / 64 * 64 + 64));
    k->prepack_args(args, packed);
    int rc = k->packed_args(rt, args, packed);
    if (rc != 0) {
        check(false, "%s: the kernel returned %d", label, rc);
    } else if (te_eval_at(g, dims, ref_in, ref_out) != 0) {
        check(false, "%s: the reference failed", label);
    } else {
        int64_t bad = 0, total = 0, worst_at = -1;
        double worst = 0, worst_ref = 0, worst_got = 0;
        const char *worst_name = "";
        for (int o = 0; o < nout; o++) {
            const Tensor *t = g->outputs[o];
            double rtol, atol;
            tolerance(t->dtype, &rtol, &atol);
            int64_t n = te_elems_at(t, dims);
            for (int64_t e = 0; e < n; e++) {
                double ref = ref_out[o][e], got = load(t->dtype, args[nin + o], e);
                double err = isnan(ref) ? (isnan(got) ? 0 : INFINITY)
                             : isinf(ref) ? (got == ref ? 0 : INFINITY)
                                          : fabs(got - ref) / (atol + rtol * fabs(ref));
                if (!(err <= 1) && !(atol == 0 && got == ref))
                    bad++;
                if (isnan(err) || err > worst) {
                    worst = isnan(err) ? INFINITY : err;
                    worst_at = e;
                    worst_ref = ref;
                    worst_got = got;
                    worst_name = t->name;
                }
            }
            total += n;
        }
        check(bad == 0, "%s: %lld elements match the reference%s", label, (long long)total,
              bad ? "" : "");
        if (bad)
            fprintf(stderr, "#   %lld differ; worst %s[%lld]: ref %.9g, got %.9g\n", (long long)bad,
                    worst_name, (long long)worst_at, worst_ref, worst_got);
    }
    for (int i = 0; i < nin + nout; i++)
        free(args[i]);
    for (int i = 0; i < nin; i++)
        free(ref_in[i]);
    for (int o = 0; o < nout; o++)
        free(ref_out[o]);
    free(args);
    free(ref_in);
    free(ref_out);
    free(packed);
}

/* The kernel at an out-of-range size RT (the buffers are those of MIN, the
 * sizes at their minimum): NAME_ERANGE, the outputs untouched. */
static void run_out_of_range(const Graph *g, const Kernel *k, const char *label, const int64_t *min,
                             const int64_t *rt)
{
    int nin = g->ninputs, nout = g->noutputs;
    void **args = must(calloc((size_t)(nin + nout) + 1, sizeof *args));
    void **copy = must(calloc((size_t)nout + 1, sizeof *copy));
    size_t *bytes = must(calloc((size_t)nout + 1, sizeof *bytes));
    for (int i = 0; i < nin + nout; i++) {
        const Tensor *t = i < nin ? g->inputs[i] : g->outputs[i - nin];
        int64_t n = te_elems_at(t, min);
        size_t b = (size_t)n * elem_bytes(t->dtype);
        args[i] = must(aligned_alloc(64, (b + 64) / 64 * 64));
        if (i < nin) {
            memset(args[i], 0, b);
            continue;
        }
        poison(t->dtype, args[i], n);
        bytes[i - nin] = b;
        copy[i - nin] = must(malloc(b + 1));
        memcpy(copy[i - nin], args[i], b);
    }
    void *packed = must(aligned_alloc(64, (k->prepacked_bytes() + 63) / 64 * 64 + 64));
    k->prepack_args(args, packed);
    int rc = k->packed_args(rt, args, packed);
    bool untouched = true;
    for (int o = 0; o < nout; o++)
        untouched = untouched && memcmp(copy[o], args[nin + o], bytes[o]) == 0;
    check(rc == -1 && untouched, "%s: NAME_ERANGE, the outputs untouched (returned %d%s)", label, rc,
          untouched ? "" : ", an output was written");
    for (int i = 0; i < nin + nout; i++)
        free(args[i]);
    for (int o = 0; o < nout; o++)
        free(copy[o]);
    free(args);
    free(copy);
    free(bytes);
    free(packed);
}

int main(int argc, char **argv)
{
    if (argc < 5)
        usage("too few arguments");
    void *so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!so) {
        fprintf(stderr, "rtdims_run: %s\n", dlerror());
        return 2;
    }
    const char *name = argv[2];
    Kernel k;
    char sym[256];
    snprintf(sym, sizeof sym, "%s_prepacked_bytes", name);
    *(void **)&k.prepacked_bytes = dlsym(so, sym);
    snprintf(sym, sizeof sym, "%s_prepack_args", name);
    *(void **)&k.prepack_args = dlsym(so, sym);
    snprintf(sym, sizeof sym, "%s_packed_args", name);
    *(void **)&k.packed_args = dlsym(so, sym);
    if (!k.prepacked_bytes || !k.prepack_args || !k.packed_args)
        usage("the kernel lacks NAME_prepacked_bytes, NAME_prepack_args or NAME_packed_args");

    Arena a = { 0 };
    Source src;
    if (!src_load(&a, &src, argv[3]))
        return 2;
    DimOverride *defs = must(calloc((size_t)argc, sizeof *defs));
    int ndefs = 0, first_size = 4;
    if (first_size + 1 < argc && strcmp(argv[first_size], "-t") == 0) {
        scale = strtod(argv[first_size + 1], NULL);
        if (!(scale >= 1))
            usage("-t wants a scale >= 1");
        first_size += 2;
    }
    while (first_size + 1 < argc && strcmp(argv[first_size], "-D") == 0) {
        char *eq = strchr(argv[first_size + 1], '=');
        if (!eq)
            usage("-D wants DIM=V");
        *eq = 0;
        defs[ndefs++] = (DimOverride){ argv[first_size + 1], strtoll(eq + 1, NULL, 10), false };
        first_size += 2;
    }
    Parser p = { .arena = &a, .src = &src };
    Program prog = { 0 };
    if (!fe_parse(&p, &prog))
        return 2;
    Graph *g = fe_sema(&a, &src, &prog, defs, ndefs);
    if (!g)
        return 2;
    /* the declared run-time dims, in order: the kernel's DIMS */
    int nrt = 0;
    int *rt_dim = must(calloc((size_t)g->ndims + 1, sizeof *rt_dim));
    for (int d = 0; d < g->ndims; d++)
        if (g->dims[d].runtime && g->dims[d].declared)
            rt_dim[nrt++] = d;
    if (nrt == 0)
        usage("the program has no run-time dim");
    int nsizes = argc - first_size;
    Sizes *sizes = must(calloc((size_t)nsizes + 1, sizeof *sizes));
    for (int i = 0; i < nsizes; i++) {
        char *arg = argv[first_size + i], *eq = strchr(arg, '=');
        if (!eq)
            usage("sizes: DIM=SIZES");
        *eq = 0;
        sizes[i].dim = -1;
        for (int d = 0; d < g->ndims; d++)
            if (strcmp(g->dims[d].name, arg) == 0 && g->dims[d].runtime && g->dims[d].declared)
                sizes[i].dim = d;
        if (sizes[i].dim < 0)
            usage("sizes: no declared run-time dim of that name");
        parse_sizes(eq + 1, &sizes[i]);
    }

    int64_t *dims = must(calloc((size_t)g->ndims + 1, sizeof *dims));
    int64_t *rt = must(calloc((size_t)nrt + 1, sizeof *rt));
    for (int d = 0; d < g->ndims; d++)
        dims[d] = g->dims[d].hint;
    int *at = must(calloc((size_t)nsizes + 1, sizeof *at));
    for (uint64_t seed = 1;; seed++) {
        char label[512] = "";
        size_t len = 0;
        for (int i = 0; i < nsizes; i++) {
            dims[sizes[i].dim] = sizes[i].values[at[i]];
            len += (size_t)snprintf(label + len, sizeof label - len, "%s%s=%lld", i ? " " : "",
                                    g->dims[sizes[i].dim].name, (long long)dims[sizes[i].dim]);
        }
        for (int i = 0; i < nrt; i++)
            rt[i] = dims[rt_dim[i]];
        run_at(g, &k, label, dims, rt, seed);
        int i = 0;
        while (i < nsizes && ++at[i] == sizes[i].n)
            at[i++] = 0;
        if (i == nsizes)
            break;
    }
    int64_t *min = must(calloc((size_t)g->ndims + 1, sizeof *min));
    for (int d = 0; d < g->ndims; d++)
        min[d] = g->dims[d].lo;
    for (int i = 0; i < nsizes; i++) {
        const Dim *dim = &g->dims[sizes[i].dim];
        const int64_t bad[3] = { 0, -1, dim->hi + 1 };
        for (int b = 0; b < 3; b++) {
            for (int r = 0; r < nrt; r++)
                rt[r] = rt_dim[r] == sizes[i].dim ? bad[b] : min[rt_dim[r]];
            char label[128];
            snprintf(label, sizeof label, "%s=%lld (outside %lld..%lld)", dim->name, (long long)bad[b],
                     (long long)dim->lo, (long long)dim->hi);
            run_out_of_range(g, &k, label, min, rt);
        }
    }
    for (int i = 0; i < nsizes; i++)
        free(sizes[i].values);
    free(sizes);
    free(dims);
    free(rt);
    free(rt_dim);
    free(at);
    free(min);
    free(defs);
    arena_free(&a);
    dlclose(so);
    return tap_done();
}
