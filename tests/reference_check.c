/* reference_check.c — the tuner's compiled reference against the
 * evaluator, on one program.
 *
 *     reference_check [-e] FILE.te [-D DIM=V]... [DIM=SIZE,SIZE...]
 *
 * FILE.te is optimized as texc --tune optimizes it, and both references
 * the tuner can check candidates against are computed on the same seeded
 * random inputs: tune_reference_outputs (tuner/reference.c: the program
 * compiled by the C backend in double, naively) and te_eval_at (the
 * evaluator, the source of truth).  A program with a run-time dim runs at
 * each SIZE of the one named (the other dims at their hints), with one
 * build of the compiled reference for all of them; a static one once.
 *
 * Every float output element must agree within 1e-12 relative (plus
 * 1e-300, so that zeros compare), every i32 and bool one exactly, NaN
 * with NaN; the line each size prints says how many elements were
 * bit-exact and the largest relative difference.  The compiled reference
 * must have computed them, not the evaluator it falls back to, unless -e
 * says the program is one it must refuse (then it must fall back).
 * Exit status 0 when all of that holds, 1 when not, 2 a usage error.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontend/frontend.h"
#include "tuner/tuner.h"

enum { MAX_SIZES = 64 };
static const double rel_tol = 1e-12;

static void *must(void *p)
{
    if (!p) {
        fputs("reference_check: out of memory\n", stderr);
        exit(2);
    }
    return p;
}

static _Noreturn void usage(const char *why)
{
    fprintf(stderr, "reference_check: %s\n"
                    "usage: reference_check [-e] FILE.te [-D DIM=V]... [DIM=SIZE,SIZE...]\n",
            why);
    exit(2);
}

/* Both references at DIMS (NULL: static); prints the line; true if they
 * agree and the expected one computed. */
static bool check_at(Reference *r, Graph *g, const char *dir, const int64_t *dims,
                     const char *label, bool expect_evaluator)
{
    int nin = g->ninputs, nout = g->noutputs;
    double **in = must(calloc((size_t)nin + 1, sizeof *in));
    char **paths = must(calloc((size_t)nin + 1, sizeof *paths));
    double **want = must(calloc((size_t)nout + 1, sizeof *want));
    double **got = must(calloc((size_t)nout + 1, sizeof *got));
    bool ok = true;
    for (int i = 0; i < nin && ok; i++) {
        const Tensor *t = g->inputs[i];
        in[i] = must(malloc(sizeof(double) * (size_t)(tensor_elems(t) + 1)));
        te_random_input(t, 7, in[i]);
        Tensor at = dims ? te_tensor_at(t, dims) : *t;
        if (asprintf(&paths[i], "%s/in%d.npy", dir, i) < 0 || npy_write(paths[i], &at, in[i]) != 0) {
            fprintf(stderr, "reference_check: cannot write %s\n", paths[i]);
            ok = false;
        }
    }
    bool compiled = false;
    if (ok && !tune_reference_outputs(r, g, dims, in, paths, got, &compiled)) {
        printf("%s: the reference failed\n", label);
        ok = false;
    }
    if (ok && te_eval_at(g, dims, in, want) != 0) {
        printf("%s: the evaluator failed\n", label);
        ok = false;
    }
    if (ok) {
        long long elems = 0, exact = 0, bad = 0;
        double worst = 0;
        for (int o = 0; o < nout; o++) {
            const Tensor *t = g->outputs[o];
            int64_t n = te_elems_at(t, dims);
            bool is_float = dtype_is_float(t->dtype);
            for (int64_t e = 0; e < n; e++) {
                double w = want[o][e], v = got[o][e];
                double diff = fabs(v - w);
                bool same = memcmp(&v, &w, sizeof v) == 0 || (isnan(v) && isnan(w)) || v == w;
                double rel = same ? 0 : diff / fmax(fabs(w), 1e-300);
                bool agree = same || (is_float && !isnan(v) && !isnan(w) && diff <= rel_tol * fabs(w) + 1e-300);
                exact += same;
                bad += !agree;
                if (!agree && bad == 1)
                    printf("%s: %s[%lld]: evaluator %.17g, compiled %.17g\n", label, t->name,
                           (long long)e, w, v);
                if (rel > worst || isnan(rel))
                    worst = isnan(rel) ? INFINITY : rel;
            }
            elems += n;
        }
        bool which = compiled != expect_evaluator;
        printf("%s: %d output%s, %lld elements, %lld bit-exact, largest relative difference %.3g, "
               "computed by the %s\n",
               label, nout, nout == 1 ? "" : "s", elems, exact, worst,
               compiled ? "compiled reference" : "evaluator");
        ok = bad == 0 && which;
        if (!which)
            printf("%s: expected the %s\n", label, expect_evaluator ? "evaluator" : "compiled reference");
    }
    for (int i = 0; i < nin; i++) {
        if (paths[i])
            unlink(paths[i]);
        free(paths[i]);
        free(in[i]);
    }
    for (int o = 0; o < nout; o++) {
        free(want[o]);
        free(got[o]);
    }
    free(in);
    free(paths);
    free(want);
    free(got);
    return ok;
}

int main(int argc, char **argv)
{
    int arg = 1;
    bool expect_evaluator = false;
    if (arg < argc && strcmp(argv[arg], "-e") == 0) {
        expect_evaluator = true;
        arg++;
    }
    if (arg >= argc)
        usage("no program");
    const char *path = argv[arg++];
    DimOverride *defs = must(calloc((size_t)argc, sizeof *defs));
    int ndefs = 0;
    while (arg + 1 < argc && strcmp(argv[arg], "-D") == 0) {
        char *eq = strchr(argv[arg + 1], '=');
        if (!eq)
            usage("-D wants DIM=V");
        *eq = 0;
        defs[ndefs++] = (DimOverride){ argv[arg + 1], strtoll(eq + 1, NULL, 10), false };
        arg += 2;
    }
    const char *size_dim = NULL, *size_list = NULL;
    if (arg < argc) {
        char *eq = strchr(argv[arg], '=');
        if (!eq || arg + 1 != argc)
            usage("sizes: one DIM=SIZE,SIZE...");
        *eq = 0;
        size_dim = argv[arg];
        size_list = eq + 1;
    }

    Arena a = { 0 };
    Source src;
    if (!src_load(&a, &src, path))
        return 2;
    Parser p = { .arena = &a, .src = &src };
    Program prog = { 0 };
    if (!fe_parse(&p, &prog))
        return 2;
    Graph *g = fe_sema(&a, &src, &prog, defs, ndefs);
    if (!g)
        return 2;
    /* the graph texc --tune tunes: optimized, layouts on (the driver's) */
    OptOptions opt = { 0 };
    OptStats stats = { 0 };
    if (!te_optimize(&a, g, &opt, &stats))
        return 2;
    g->layouts = true;

    const char *tmp = getenv("TMPDIR");
    char *dirp = NULL;
    if (asprintf(&dirp, "%s/texc-refcheck.XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0 || !mkdtemp(dirp))
        usage("cannot create a directory");
    TuneOptions to = { .source_path = path, .verbose = true };
    Reference r;
    tune_reference_init(&r, &to);

    bool ok = true;
    if (!size_dim) {
        if (!te_require_static_dims(g, "reference_check without sizes"))
            return 2;
        ok = check_at(&r, g, dirp, NULL, "static", expect_evaluator);
    } else {
        int dim = -1;
        for (int d = 0; d < g->ndims; d++)
            if (strcmp(g->dims[d].name, size_dim) == 0 && g->dims[d].runtime && g->dims[d].declared)
                dim = d;
        if (dim < 0)
            usage("sizes: no declared run-time dim of that name");
        int64_t *dims = must(calloc((size_t)g->ndims + 1, sizeof *dims));
        for (int d = 0; d < g->ndims; d++)
            dims[d] = g->dims[d].hint;
        for (const char *s = size_list; *s;) {
            char *end;
            dims[dim] = strtoll(s, &end, 10);
            if (end == s)
                usage("bad size");
            char label[128];
            snprintf(label, sizeof label, "%s=%lld", size_dim, (long long)dims[dim]);
            ok = check_at(&r, g, dirp, dims, label, expect_evaluator) && ok;
            s = *end == ',' ? end + 1 : end;
        }
        free(dims);
    }
    tune_reference_free(&r);
    rmdir(dirp);
    free(dirp);
    free(defs);
    arena_free(&a);
    return ok ? 0 : 1;
}
